{#- The (group, message) lifecycles this run recomputes. The fact marts are partitioned by
    `lifecycle_date` (the date of the first delivery); a run rewrites whole partitions, so the
    scope is every lifecycle in a partition that something touched:
    - lifecycles with records loaded since the last complete run (or whose Pub arrived);
    - open lifecycles (waiting, overdue, in flight), whose state moves with the watermark;
    - and every other lifecycle sharing a partition with those.
    On a first or full-refresh build the scope is everything. This is run bookkeeping, kept in
    the `_meta` schema with the run state. -#}
{{ config(materialized='table', schema='meta') }}
{%- set previous_lifecycles = previous_fact_relation('message_lifecycles') %}
{%- set processed = 0 if previous_lifecycles is none else processed_load_id() %}

with

-- On a first or full-refresh build there is no previous state and every load is new.
previous_lifecycles as (
    {% if previous_lifecycles is none %}
        select
            cast(null as string) as consumer_group,
            cast(null as string) as msg_id,
            cast(null as date) as lifecycle_date,
            cast(null as string) as final_state
        where false
    {% else %}
        select
            consumer_group,
            msg_id,
            lifecycle_date,
            final_state
        from {{ previous_lifecycles }}
    {% endif %}
),

sub_before as (
    select
        consumer_group,
        msg_id,
        request_id,
        load_id,
        consume_started_at
    from {{ ref('stg_trace__sub_before') }}
),

new_sub_before as (
    select * from sub_before
    where load_id > {{ processed }}
),

new_sub_after as (
    select
        request_id,
        msg_id
    from {{ ref('stg_trace__sub_after') }}
    where load_id > {{ processed }}
),

new_pubs as (
    select distinct msg_id
    from {{ ref('stg_trace__pub') }}
    where load_id > {{ processed }}
),

touched as (
    select
        consumer_group,
        msg_id
    from new_sub_before

    union

    select
        sub_before.consumer_group,
        sub_before.msg_id
    from new_sub_after
    inner join sub_before
        on
            new_sub_after.request_id = sub_before.request_id
            and new_sub_after.msg_id = sub_before.msg_id

    union

    select
        previous_lifecycles.consumer_group,
        previous_lifecycles.msg_id
    from previous_lifecycles
    left semi join new_pubs
        on previous_lifecycles.msg_id = new_pubs.msg_id

    union

    select
        consumer_group,
        msg_id
    from previous_lifecycles
    where final_state in ('WAITING_RETRY', 'RETRY_OVERDUE', 'IN_FLIGHT')
),

touched_dates as (
    select previous_lifecycles.lifecycle_date
    from previous_lifecycles
    left semi join touched
        on
            previous_lifecycles.consumer_group = touched.consumer_group
            and previous_lifecycles.msg_id = touched.msg_id

    union

    select to_date(consume_started_at) as lifecycle_date
    from new_sub_before
),

final as (
    select
        previous_lifecycles.consumer_group,
        previous_lifecycles.msg_id
    from previous_lifecycles
    left semi join touched_dates
        on previous_lifecycles.lifecycle_date = touched_dates.lifecycle_date

    union

    select
        consumer_group,
        msg_id
    from touched
)

select * from final
