-- noqa: disable=RF01,RF04
{#- (The noqa above: sqlfluff reads the exploded span's struct fields, such as span.kind, as
    table references, and OTLP's field names as keywords.) -#}
{{ config(
    materialized='incremental',
    incremental_strategy='append',
) }}

{#- One row per span of the OpenTelemetry Java agent's rocketmq-client-5.0 instrumentation that
    records a delivery: a `process` span (kind CONSUMER) wraps one call of the listener, so one
    delivery attempt, FIFO local retries included (observability note §1.2). Spans of other
    systems, and receive spans, are not kept: stg_landing__otel_lines counts every span of a line,
    so the difference is the ignored ones. Both semantic-convention modes are read, with their
    renames (§5.2, §5.4); `messaging/dup` spans carry both names and count once. A process span
    that lacks what a delivery needs carries `span_error`. Append-only, from the lines loaded in
    this run. -#}
{%- set lines = ref('stg_landing__otel_lines') %}
{%- set loaded = max_load_id(this) %}

with

new_lines as (
    select * from {{ lines }}
    where line_error is null and load_id > {{ loaded }}
),

resources as (
    select
        new_lines.load_id,
        new_lines.source_file,
        new_lines.line_number,
        {{ otlp_attribute_texts('resource_batch.resource.attributes') }} as resource_attribute_texts,
        resource_batch.scopespans as scope_spans
    from new_lines
        lateral view explode(new_lines.resource_spans) exploded_resources as resource_batch
),

scopes as (
    select
        resources.load_id,
        resources.source_file,
        resources.line_number,
        resources.resource_attribute_texts,
        scope_batch.scope.name as scope_name,
        scope_batch.spans as scope_span_list
    from resources
        lateral view explode(resources.scope_spans) exploded_scopes as scope_batch
),

spans as (
    select
        scopes.load_id,
        scopes.source_file,
        scopes.line_number,
        scopes.resource_attribute_texts,
        scopes.scope_name,
        exploded_spans.span,
        {{ otlp_attribute_texts('exploded_spans.span.attributes') }} as span_attribute_texts,
        {{ otlp_attribute_texts(
            "try_element_at(filter(exploded_spans.span.events, span_event -> span_event.name = 'exception'), 1).attributes"
        ) }} as exception_attribute_texts
    from scopes
        lateral view explode(scopes.scope_span_list) exploded_spans as span
),

named as (
    select
        spans.load_id,
        spans.source_file,
        spans.line_number,
        spans.scope_name,
        lower(spans.span.traceid) as trace_id,
        lower(spans.span.spanid) as span_id,
        lower(spans.span.parentspanid) as parent_span_id,
        spans.span.name as span_name,
        spans.span.kind in ('5', 'SPAN_KIND_CONSUMER') as is_consumer_kind,
        spans.span.starttimeunixnano as start_nanos,
        spans.span.endtimeunixnano as end_nanos,
        coalesce(spans.span.status.code in ('2', 'STATUS_CODE_ERROR'), false) as is_error,
        exists(spans.span.events, span_event -> span_event.name = 'exception') as has_exception,
        {{ otlp_attribute('spans.exception_attribute_texts', ['exception.type']) }} as exception_type,
        {{ otlp_attribute('spans.span_attribute_texts', ['messaging.system']) }} as messaging_system,
        {{ otlp_attribute(
            'spans.span_attribute_texts',
            ['messaging.operation.type', 'messaging.operation.name', 'messaging.operation']
        ) }} as operation,
        {{ otlp_attribute(
            'spans.span_attribute_texts',
            ['messaging.consumer.group.name', 'messaging.rocketmq.client_group']
        ) }} as consumer_group,
        {{ otlp_attribute(
            'spans.span_attribute_texts', ['messaging.destination.name', 'messaging.destination']
        ) }} as topic,
        {{ otlp_attribute(
            'spans.span_attribute_texts', ['messaging.message.id', 'messaging.message_id']
        ) }} as msg_id,
        {{ otlp_attribute('spans.span_attribute_texts', var('delivery_attempt_attributes')) }}
            as delivery_attempt_text,
        {{ otlp_attribute('spans.span_attribute_texts', ['error.type']) }} as error_type,
        {{ otlp_attribute('spans.span_attribute_texts', ['messaging.rocketmq.message.keys']) }} as `keys`,
        {{ otlp_attribute('spans.span_attribute_texts', ['messaging.rocketmq.message.tag']) }} as tags,
        {{ otlp_attribute('spans.span_attribute_texts', ['messaging.rocketmq.message.group']) }}
            as message_group,
        {{ otlp_attribute(
            'spans.resource_attribute_texts', ['service.instance.id', 'host.name', 'service.name']
        ) }} as consumer_instance
    from spans
),

process_spans as (
    select * from named
    where
        scope_name = 'io.opentelemetry.rocketmq-client-5.0'
        and is_consumer_kind
        and messaging_system = 'rocketmq'
        and operation = 'process'
),

checked as (
    select
        *,
        case
            when coalesce(msg_id, '') = '' then 'process span without messaging.message.id'
            when coalesce(consumer_group, '') = '' then 'process span without a consumer group'
            when coalesce(trace_id, '') = '' or coalesce(span_id, '') = ''
                then 'process span without traceId or spanId'
            when not coalesce(start_nanos rlike '^[0-9]{1,19}$', false)
                or not coalesce(end_nanos rlike '^[0-9]{1,19}$', false)
                then 'process span start or end time missing or not a number'
            when not {{ number_text_fits('start_nanos', 'bigint') }}
                or not {{ number_text_fits('end_nanos', 'bigint') }}
                then 'process span start or end time is out of range'
            when not coalesce(delivery_attempt_text rlike '^[1-9][0-9]{0,8}$', true)
                then 'delivery attempt attribute is not a positive number: ' || delivery_attempt_text
        end as span_error
    from process_spans
),

final as (
    select
        load_id,
        source_file,
        line_number,
        trace_id,
        span_id,
        parent_span_id,
        span_name,
        consumer_group,
        topic,
        msg_id,
        cast(delivery_attempt_text as int) as delivery_attempt,
        {{ otlp_time('start_nanos') }} as consume_started_at,
        {{ otlp_time('end_nanos') }} as consume_ended_at,
        -- ConsumeResult.FAILURE and a thrown exception both end the span with ERROR (§1.2).
        case
            when not is_error then 'SUCCESS'
            when has_exception or coalesce(error_type, 'FAILURE') <> 'FAILURE' then 'EXCEPTION'
            else 'FAILED'
        end as return_type,
        coalesce(exception_type, nullif(error_type, 'FAILURE')) as error_class,
        `keys`,
        tags,
        message_group,
        consumer_instance,
        span_error
    from checked
)

select * from final
