{#- True when dbt only compiles the project (`dbt compile`, `dbt docs generate`, `dbt show`,
    `dbt list`): it then renders the on-run-start hooks too, on its threads beside the nodes,
    so a hook's statements or a compile-time write would run while other nodes compile against
    the tables they replace. The macros with such side effects do nothing then. -#}
{% macro only_compiling() %}
    {{ return(flags.WHICH in ('compile', 'generate', 'show', 'list', 'ls', 'parse')) }}
{% endmacro %}
