{{ config(materialized='incremental', incremental_strategy='append') }}

{#- What each load of the 5.x feeds tells of its consumer groups, counted per load, feed and
    group: int_consumer_group_settings sums this small table instead of reading every span and
    listener event ever loaded. The two feeds number their loads apart, so each is read from
    above its own highest load counted here. -#}
{%- set counted = {} %}
{%- do put_max_load_ids_by_source(this, counted) %}

with

-- A process span is a push consumer's: a SimpleConsumer writes none.
new_spans as (
    select
        'otel' as source,
        load_id,
        consumer_group,
        'PUSH' as consumer_kind,
        message_group
    from {{ ref('stg_otel__process_spans') }}
    where span_error is null and load_id > {{ counted.get('otel', 0) }}
),

new_events as (
    select
        'consume_events' as source,
        load_id,
        consumer_group,
        consumer_kind,
        message_group
    from {{ ref('stg_landing__consume_event_lines') }}
    where line_error is null and load_id > {{ counted.get('consume_events', 0) }}
),

final as (
    select
        source,
        load_id,
        consumer_group,
        count_if(consumer_kind = 'PUSH') as push_deliveries,
        count_if(consumer_kind = 'SIMPLE') as simple_deliveries,
        count(message_group) as message_group_deliveries
    from (
        select * from new_spans
        union all
        select * from new_events
    ) as deliveries
    group by source, load_id, consumer_group
)

select * from final
