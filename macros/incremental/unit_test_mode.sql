{#- dbt unit tests compile a model with its inputs replaced by CTEs of fixture rows, in the
    context of the unit test node, so `model.resource_type` is 'unit_test' there (dbt's
    UnitTestContext). The macros that query the warehouse while compiling (the refresh scope,
    the lookback bounds) ask this and fall back to plain SQL over the fixtures: a unit test
    reads only its fixtures, never the warehouse. -#}
{% macro in_unit_test() %}
    {{ return(model is mapping and model.get('resource_type') == 'unit_test') }}
{% endmacro %}
