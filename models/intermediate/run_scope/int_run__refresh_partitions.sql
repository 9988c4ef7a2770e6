{#- The (lifecycle_date, lifecycle_hour) partitions of this run's scope, listed once per run:
    every model and post-hook that reads or rewrites the scope's partitions reads this small
    table instead of the scope. Empty on a first or full-refresh build. -#}
{{ config(materialized='table', schema='meta') }}
with

scope as (
    select * from {{ ref('int_run__lifecycle_scope') }}
),

final as (
    select distinct
        lifecycle_date,
        lifecycle_hour
    from scope
)

select * from final
