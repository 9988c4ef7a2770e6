{#- The rows of `relation` that belong to lifecycles in this run's refresh scope. Models pass
    both relations through ref(), so dbt still sees the dependencies. -#}
{% macro rows_in_refresh_scope(relation, scope) -%}
    select in_scope.*
    from {{ relation }} as in_scope
    left semi join {{ scope }} as scope
        on
            in_scope.consumer_group = scope.consumer_group
            and in_scope.msg_id = scope.msg_id
{%- endmacro %}
