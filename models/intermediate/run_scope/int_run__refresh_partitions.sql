{#- The (lifecycle_date, lifecycle_hour) partitions of this run's scope, listed once per run:
    every model and post-hook that reads or rewrites the scope's partitions reads this small
    table instead of the scope. With them, the unsettled partitions (runs since the last
    complete one), which may have no lifecycle left. Empty on a first or full-refresh build.
    The post-hook records them as unsettled until the run completes (record_run_state). -#}
{{ config(
    materialized='table',
    schema='meta',
    post_hook=[
        "{{ record_unsettled_partitions() }}",
        "{{ remember_refresh_partitions() }}",
    ],
) }}
with

scope_partitions as (
    select
        lifecycle_date,
        lifecycle_hour
    from {{ with_unsettled_partitions(ref('int_run__lifecycle_scope')) }}
),

final as (
    select distinct
        lifecycle_date,
        lifecycle_hour
    from scope_partitions
)

select * from final
