-- The DuckDB peer of the marts (retrylake/bench/duckdb_peer.py): one plain SQL script over the
-- landing files and the seeds, written from the spec (shared/reference/rocketmq-retry-spec.md),
-- docs/rules.md and design.md, not from the dbt models, so that it checks them as well as
-- timing them. The Python driver runs and times each `-- step:` below on its own, after setting
-- the variables read with getvariable(): the landing files of each feed, the seed files and the
-- dbt_project.yml vars. All times are UTC; "now" is the data watermark. A number too large for
-- its type is null (try_cast), as Spark's casts make it.

-- step: helpers
-- The trace encoder writes a missing tag or key as the text `null` (spec §5.2).
create or replace temp macro trace_text(value) as nullif(nullif(value, 'null'), '');

-- Milliseconds are the unit of every rule; a timestamp moved by ms keeps ms precision.
create or replace temp macro add_ms(ts, ms) as epoch_ms(epoch_ms(ts) + ms);

-- A redelivery fits a delay when it comes at most 1 s early and 2 s + 1% late (schedule
-- polling is 100 ms, spec §2.3; docs/rules.md).
create or replace temp macro fits_delay(gap_ms, delay_ms) as
    gap_ms >= delay_ms - 1000 and gap_ms <= delay_ms + 2000 + delay_ms // 100;

-- A stored property from `name U+0001 value U+0002 ...` (spec §7): segments with an empty key
-- or value are skipped, and a later duplicate wins.
create or replace temp macro stored_property(properties, name) as
    [
        substr(segment, length(name) + 2)
        for segment in string_split(properties, chr(2))
        if starts_with(segment, name || chr(1)) and length(segment) > length(name) + 1
    ][-1];

-- A name the broker keeps for an instance with a namespace (spec §7): `ns%G`, `%DLQ%ns%G`,
-- `%RETRY%ns%G`. The namespace is what precedes the first `%` after the %RETRY% or %DLQ% prefix
-- (none when the name starts with it); the trace names the group and topic without it.
create or replace temp macro unprefixed(name) as
    case
        when starts_with(name, '%RETRY%') then substr(name, 8)
        when starts_with(name, '%DLQ%') then substr(name, 6)
        else name
    end;

create or replace temp macro namespace_in(name) as
    if(strpos(unprefixed(name), '%') > 1, split_part(unprefixed(name), '%', 1), null);

create or replace temp macro unwrapped(name) as
    if(
        namespace_in(name) is null,
        name,
        substr(name, 1, length(name) - length(unprefixed(name)))
        || substr(unprefixed(name), strpos(unprefixed(name), '%') + 1)
    );

-- The pop retry topic of broker-side group g (spec §7 table: `%RETRY%<group>_<topic>`, or `+`
-- in its v2 form): the separator's position in it, else 0.
create or replace temp macro pop_separator_at(topic, g) as
    if(
        starts_with(topic, '%RETRY%' || g || '_') or starts_with(topic, '%RETRY%' || g || '+'),
        length('%RETRY%' || g) + 1,
        0
    );

-- RETRY_TOPIC or originalTopic as the trace would name it: a pop retry topic of a group in a
-- namespace, `%RETRY%ns%G_ns%T`, is `%RETRY%G_T`; any other name is unwrapped.
create or replace temp macro trace_topic(topic, g) as
    if(
        namespace_in(g) is not null and pop_separator_at(topic, g) > 0,
        '%RETRY%' || unwrapped(g) || substr(topic, pop_separator_at(topic, g), 1)
        || unwrapped(substr(topic, pop_separator_at(topic, g) + 1)),
        unwrapped(topic)
    );

-- A DLQ copy's property, from its JSON object of properties, else from the stored string.
create or replace temp macro copy_property(properties_json, properties_string, name) as
    if(properties_json is null, stored_property(properties_string, name), properties_json ->> name);

-- An OTLP AnyValue (as JSON) as text: a scalar as written, an array's scalars joined by spaces.
create or replace temp macro otlp_text(value) as coalesce(
    value ->> 'stringValue',
    value ->> 'intValue',
    value ->> 'boolValue',
    value ->> 'doubleValue',
    array_to_string(
        [
            coalesce(v ->> 'stringValue', v ->> 'intValue', v ->> 'boolValue', v ->> 'doubleValue')
            for v in cast(value -> '$.arrayValue.values' as json[])
        ],
        ' '
    )
);

-- The first attribute of an OTLP attribute list with that key, as text.
create or replace temp macro otlp_attribute(attributes, attribute_key) as
    otlp_text(list_filter(attributes, a -> a.key = attribute_key)[1].value);

-- A landed line as JSON when it is a JSON object, else null. The text reader turns bytes that
-- are not UTF-8 into U+FFFD, so a line holding one is set aside. (The build judges each line's
-- own bytes and keeps a U+FFFD written as a character; the generator writes none, so the peer
-- does not look at the bytes for it. A guard in a CASE, not a WHERE: the optimizer may evaluate a projection
-- before a filter.)
create or replace temp macro json_object_line(line) as
    case
        when json_valid(line)
            then case
                when json_type(line) = 'OBJECT' and not contains(line, chr(65533)) then line
            end
    end;

-- The lines of a feed's files: one VARCHAR per line, the file it came from. The delimiter is a
-- control character that valid JSON never holds raw; a line that is not UTF-8 is skipped.
create or replace temp macro landing_lines(files) as table
    select
        filename as source_file,
        line
    from read_csv(
        files,
        columns = {'line': 'VARCHAR'},
        header = false,
        delim = chr(30),
        quote = '',
        escape = '',
        auto_detect = false,
        ignore_errors = true,
        max_line_size = 33554432,
        filename = true
    );

-- step: seeds
-- The seeds users edit, as text: a seed written before a column existed gets it empty, so the
-- defaults apply (as in the build).
create or replace temp table seed_consumer_groups as
select * from read_csv(getvariable('consumer_groups_csv'), header = true, all_varchar = true);

alter table seed_consumer_groups add column if not exists consume_timeout_minutes varchar;
alter table seed_consumer_groups add column if not exists group_retry_policy varchar;
alter table seed_consumer_groups add column if not exists retry_max_times varchar;
alter table seed_consumer_groups add column if not exists consumer_kind varchar;
alter table seed_consumer_groups add column if not exists dead_letter_enabled varchar;

create or replace temp table seed_broker_delay_levels as
select * from read_csv(getvariable('broker_delay_levels_csv'), header = true, all_varchar = true);

alter table seed_broker_delay_levels add column if not exists broker_version varchar;

-- step: delay_levels
-- Each broker cluster's delay table, parsed as ScheduleMessageService.parseDelayLevel does
-- (spec §2.3): tokens split on one space, the last character the unit. A bad token stops the
-- peer, as it stops the build.
create or replace table delay_levels as
with

configured as (
    select
        broker_cluster,
        message_delay_level,
        nullif(trim(broker_version), '') as broker_version,
        -- Java's split drops trailing empty tokens
        case
            when message_delay_level is null
                then error(
                    'broker_delay_levels.csv: cluster ' || broker_cluster || ' has no levels'
                )
            else string_split(rtrim(message_delay_level, ' '), ' ')
        end as tokens
    from seed_broker_delay_levels
),

tokens as (
    select
        broker_cluster,
        broker_version,
        unnest(tokens) as token,
        generate_subscripts(tokens, 1) as level
    from configured
),

parsed as (
    select
        broker_cluster,
        broker_version,
        level,
        token,
        -- Long.parseLong of the token less its unit
        if(
            regexp_full_match(left(token, length(token) - 1), '[+-]?[0-9]+'),
            try_cast(left(token, length(token) - 1) as bigint),
            null
        ) as amount,
        case right(token, 1)
            when 's' then 1000
            when 'm' then 60000
            when 'h' then 3600000
            when 'd' then 86400000
        end as unit_ms
    from tokens
)

select
    broker_cluster,
    broker_version,
    level,
    token,
    case
        when amount is null or unit_ms is null
            then error(
                'broker_delay_levels.csv: cluster ' || broker_cluster || ' has a bad delay token '
                || coalesce('''' || token || '''', 'null')
            )
        -- a token of zero or less is due at once: store time + delay has come (spec §2.3)
        else greatest(amount * unit_ms, 0)
    end as delay_ms,
    level - 1 as schedule_queue_id,
    level = max(level) over (partition by broker_cluster) as is_max_level
from parsed;

-- step: trace_lines
-- The trace topic's messages (design.md, Inputs): a line is used when it is a JSON object with a
-- msgId, a numeric storeTimestamp and a UTF-8 body (`body`, else `bodyBase64`); any other line is
-- set aside, as the build quarantines it.
create or replace temp table trace_lines as
with

lines as (
    select
        source_file,
        json_extract_string(
            json_object_line(line), ['$.msgId', '$.storeTimestamp', '$.body', '$.bodyBase64']
        ) as fields
    from landing_lines(getvariable('trace_files'))
),

decoded as (
    select
        source_file,
        fields[1] as trace_msg_id,
        fields[2] as store_timestamp,
        coalesce(fields[3], try(decode(from_base64(fields[4])))) as body
    from lines
)

select
    source_file,
    trace_msg_id,
    epoch_ms(try_cast(store_timestamp as bigint)) as trace_stored_at,
    body
from decoded
where
    trace_msg_id <> ''
    and regexp_full_match(store_timestamp, '[0-9]+')
    and body is not null;

-- step: trace_records
-- Bodies split into records on U+0002 and records into fields on U+0001 (spec §5.5; Java's
-- split drops trailing empty strings). A record is kept only in a layout some client writes
-- (spec §5.3) with numbers where numbers belong; DuckDB lists are 1-based, the spec's fields
-- 0-based, so field [i] of the spec is fields[i + 1] here.
create or replace temp table trace_records as
with

split_bodies as (
    select
        source_file,
        trace_msg_id,
        trace_stored_at,
        string_split(rtrim(body, chr(2)), chr(2)) as records
    from trace_lines
),

records as (
    select
        source_file,
        trace_msg_id,
        trace_stored_at,
        generate_subscripts(records, 1) as record_index,
        string_split(rtrim(unnest(records), chr(1)), chr(1)) as fields
    from split_bodies
),

typed as (
    select
        *,
        fields[1] as kind,
        len(fields) as field_count
    from records
),

-- spec field indexes that must be (possibly negative) integers, per kind
numeric_fields as (
    select
        *,
        case kind
            when 'Pub' then [1, 9, 10, 11]
            when 'SubBefore' then [1, 6]
            when 'SubAfter' then if(field_count = 9, [3, 6, 7], [3, 6])
            when 'EndTransaction' then [1, 9]
            when 'Recall' then [1]
        end as number_indexes,
        case kind
            when 'Pub' then field_count in (13, 14, 15)
            when 'SubBefore' then field_count in (8, 9)
            when 'SubAfter' then field_count in (7, 9)
            when 'EndTransaction' then field_count = 13
            when 'Recall' then field_count = 7
            else false
        end as known_layout
    from typed
)

select
    source_file,
    trace_msg_id,
    trace_stored_at,
    record_index,
    kind,
    field_count,
    fields
from numeric_fields
where
    known_layout
    and list_bool_and(
        [coalesce(regexp_full_match(fields[i + 1], '-?[0-9]+'), false) for i in number_indexes]
    );

-- step: otel_spans
-- 5.x: the OpenTelemetry agent's `process` spans (docs/rocketmq5-inputs.md §1), one per listener
-- call, read in both semantic-convention modes; spans of other systems and receive spans are
-- ignored. A line is `{"resourceSpans": [...]}` or a bare ResourceSpans object.
create or replace temp table otel_spans as
with

lines as (
    select
        source_file,
        from_json(
            json_object_line(line),
            '{
                "resourceSpans": [{
                    "resource": {"attributes": [{"key": "VARCHAR", "value": "JSON"}]},
                    "scopeSpans": "JSON"
                }],
                "resource": {"attributes": [{"key": "VARCHAR", "value": "JSON"}]},
                "scopeSpans": "JSON"
            }'
        ) as batch
    from landing_lines(getvariable('otel_files'))
),

resources as (
    select
        source_file,
        unnest(
            coalesce(
                batch.resourceSpans,
                if(
                    batch.scopeSpans is null,
                    null,
                    [{'resource': batch.resource, 'scopeSpans': batch.scopeSpans}]
                )
            )
        ) as resource_spans
    from lines
),

scopes as (
    select
        source_file,
        resource_spans.resource.attributes as resource_attributes,
        unnest(
            from_json(
                resource_spans.scopeSpans,
                '[{"scope": {"name": "VARCHAR"}, "spans": [{
                    "traceId": "VARCHAR", "spanId": "VARCHAR", "kind": "VARCHAR",
                    "startTimeUnixNano": "VARCHAR", "endTimeUnixNano": "VARCHAR",
                    "attributes": [{"key": "VARCHAR", "value": "JSON"}],
                    "events": [{"name": "VARCHAR",
                                "attributes": [{"key": "VARCHAR", "value": "JSON"}]}],
                    "status": {"code": "VARCHAR"}
                }]}]'
            )
        ) as scope_spans
    from resources
),

spans as (
    select
        source_file,
        resource_attributes,
        scope_spans.scope.name as scope_name,
        unnest(scope_spans.spans) as span
    from scopes
),

named as (
    select
        source_file,
        scope_name,
        lower(span.traceId) as trace_id,
        lower(span.spanId) as span_id,
        span.kind in ('5', 'SPAN_KIND_CONSUMER') as is_consumer_kind,
        span.startTimeUnixNano as start_nanos,
        span.endTimeUnixNano as end_nanos,
        coalesce(span.status.code in ('2', 'STATUS_CODE_ERROR'), false) as is_error,
        coalesce(list_bool_or([e.name = 'exception' for e in span.events]), false)
            as has_exception,
        otlp_attribute(span.attributes, 'messaging.system') as messaging_system,
        coalesce(
            otlp_attribute(span.attributes, 'messaging.operation.type'),
            otlp_attribute(span.attributes, 'messaging.operation.name'),
            otlp_attribute(span.attributes, 'messaging.operation')
        ) as operation,
        coalesce(
            otlp_attribute(span.attributes, 'messaging.consumer.group.name'),
            otlp_attribute(span.attributes, 'messaging.rocketmq.client_group')
        ) as consumer_group,
        coalesce(
            otlp_attribute(span.attributes, 'messaging.destination.name'),
            otlp_attribute(span.attributes, 'messaging.destination')
        ) as topic,
        coalesce(
            otlp_attribute(span.attributes, 'messaging.message.id'),
            otlp_attribute(span.attributes, 'messaging.message_id')
        ) as msg_id,
        -- the attempt, where a listener decorator put it on the span: the first of the
        -- attribute names the project lists (var delivery_attempt_attributes) that is there
        list_sort(
            list_filter(
                list_transform(
                    span.attributes,
                    (a, i) -> {
                        'rank': list_position(getvariable('delivery_attempt_attributes'), a.key),
                        'position': i,
                        'text': otlp_text(a.value)
                    }
                ),
                candidate -> candidate.rank is not null and candidate.text is not null
            )
        )[1].text as attempt_text,
        otlp_attribute(span.attributes, 'error.type') as error_type,
        otlp_attribute(span.attributes, 'messaging.rocketmq.message.keys') as keys,
        coalesce(
            otlp_attribute(resource_attributes, 'service.instance.id'),
            otlp_attribute(resource_attributes, 'host.name'),
            otlp_attribute(resource_attributes, 'service.name')
        ) as consumer_instance
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

-- A process span that lacks what a delivery needs is set aside.
usable as (
    select * from process_spans
    where
        coalesce(msg_id, '') <> ''
        and coalesce(consumer_group, '') <> ''
        and coalesce(trace_id, '') <> ''
        and coalesce(span_id, '') <> ''
        and coalesce(regexp_full_match(start_nanos, '[0-9]{1,19}'), false)
        and coalesce(regexp_full_match(end_nanos, '[0-9]{1,19}'), false)
        and coalesce(regexp_full_match(attempt_text, '[1-9][0-9]{0,8}'), true)
),

-- A span batch exported twice holds the same span: it counts once.
unique_spans as (
    select * from usable
    qualify row_number() over (partition by trace_id, span_id order by source_file) = 1
)

select
    consumer_group,
    msg_id,
    span_id,
    topic,
    keys,
    consumer_instance,
    cast(attempt_text as integer) as delivery_attempt,
    make_timestamp(try_cast(start_nanos as bigint) // 1000) as consume_started_at,
    make_timestamp(try_cast(end_nanos as bigint) // 1000) as consume_ended_at,
    -- ConsumeResult.FAILURE and a thrown exception both end the span with ERROR
    case
        when not is_error then 'SUCCESS'
        when has_exception or coalesce(error_type, 'FAILURE') <> 'FAILURE' then 'EXCEPTION'
        else 'FAILED'
    end as return_type
from unique_spans;

-- step: consume_events
-- 5.x: the listener decorator's lines (docs/rocketmq5-inputs.md §2), the exact attempt number
-- and the only record of a SimpleConsumer; a line missing a field a delivery needs is set aside.
create or replace temp table consume_events as
with

lines as (
    select
        source_file,
        json_extract_string(
            json_object_line(line),
            [
                '$.ts_start', '$.ts_end', '$.consumer_group', '$.topic', '$.msg_id',
                '$.delivery_attempt', '$.result', '$.client_id', '$.consumer_kind',
                '$.invisible_duration_ms', '$.received_at', '$.invisible_changed_at'
            ]
        ) as f
    from landing_lines(getvariable('consume_event_files'))
),

named as (
    select
        source_file,
        f[1] as ts_start,
        f[2] as ts_end,
        f[3] as consumer_group,
        f[4] as topic,
        f[5] as msg_id,
        f[6] as delivery_attempt,
        f[7] as result,
        f[8] as client_id,
        f[9] as consumer_kind,
        f[10] as invisible_duration_ms,
        f[11] as received_at,
        f[12] as invisible_changed_at
    from lines
),

usable as (
    select * from named
    where
        coalesce(consumer_group, '') <> ''
        and coalesce(msg_id, '') <> ''
        and coalesce(regexp_full_match(ts_start, '[0-9]{1,15}'), false)
        and coalesce(regexp_full_match(ts_end, '[0-9]{1,15}'), false)
        and try_cast(ts_end as bigint) >= try_cast(ts_start as bigint)
        and coalesce(regexp_full_match(delivery_attempt, '[1-9][0-9]{0,8}'), false)
        and coalesce(result in ('SUCCESS', 'FAILURE', 'EXCEPTION'), false)
        and coalesce(consumer_kind in ('PUSH', 'SIMPLE'), true)
        and coalesce(regexp_full_match(invisible_duration_ms, '[0-9]{1,12}'), true)
        and coalesce(regexp_full_match(received_at, '[0-9]{1,15}'), true)
        and coalesce(regexp_full_match(invisible_changed_at, '[0-9]{1,15}'), true)
)

select
    consumer_group,
    msg_id,
    topic,
    client_id as consumer_instance,
    cast(delivery_attempt as integer) as delivery_attempt,
    epoch_ms(cast(ts_start as bigint)) as consume_started_at,
    epoch_ms(cast(ts_end as bigint)) as consume_ended_at,
    if(result = 'FAILURE', 'FAILED', result) as return_type,
    cast(invisible_duration_ms as bigint) as invisible_duration_ms,
    epoch_ms(cast(received_at as bigint)) as received_at,
    epoch_ms(cast(invisible_changed_at as bigint)) as invisible_changed_at
from usable;

-- step: broker_dlq_lines
-- 5.x: a broker's `send msg to DLQ` log line is the observed dead letter of a gRPC consumer; the
-- log's local-time prefix is ignored for its storeTimestamp field. Every other line is skipped.
create or replace temp table broker_dlq_lines as
with

lines as (
    select
        source_file,
        regexp_extract(
            line,
            'send msg to DLQ (\S+), owner=(\S*), originalTopic=(\S+), consumerId=(\S+), '
            || 'msgUniqKey=(\S+), storeTimestamp=([0-9]+)',
            ['dlq_topic', 'owner', 'original_topic', 'consumer_group', 'msg_id', 'stored_ms']
        ) as parts
    from landing_lines(getvariable('broker_log_files'))
    where
        contains(line, 'send msg to DLQ')
        and not contains(line, 'failed to send msg to DLQ')
        and not contains(line, chr(65533))
)

select
    unwrapped(parts.consumer_group) as consumer_group,
    namespace_in(parts.dlq_topic) as namespace,
    parts.dlq_topic,
    parts.msg_id,
    trace_topic(parts.original_topic, parts.consumer_group) as original_topic,
    epoch_ms(try_cast(parts.stored_ms as bigint)) as stored_at
from lines
where starts_with(parts.dlq_topic, '%DLQ%')
-- logs shipped twice, or overlapping brokers' logs, hold the same line: it counts once
qualify row_number() over (
    partition by unwrapped(parts.consumer_group), parts.msg_id, parts.stored_ms
    order by source_file
) = 1;

-- step: dlq_copies
-- The copies read from `%DLQ%<group>` topics (design.md, Inputs). Overlapping exports hold the
-- same stored copy, known by its offset id: it counts once. Its UNIQ_KEY ties it to the
-- lifecycle on every path (spec §3.7); the properties come as a JSON object or as the stored
-- string (spec §7).
create or replace temp table dlq_copies as
with

objects as (
    select
        source_file,
        json_object_line(line) as line
    from landing_lines(getvariable('dlq_files'))
),

lines as (
    select
        source_file,
        json_extract_string(
            line,
            [
                '$.msgId', '$.offsetMsgId', '$.topic', '$.queueId', '$.reconsumeTimes',
                '$.bornTimestamp', '$.storeTimestamp', '$.propertiesString'
            ]
        ) as f,
        json_extract(line, '$.properties') as properties_json
    from objects
),

usable as (
    select
        source_file,
        f[1] as msg_id,
        f[2] as offset_msg_id,
        f[3] as dlq_topic,
        f[5] as reconsume_times,
        f[7] as store_timestamp,
        -- the JSON object when there is one, else the stored string
        if(json_type(properties_json) = 'OBJECT', properties_json, null) as properties_json,
        f[8] as properties_string
    from lines
    where
        coalesce(f[1], '') <> ''
        and coalesce(f[2], '') <> ''
        and coalesce(starts_with(f[3], '%DLQ%'), false)
        and coalesce(regexp_full_match(f[5], '[0-9]+'), false)
        and coalesce(regexp_full_match(f[7], '[0-9]+'), false)
        and coalesce(regexp_full_match(f[6], '[0-9]+'), true)
        and (json_type(properties_json) = 'OBJECT' or f[8] is not null)
),

properties as (
    select
        source_file,
        msg_id,
        offset_msg_id,
        dlq_topic,
        reconsume_times,
        store_timestamp,
        copy_property(properties_json, properties_string, 'UNIQ_KEY') as uniq_key,
        copy_property(properties_json, properties_string, 'ORIGIN_MESSAGE_ID') as origin_msg_id,
        copy_property(properties_json, properties_string, 'RETRY_TOPIC') as retry_topic,
        copy_property(properties_json, properties_string, 'KEYS') as keys,
        copy_property(properties_json, properties_string, 'TAGS') as tags,
        copy_property(properties_json, properties_string, 'DELAY') as delay_property
    from usable
),

ranked as (
    select
        *,
        count(*) over (partition by offset_msg_id) as copies_landed
    from properties
    qualify row_number() over (partition by offset_msg_id order by source_file) = 1
)

select
    unwrapped(substr(dlq_topic, length('%DLQ%') + 1)) as consumer_group,
    namespace_in(dlq_topic) as namespace,
    dlq_topic,
    coalesce(uniq_key, msg_id) as msg_id,
    offset_msg_id,
    try_cast(reconsume_times as integer) as reconsume_times,
    epoch_ms(try_cast(store_timestamp as bigint)) as stored_at,
    origin_msg_id,
    trace_topic(retry_topic, substr(dlq_topic, length('%DLQ%') + 1)) as retry_topic,
    keys,
    tags,
    delay_property,
    copies_landed
from ranked;

-- step: watermark
-- "Now" for every state that moves with time: the latest time any landed record tells (a trace
-- message's store time, a 5.x delivery's end, a broker DLQ line's store time), never the clock.
create or replace table watermark as
select
    greatest(
        (select max(trace_stored_at) from trace_lines),
        (select max(consume_ended_at) from otel_spans),
        (select max(consume_ended_at) from consume_events),
        (select max(stored_at) from broker_dlq_lines)
    ) as watermark_at;

-- step: consumer_group_settings
-- Each group's effective settings: its seed row with the dbt_project.yml defaults for empty
-- cells, or every default for a group seen in the landing files only (a trace group is a
-- remoting-4.9 consumer, a group seen only in spans or events a grpc-5 one).
create or replace table consumer_group_settings as
with

seeded as (
    select
        consumer_group,
        coalesce(message_model, getvariable('default_message_model')) as message_model,
        coalesce(consume_mode, getvariable('default_consume_mode')) as consume_mode,
        coalesce(
            cast(max_reconsume_times as integer), getvariable('default_max_reconsume_times')
        ) as max_reconsume_times,
        coalesce(
            cast(suspend_current_queue_time_millis as bigint),
            -- the managed service's FIFO retry interval has its own default (seed 002)
            if(
                client_line = 'cloud-5',
                getvariable('cloud_fifo_retry_interval_millis'),
                getvariable('default_suspend_current_queue_time_millis')
            )
        ) as suspend_current_queue_time_millis,
        coalesce(cast(retry_queue_nums as integer), getvariable('default_retry_queue_nums'))
            as retry_queue_nums,
        coalesce(
            cast(delay_level_when_next_consume as integer),
            getvariable('default_delay_level_when_next_consume')
        ) as delay_level_when_next_consume,
        coalesce(broker_cluster, getvariable('default_broker_cluster')) as broker_cluster,
        coalesce(client_line, getvariable('default_client_line')) as client_line,
        coalesce(
            cast(consume_timeout_minutes as integer), getvariable('default_consume_timeout_minutes')
        ) as consume_timeout_minutes,
        nullif(group_retry_policy, '') as group_retry_policy,
        coalesce(cast(retry_max_times as integer), getvariable('default_retry_max_times'))
            as retry_max_times,
        coalesce(consumer_kind, getvariable('default_consumer_kind')) as consumer_kind,
        coalesce(cast(dead_letter_enabled as boolean), getvariable('default_dead_letter_enabled'))
            as dead_letter_enabled,
        'seed' as settings_source
    from seed_consumer_groups
),

traced_groups as (
    select distinct fields[4] as consumer_group from trace_records
    where kind = 'SubBefore'
),

grpc_groups as (
    select consumer_group from otel_spans
    union
    select consumer_group from consume_events
),

-- a group in the trace and in the 5.x inputs is a trace group
seen as (
    select
        consumer_group,
        getvariable('default_client_line') as client_line
    from traced_groups

    union all

    select
        consumer_group,
        'grpc-5' as client_line
    from grpc_groups
    anti join traced_groups using (consumer_group)
),

unconfigured as (
    select
        seen.consumer_group,
        getvariable('default_message_model') as message_model,
        getvariable('default_consume_mode') as consume_mode,
        getvariable('default_max_reconsume_times') as max_reconsume_times,
        getvariable('default_suspend_current_queue_time_millis')
            as suspend_current_queue_time_millis,
        getvariable('default_retry_queue_nums') as retry_queue_nums,
        getvariable('default_delay_level_when_next_consume') as delay_level_when_next_consume,
        getvariable('default_broker_cluster') as broker_cluster,
        seen.client_line,
        getvariable('default_consume_timeout_minutes') as consume_timeout_minutes,
        cast(null as varchar) as group_retry_policy,
        getvariable('default_retry_max_times') as retry_max_times,
        getvariable('default_consumer_kind') as consumer_kind,
        getvariable('default_dead_letter_enabled') as dead_letter_enabled,
        'default' as settings_source
    from seen
    anti join seeded on seen.consumer_group = seeded.consumer_group
),

all_groups as (
    select * from seeded
    union all by name
    select * from unconfigured
),

clusters as (
    select
        broker_cluster,
        any_value(broker_version) as broker_version,
        max(level) as max_delay_level
    from delay_levels
    group by broker_cluster
),

effective as (
    select
        all_groups.consumer_group,
        all_groups.message_model,
        all_groups.consume_mode,
        all_groups.max_reconsume_times,
        -- -1 means 16 for a concurrent consumer and no limit for an orderly one (spec §3.1)
        case
            when all_groups.max_reconsume_times <> -1 then all_groups.max_reconsume_times
            when all_groups.consume_mode = 'ORDERLY' then null
            else 16
        end as effective_max_reconsume_times,
        -- the orderly suspend time is clamped to 10..30000 ms (spec §3.5)
        least(greatest(all_groups.suspend_current_queue_time_millis, 10), 30000)
            as effective_suspend_millis,
        all_groups.suspend_current_queue_time_millis as fifo_retry_interval_ms,
        all_groups.retry_queue_nums,
        all_groups.delay_level_when_next_consume,
        all_groups.broker_cluster,
        coalesce(clusters.broker_cluster, '*') as delay_cluster,
        -- broker-side rules follow the cluster's version: its row's, else the `*` row's
        coalesce(
            clusters.broker_version,
            default_cluster.broker_version,
            getvariable('default_broker_version')
        ) as broker_version,
        all_groups.client_line,
        coalesce(all_groups.client_line in ('grpc-5', 'cloud-5'), false) as is_grpc,
        all_groups.consume_timeout_minutes,
        -- 5.x: max attempts = retryMaxTimes + 1 (spec §8.2); the group retry policy (spec §8.1),
        -- a missing policy object taking its type's defaults
        all_groups.retry_max_times + 1 as max_delivery_attempts,
        all_groups.consumer_kind,
        all_groups.dead_letter_enabled,
        coalesce(all_groups.group_retry_policy ->> '$.type', 'CUSTOMIZED') as retry_policy_type,
        coalesce(
            cast(all_groups.group_retry_policy -> '$.customizedRetryPolicy.next' as bigint[]),
            getvariable('customized_retry_policy_default_millis')
        ) as retry_policy_delays_ms,
        coalesce(
            cast(all_groups.group_retry_policy ->> '$.exponentialRetryPolicy.initial' as bigint),
            getvariable('exponential_initial_ms')
        ) as retry_policy_initial_ms,
        coalesce(
            cast(all_groups.group_retry_policy ->> '$.exponentialRetryPolicy.max' as bigint),
            getvariable('exponential_max_ms')
        ) as retry_policy_max_ms,
        coalesce(
            cast(all_groups.group_retry_policy ->> '$.exponentialRetryPolicy.multiplier' as bigint),
            getvariable('exponential_multiplier')
        ) as retry_policy_multiplier,
        -- a cluster without a row of its own uses the default row `*`
        coalesce(clusters.max_delay_level, default_cluster.max_delay_level) as max_delay_level,
        all_groups.settings_source
    from all_groups
    left join clusters on all_groups.broker_cluster = clusters.broker_cluster
    left join clusters as default_cluster on default_cluster.broker_cluster = '*'
)

select
    *,
    -- a 4.x broker: send-back behaviour changed in 5.x (spec §1.3, §1.4)
    try_cast(split_part(broker_version, '.', 1) as integer) < 5 as is_4x_broker
from effective;

-- step: published_messages
-- What the producer's Pub record says of each message (spec §5.2): the first successful send
-- is the stored original. Its offset id is the origin of every retry only for a normal message:
-- a delayed message's names its schedule-topic copy and a transactional one's the half message
-- (spec §2.2, §2.4), so their origin stays unknown.
create or replace temp table published_messages as
with

pubs as (
    select
        fields[6] as msg_id,
        if(field_count >= 14, fields[13], null) as offset_msg_id,
        fields[5] as topic,
        trace_text(fields[7]) as tags,
        trace_text(fields[8]) as keys,
        try_cast(fields[12] as integer) as message_type,
        if(field_count >= 14, fields[14], fields[13]) = 'true' as is_success,
        epoch_ms(try_cast(fields[2] as bigint)) as published_at,
        trace_msg_id,
        record_index
    from trace_records
    where kind = 'Pub'
),

first_sends as (
    select * from pubs
    qualify row_number() over (
        partition by msg_id
        order by
            is_success desc, published_at asc, offset_msg_id asc nulls first,
            trace_msg_id asc, record_index asc
    ) = 1
)

select
    msg_id,
    case
        when message_type in (1, 2) then 'TRANSACTIONAL'
        when message_type = 3 then 'DELAYED'
        else 'NORMAL'
    end as origin_kind,
    if(message_type in (1, 2, 3), null, offset_msg_id) as origin_msg_id,
    offset_msg_id as published_offset_msg_id,
    topic,
    tags,
    keys,
    published_at
from first_sends;

-- step: consume_attempts
-- One row per delivery of a message to a group. The trace's: a SubBefore joined to its SubAfter
-- on request id and message id (spec §5.2), each record counted once (a trace message can land
-- twice). A 5.x gRPC consumer's: its listener events, else its process spans, the attempt taken
-- from them or inferred from the deliveries' order.
create or replace table consume_attempts as
with

sub_before as (
    select
        fields[4] as consumer_group,
        fields[6] as msg_id,
        fields[5] as request_id,
        try_cast(fields[7] as integer) as reconsume_times,
        trace_text(fields[8]) as keys,
        if(field_count >= 9, fields[9], null) as client_host,
        epoch_ms(try_cast(fields[2] as bigint)) as consume_started_at
    from trace_records
    where kind = 'SubBefore'
),

-- a request id reused for a later delivery of the message: the first is the delivery
unique_sub_before as (
    select * from sub_before
    qualify row_number() over (
        partition by consumer_group, msg_id, request_id order by consume_started_at
    ) = 1
),

sub_after as (
    select
        fields[3] as msg_id,
        fields[2] as request_id,
        try_cast(fields[4] as bigint) as cost_ms,
        fields[5] = 'true' as traced_success,
        try_cast(fields[7] as integer) as context_code,
        trace_text(fields[6]) as keys,
        field_count,
        if(field_count >= 9, epoch_ms(try_cast(fields[8] as bigint)), null) as consume_ended_at,
        trace_stored_at
    from trace_records
    where kind = 'SubAfter'
),

-- the fuller layout wins when one record landed in two layouts
unique_sub_after as (
    select * from sub_after
    qualify row_number() over (
        partition by request_id, msg_id order by field_count desc, trace_stored_at
    ) = 1
),

-- The 7-field SubAfter has no end time, and its costTime is the request's time divided by the
-- number of messages in it (spec §5.2): the end is the start plus costTime times that number.
request_sizes as (
    select
        request_id,
        count(distinct (consumer_group, msg_id)) as request_size
    from sub_before
    where request_id in (select request_id from unique_sub_after where field_count < 9)
    group by request_id
),

trace_deliveries as (
    select
        b.consumer_group,
        b.msg_id,
        b.request_id,
        b.reconsume_times,
        coalesce(b.keys, a.keys) as keys,
        cast(null as varchar) as topic,
        b.client_host,
        b.client_host as consumer_instance,
        -- contextCode is the ConsumeReturnType ordinal (spec §4)
        case a.context_code
            when 0 then 'SUCCESS'
            when 1 then 'TIME_OUT'
            when 2 then 'EXCEPTION'
            when 3 then 'RETURNNULL'
            when 4 then 'FAILED'
        end as return_type,
        a.traced_success,
        a.cost_ms,
        b.consume_started_at,
        case
            when a.request_id is not null
                then coalesce(
                    a.consume_ended_at,
                    add_ms(b.consume_started_at, a.cost_ms * s.request_size)
                )
        end as consume_ended_at,
        cast(null as timestamp) as visible_again_at,
        'TRACE' as attempt_source,
        true as attempt_number_observed
    from unique_sub_before as b
    left join unique_sub_after as a on b.request_id = a.request_id and b.msg_id = a.msg_id
    left join request_sizes as s on a.request_id = s.request_id
),

-- Whether the client acked a delivery: the SubAfter success flag, or an orderly listener's
-- ROLLBACK with autoCommit on, traced as success false with the return type SUCCESS (spec §3.5).
acked_trace_deliveries as (
    select
        d.* exclude (traced_success),
        d.traced_success or (g.consume_mode = 'ORDERLY' and d.return_type = 'SUCCESS')
            as is_success
    from trace_deliveries as d
    left join consumer_group_settings as g on d.consumer_group = g.consumer_group
),

-- an event line landed twice counts once
unique_events as (
    select * from consume_events
    qualify row_number() over (
        partition by consumer_group, msg_id, delivery_attempt, consume_started_at, consumer_instance
    ) = 1
),

events as (
    select
        consumer_group,
        msg_id,
        'event-' || left(
            sha256(
                concat_ws(
                    '|', consumer_instance, msg_id, delivery_attempt, epoch_ms(consume_started_at)
                )
            ),
            24
        ) as request_id,
        delivery_attempt as observed_attempt,
        cast(null as varchar) as keys,
        topic,
        consumer_instance,
        return_type,
        consume_started_at,
        consume_ended_at,
        -- a SimpleConsumer's message is visible again when its invisible duration runs out,
        -- from the last changeInvisibleDuration, else the receive, else the start
        add_ms(
            coalesce(invisible_changed_at, received_at, consume_started_at), invisible_duration_ms
        ) as visible_again_at,
        'CONSUME_EVENT' as attempt_source
    from unique_events
),

-- the events are exact: a lifecycle that has them does not use its spans
spans as (
    select
        consumer_group,
        msg_id,
        span_id as request_id,
        delivery_attempt as observed_attempt,
        keys,
        topic,
        consumer_instance,
        return_type,
        consume_started_at,
        consume_ended_at,
        cast(null as timestamp) as visible_again_at,
        'OTEL_SPAN' as attempt_source
    from otel_spans
    anti join events using (consumer_group, msg_id)
),

grpc_deliveries as (
    select
        *,
        row_number() over (
            partition by consumer_group, msg_id
            order by consume_started_at, consume_ended_at, request_id
        ) as inferred_attempt
    from (select * from events union all select * from spans)
),

all_deliveries as (
    select * from acked_trace_deliveries
    union all by name
    select
        consumer_group,
        msg_id,
        request_id,
        -- the proxy sets deliveryAttempt = reconsumeTimes + 1 (spec §8.2)
        coalesce(observed_attempt, inferred_attempt) - 1 as reconsume_times,
        keys,
        topic,
        cast(null as varchar) as client_host,
        consumer_instance,
        return_type,
        return_type = 'SUCCESS' as is_success,
        epoch_ms(consume_ended_at) - epoch_ms(consume_started_at) as cost_ms,
        consume_started_at,
        consume_ended_at,
        visible_again_at,
        attempt_source,
        observed_attempt is not null as attempt_number_observed
    from grpc_deliveries
),

numbered as (
    select
        *,
        row_number() over (
            partition by consumer_group, msg_id
            order by consume_started_at, reconsume_times, request_id
        ) as delivery_number,
        min(consume_started_at) over (partition by consumer_group, msg_id) as first_consume_at
    from all_deliveries
)

select
    numbered.consumer_group,
    numbered.msg_id,
    numbered.request_id,
    numbered.delivery_number,
    numbered.reconsume_times,
    numbered.keys,
    numbered.client_host,
    numbered.consume_started_at,
    numbered.consume_ended_at,
    numbered.cost_ms,
    numbered.return_type,
    numbered.is_success,
    g.client_line,
    numbered.attempt_source,
    numbered.attempt_number_observed,
    numbered.consumer_instance,
    numbered.topic,
    numbered.visible_again_at,
    cast(numbered.first_consume_at as date) as lifecycle_date,
    hour(numbered.first_consume_at) as lifecycle_hour
from numbered
left join consumer_group_settings as g on numbered.consumer_group = g.consumer_group;

-- step: retry_decisions
-- One row per failed delivery: what the client and the broker did with it. Remoting lines (spec
-- §11, docs/rules.md): orderly retries locally until r >= max, then the DLQ; broadcasting
-- concurrent drops; retryQueueNums <= 0 drops; r >= max or a listener level < 0 is the DLQ; else
-- a retry at level 3 + r (or the listener's level) clamped to the cluster's top level. gRPC lines
-- (spec §8, docs/rules.md): attempt a = r + 1 retries while a < max attempts, then the DLQ (or a
-- drop), after the group retry policy's delay.
create or replace table retry_decisions as
with

failed as (
    select
        a.consumer_group,
        a.msg_id,
        a.request_id,
        a.delivery_number,
        a.reconsume_times,
        a.topic,
        a.visible_again_at,
        a.attempt_number_observed,
        a.consume_ended_at as failed_at,
        lead(a.consume_started_at) over next_delivery as next_started_at,
        lead(a.reconsume_times) over next_delivery as next_reconsume_times_seen,
        a.lifecycle_date,
        a.lifecycle_hour
    from consume_attempts as a
    window next_delivery as (partition by a.consumer_group, a.msg_id order by a.delivery_number)
    qualify not a.is_success
),

decided as (
    select
        f.*,
        g.* exclude (consumer_group),
        f.reconsume_times + 1 as attempt,
        case
            when g.is_grpc then
                case
                    when f.reconsume_times + 1 < g.max_delivery_attempts
                        then if(
                            g.consumer_kind = 'PUSH' and g.consume_mode = 'ORDERLY',
                            'LOCAL_RETRY',
                            'RETRY'
                        )
                    when not g.dead_letter_enabled or g.retry_queue_nums <= 0 then 'DROP'
                    else 'DLQ'
                end
            when g.consume_mode = 'ORDERLY'
                then if(
                    coalesce(f.reconsume_times >= g.effective_max_reconsume_times, false),
                    'DLQ',
                    'LOCAL_RETRY'
                )
            when g.message_model = 'BROADCASTING' then 'DROP'
            when g.retry_queue_nums <= 0 then 'DROP'
            when
                coalesce(f.reconsume_times >= g.effective_max_reconsume_times, false)
                or g.delay_level_when_next_consume < 0
                then 'DLQ'
            else 'RETRY'
        end as decision
    from failed as f
    inner join consumer_group_settings as g on f.consumer_group = g.consumer_group
),

leveled as (
    select
        *,
        -- Remoting: a retry's level, and an orderly DLQ send that a 4.x broker still delays by
        -- DELAY = 3 + r (spec §1.3; a 5.x broker enters it at once, §1.4)
        case
            when is_grpc then null
            when decision = 'RETRY'
                then least(
                    if(
                        delay_level_when_next_consume > 0,
                        delay_level_when_next_consume,
                        3 + reconsume_times
                    ),
                    max_delay_level
                )
            when decision = 'DLQ' and consume_mode = 'ORDERLY' and is_4x_broker
                then least(3 + reconsume_times, max_delay_level)
        end as delay_level,
        -- gRPC: the group retry policy's delay after failed attempt a (spec §8.1, §8.3)
        case
            when retry_policy_type = 'EXPONENTIAL'
                then cast(
                    least(
                        retry_policy_initial_ms
                        * pow(retry_policy_multiplier, least(greatest(attempt - 1, 0), 32)),
                        retry_policy_max_ms
                    ) as bigint
                )
            -- cloud-5 indexes the list the server's way, reconsumeTimes + 2
            when client_line = 'cloud-5'
                then retry_policy_delays_ms[
                    least(greatest(attempt, 1) + 2, len(retry_policy_delays_ms))
                ]
            -- grpc-5: the client indexes it by attempt - 1
            else retry_policy_delays_ms[least(greatest(attempt, 1), len(retry_policy_delays_ms))]
        end as policy_delay_ms
    from decided
),

timed as (
    select
        leveled.*,
        case
            when leveled.is_grpc then
                case
                    -- SimpleConsumer: visible again when its invisible duration runs out
                    when leveled.consumer_kind = 'SIMPLE'
                        then epoch_ms(leveled.visible_again_at) - epoch_ms(leveled.failed_at)
                    when leveled.consume_mode = 'ORDERLY' and leveled.decision = 'LOCAL_RETRY'
                        then if(
                            leveled.client_line = 'cloud-5',
                            leveled.fifo_retry_interval_ms,
                            leveled.policy_delay_ms
                        )
                    -- a FIFO client forwards its last failure to the DLQ at once
                    when leveled.consume_mode = 'ORDERLY' then null
                    else leveled.policy_delay_ms
                end
            when leveled.decision = 'LOCAL_RETRY' then leveled.effective_suspend_millis
            else levels.delay_ms
        end as delay_ms,
        -- the reconsumeTimes of the copy the decision makes
        case
            when leveled.decision = 'DROP' then null
            when leveled.is_grpc and leveled.decision in ('RETRY', 'LOCAL_RETRY')
                then leveled.reconsume_times + 1
            -- a FIFO client forwards the broker's copy, which its local retries never counted
            when
                leveled.is_grpc and leveled.consumer_kind = 'PUSH'
                and leveled.consume_mode = 'ORDERLY'
                then 1
            -- the proxy forwards the revived copy, counted to the max; the broker adds one
            when leveled.is_grpc then leveled.reconsume_times + 2
            -- an orderly 4.9.x client sends its DLQ copy with RECONSUME_TIME = r (spec §3.5)
            when
                leveled.decision = 'DLQ' and leveled.consume_mode = 'ORDERLY'
                and leveled.client_line = 'remoting-4.9'
                then leveled.reconsume_times
            else leveled.reconsume_times + 1
        end as next_reconsume_times,
        leveled.decision in ('RETRY', 'LOCAL_RETRY') as is_redelivered
    from leveled
    left join delay_levels as levels
        on leveled.delay_cluster = levels.broker_cluster and leveled.delay_level = levels.level
)

select
    timed.consumer_group,
    timed.msg_id,
    p.origin_msg_id,
    timed.request_id,
    timed.delivery_number,
    timed.reconsume_times,
    timed.failed_at,
    timed.decision,
    case
        when timed.decision <> 'DLQ' then null
        when timed.consume_mode <> 'ORDERLY' and timed.delay_level_when_next_consume < 0
            then 'CLIENT_REQUESTED'
        else 'MAX_RECONSUME_EXCEEDED'
    end as dlq_reason,
    timed.delay_level,
    timed.delay_ms,
    timed.delay_level - 1 as schedule_queue_id,
    case
        -- a gRPC consumer's revived copy goes to the pop retry topic (spec §8.4)
        when timed.is_grpc and timed.decision = 'RETRY'
            then '%RETRY%' || timed.consumer_group || '_' || timed.topic
        when timed.decision = 'RETRY' then '%RETRY%' || timed.consumer_group
        when timed.decision = 'DLQ' then '%DLQ%' || timed.consumer_group
    end as target_topic,
    timed.next_reconsume_times,
    if(timed.is_redelivered, add_ms(timed.failed_at, timed.delay_ms), null)
        as expected_redelivery_at,
    if(timed.is_redelivered, timed.next_started_at, null) as observed_redelivery_at,
    if(
        timed.is_redelivered,
        epoch_ms(timed.next_started_at) - epoch_ms(timed.failed_at) - timed.delay_ms,
        null
    ) as redelivery_lag_ms,
    if(timed.is_redelivered, timed.next_reconsume_times_seen, null) as observed_reconsume_times,
    if(timed.decision = 'DLQ', add_ms(timed.failed_at, coalesce(timed.delay_ms, 0)), null)
        as entered_dlq_at,
    if(timed.attempt_number_observed, 'EXACT', 'INFERRED_ATTEMPTS') as prediction_basis,
    timed.client_line,
    timed.lifecycle_date,
    timed.lifecycle_hour
from timed
left join published_messages as p on timed.msg_id = p.msg_id;

-- step: redeliveries
-- Why each delivery after the first came, told from the one before it: the first rule of
-- docs/rules.md ("Why each redelivery came") that holds. The lifecycles need two of the
-- answers: a success that a partial batch ack sent back did not consume the message, and a DLQ
-- decision that the client's fallback or local re-consume overturned is no dead letter.
create or replace table redeliveries as
with

sequenced as (
    select
        *,
        lag(delivery_number) over by_delivery as previous_delivery_number,
        lag(reconsume_times) over by_delivery as previous_reconsume_times,
        lag(consume_started_at) over by_delivery as previous_started_at,
        lag(consume_ended_at) over by_delivery as previous_ended_at,
        lag(is_success) over by_delivery as previous_is_success,
        -- a broadcasting group's copy to another instance carries the lifecycle's first count
        -- (spec §3.3, §3.5), and goes to an instance no earlier delivery named
        reconsume_times = first_value(reconsume_times) over by_delivery as carries_first_count,
        coalesce(consumer_instance, client_host) is not null and count(*) over (
            partition by consumer_group, msg_id, coalesce(consumer_instance, client_host)
            order by delivery_number
            rows between unbounded preceding and 1 preceding
        ) > 0 as same_instance_again
    from consume_attempts
    window by_delivery as (partition by consumer_group, msg_id order by delivery_number)
),

redelivered as (
    select
        consumer_group,
        msg_id,
        delivery_number,
        reconsume_times,
        consume_started_at,
        previous_delivery_number,
        previous_reconsume_times,
        previous_started_at,
        case
            when previous_is_success is null then 'IN_FLIGHT'
            when previous_is_success then 'SUCCESS'
            else 'FAILED'
        end as previous_outcome,
        epoch_ms(consume_started_at) - epoch_ms(previous_ended_at) as gap_ms,
        epoch_ms(consume_started_at) - epoch_ms(previous_started_at) as start_gap_ms,
        epoch_ms(previous_ended_at) - epoch_ms(previous_started_at) as previous_took_ms,
        same_instance_again,
        carries_first_count,
        lifecycle_date,
        lifecycle_hour
    from sequenced
    where previous_delivery_number is not null
),

with_rules as (
    select
        r.*,
        d.decision as previous_decision,
        if(d.decision in ('RETRY', 'LOCAL_RETRY'), d.delay_ms, null) as expected_delay_ms,
        g.consume_mode,
        g.message_model,
        g.is_grpc,
        g.delay_cluster,
        g.consume_timeout_minutes * 60000 as consume_timeout_ms,
        -- the level the broker's send-back without a listener level, and the client's
        -- fallback, use: 3 + r, clamped
        least(3 + r.previous_reconsume_times, g.max_delay_level) as fallback_delay_level
    from redelivered as r
    left join retry_decisions as d
        on
            r.consumer_group = d.consumer_group
            and r.msg_id = d.msg_id
            and r.previous_delivery_number = d.delivery_number
    inner join consumer_group_settings as g on r.consumer_group = g.consumer_group
),

-- the cluster's level whose delay is closest to the gap: a level the listener asked for
nearest_levels as (
    select
        w.consumer_group,
        w.msg_id,
        w.delivery_number,
        arg_min(l.delay_ms, abs(w.gap_ms - l.delay_ms)) as nearest_level_delay_ms
    from with_rules as w
    inner join delay_levels as l on w.delay_cluster = l.broker_cluster
    group by all
),

-- a copy stored in the group's DLQ since the delivery before: the message was dead-lettered
dead_lettered_between as (
    select distinct
        w.consumer_group,
        w.msg_id,
        w.delivery_number
    from with_rules as w
    inner join dlq_copies as c
        on
            w.consumer_group = c.consumer_group
            and w.msg_id = c.msg_id
            and w.previous_started_at <= c.stored_at
            and w.consume_started_at > c.stored_at
),

classified as (
    select
        w.*,
        fallback.delay_ms as fallback_delay_ms,
        n.nearest_level_delay_ms,
        coalesce(w.previous_decision = 'DLQ' or b.msg_id is not null, false)
            as previous_dead_lettered,
        -- the paths of the remoting client (timeout cleaner, partial ack, fallback, levels)
        not w.is_grpc and w.consume_mode <> 'ORDERLY' as remoting_concurrent
    from with_rules as w
    left join delay_levels as fallback
        on w.delay_cluster = fallback.broker_cluster and w.fallback_delay_level = fallback.level
    left join nearest_levels as n
        on
            w.consumer_group = n.consumer_group
            and w.msg_id = n.msg_id
            and w.delivery_number = n.delivery_number
    left join dead_lettered_between as b
        on
            w.consumer_group = b.consumer_group
            and w.msg_id = b.msg_id
            and w.delivery_number = b.delivery_number
)

select
    consumer_group,
    msg_id,
    delivery_number,
    reconsume_times,
    consume_started_at,
    previous_delivery_number,
    previous_reconsume_times,
    previous_outcome,
    previous_decision,
    gap_ms,
    start_gap_ms,
    expected_delay_ms,
    case
        -- an operator re-sent a dead letter as a new message: its count starts again
        when previous_dead_lettered and reconsume_times <= previous_reconsume_times
            then 'RESENT'
        -- every instance of a broadcasting group receives the message: a copy, not a retry
        when
            message_model = 'BROADCASTING' and not same_instance_again and carries_first_count
            and reconsume_times <= previous_reconsume_times
            then 'BROADCAST_COPY'
        when reconsume_times <= previous_reconsume_times then 'DUPLICATE_DELIVERY'
        when reconsume_times > previous_reconsume_times + 1 then 'UNEXPLAINED'
        -- the expiry cleaner sent back a listener held past the consume timeout (spec §3.6)
        when
            remoting_concurrent
            and coalesce(previous_took_ms >= consume_timeout_ms, true)
            and start_gap_ms >= consume_timeout_ms
            and start_gap_ms <= 2 * consume_timeout_ms + 10000 + 2000
            then 'CONSUME_TIMEOUT'
        -- a success acked only up to ackIndex sends the rest back at level 3 + r (spec §3.3)
        when
            not is_grpc and previous_outcome = 'SUCCESS'
            and fits_delay(gap_ms, fallback_delay_ms)
            then 'PARTIAL_BATCH_ACK'
        when previous_outcome <> 'FAILED' then 'UNEXPLAINED'
        when fits_delay(gap_ms, expected_delay_ms) then 'SCHEDULED'
        -- send-back and fallback both failed: the client re-consumes after 5 s (spec §3.3)
        when remoting_concurrent and fits_delay(gap_ms, 5000) then 'LOCAL_RECONSUME'
        -- the send-back failed: the client re-sent it at 3 + r itself (spec §3.4)
        when remoting_concurrent and fits_delay(gap_ms, fallback_delay_ms) then 'CLIENT_FALLBACK'
        when remoting_concurrent and fits_delay(gap_ms, nearest_level_delay_ms)
            then 'LISTENER_LEVEL'
        when gap_ms > expected_delay_ms then 'SCHEDULED'
        else 'UNEXPLAINED'
    end as redelivery_cause,
    lifecycle_date,
    lifecycle_hour
from classified;

-- step: message_lifecycles
-- One row per (group, message): its deliveries and where it is now, against the watermark. A
-- dead-letter copy in the exports (or a 5.x broker's DLQ line) is evidence too: it puts a message
-- in the DLQ when it came from the last delivery, or from a later one the trace lacks. A dead
-- letter consumed later (an operator re-sent it) is CONSUMED, with its DLQ entry kept.
create or replace table message_lifecycles as
with

-- a success whose message came back at r + 1 after level 3 + r was acked only up to ackIndex
partially_acked as (
    select
        consumer_group,
        msg_id,
        previous_delivery_number as delivery_number
    from redeliveries
    where redelivery_cause = 'PARTIAL_BATCH_ACK'
),

consumptions as (
    select
        a.*,
        a.is_success and p.msg_id is null as is_consumption
    from consume_attempts as a
    left join partially_acked as p
        on
            a.consumer_group = p.consumer_group
            and a.msg_id = p.msg_id
            and a.delivery_number = p.delivery_number
),

-- a DLQ decision the message came back from never reached the DLQ: the client's fallback
-- ignores the level, or it re-consumed the message itself (spec §3.3, §3.4)
overturned_decisions as (
    select
        consumer_group,
        msg_id,
        previous_delivery_number as delivery_number
    from redeliveries
    where previous_decision = 'DLQ' and redelivery_cause in ('CLIENT_FALLBACK', 'LOCAL_RECONSUME')
),

predicted_dead_letters as (
    select
        d.consumer_group,
        d.msg_id,
        min(d.entered_dlq_at) as first_entered_dlq_at
    from retry_decisions as d
    anti join overturned_decisions as o
        on
            d.consumer_group = o.consumer_group
            and d.msg_id = o.msg_id
            and d.delivery_number = o.delivery_number
    where d.decision = 'DLQ'
    group by all
),

observed_dead_letters as (
    select
        consumer_group,
        msg_id,
        min(stored_at) as first_stored_at
    from (
        select consumer_group, msg_id, stored_at from dlq_copies
        union all
        select consumer_group, msg_id, stored_at from broker_dlq_lines
    )
    group by all
),

summary as (
    select
        consumer_group,
        msg_id,
        count(*) as deliveries,
        count(*) filter (where is_consumption) as successful_deliveries,
        max(delivery_number) as last_delivery_number,
        arg_min_null(reconsume_times, delivery_number) as first_reconsume_times,
        arg_max_null(keys, delivery_number) as consumer_keys,
        arg_max_null(topic, delivery_number) as consumer_topic,
        arg_max_null(client_line, delivery_number) as client_line,
        min(consume_started_at) as first_consume_at,
        max(consume_started_at) as last_consume_at,
        min(consume_ended_at) filter (where is_consumption) as consumed_at,
        max(reconsume_times) as max_reconsume_times,
        min(lifecycle_date) as lifecycle_date,
        min(lifecycle_hour) as lifecycle_hour
    from consumptions
    group by all
),

last_deliveries as (
    select
        s.*,
        a.is_success as last_is_success,
        a.reconsume_times as last_reconsume_times,
        a.return_type as last_return_type,
        d.decision as last_decision,
        d.expected_redelivery_at as last_expected_redelivery_at
    from summary as s
    inner join consume_attempts as a
        on
            s.consumer_group = a.consumer_group
            and s.msg_id = a.msg_id
            and s.last_delivery_number = a.delivery_number
    left join retry_decisions as d
        on
            a.consumer_group = d.consumer_group
            and a.msg_id = d.msg_id
            and a.delivery_number = d.delivery_number
),

-- A copy came from the last traced delivery when it stores that delivery's r + 1 (broker path)
-- or r (orderly 4.9.x client), or from a later delivery the trace lacks when it counts more and
-- was stored after the last start; a 5.x broker's DLQ line names no count: one logged after the
-- last start.
last_delivery_copies as (
    select
        l.consumer_group,
        l.msg_id
    from last_deliveries as l
    inner join dlq_copies as c on l.consumer_group = c.consumer_group and l.msg_id = c.msg_id
    where
        c.reconsume_times in (l.last_reconsume_times, l.last_reconsume_times + 1)
        or (c.reconsume_times > l.last_reconsume_times + 1 and c.stored_at >= l.last_consume_at)

    union

    select
        l.consumer_group,
        l.msg_id
    from last_deliveries as l
    inner join broker_dlq_lines as b
        on
            l.consumer_group = b.consumer_group
            and l.msg_id = b.msg_id
            and l.last_consume_at <= b.stored_at
),

with_dead_letters as (
    select
        l.*,
        coalesce(p.first_entered_dlq_at, o.first_stored_at) as first_dlq_at,
        c.msg_id is not null as last_delivery_is_dead_lettered
    from last_deliveries as l
    left join predicted_dead_letters as p
        on l.consumer_group = p.consumer_group and l.msg_id = p.msg_id
    left join observed_dead_letters as o
        on l.consumer_group = o.consumer_group and l.msg_id = o.msg_id
    left join last_delivery_copies as c
        on l.consumer_group = c.consumer_group and l.msg_id = c.msg_id
),

-- the first successful delivery that started after the DLQ entry: the message was re-sent
recoveries as (
    select
        w.consumer_group,
        w.msg_id,
        min(a.consume_ended_at) as recovered_at
    from with_dead_letters as w
    inner join consume_attempts as a
        on
            w.consumer_group = a.consumer_group
            and w.msg_id = a.msg_id
            and w.first_dlq_at <= a.consume_started_at
    where a.is_success
    group by all
),

judged as (
    select
        w.*,
        r.recovered_at,
        case
            when w.consumed_at is not null then 'CONSUMED'
            when w.last_decision = 'DLQ' then 'DLQ'
            when w.last_delivery_is_dead_lettered then 'DLQ'
            when w.last_is_success is null then 'IN_FLIGHT'
            when w.last_decision = 'DROP' then 'DROPPED'
            -- a retry due after the watermark less the grace is still awaited
            when
                w.last_expected_redelivery_at
                >= add_ms(
                    (select watermark_at from watermark), -getvariable('retry_overdue_grace_ms')
                )
                then 'WAITING_RETRY'
            else 'RETRY_OVERDUE'
        end as final_state
    from with_dead_letters as w
    left join recoveries as r on w.consumer_group = r.consumer_group and w.msg_id = r.msg_id
)

select
    j.consumer_group,
    j.msg_id,
    p.origin_msg_id,
    coalesce(p.origin_kind, 'UNKNOWN') as origin_kind,
    p.published_offset_msg_id,
    coalesce(p.topic, j.consumer_topic) as topic,
    coalesce(p.keys, j.consumer_keys) as keys,
    p.tags,
    j.deliveries,
    j.successful_deliveries,
    -- a broadcasting group's copies to its other instances, and the failures dropped unretried
    (
        select count(*) from redeliveries as r
        where
            r.consumer_group = j.consumer_group and r.msg_id = j.msg_id
            and r.redelivery_cause = 'BROADCAST_COPY'
    ) as broadcast_copies,
    (
        select count(*) from retry_decisions as d
        where d.consumer_group = j.consumer_group and d.msg_id = j.msg_id and d.decision = 'DROP'
    ) as dropped_deliveries,
    j.first_reconsume_times,
    j.max_reconsume_times,
    j.last_reconsume_times,
    j.last_return_type,
    j.final_state,
    p.published_at,
    j.first_consume_at,
    j.last_consume_at,
    j.consumed_at,
    j.first_dlq_at as dlq_at,
    j.recovered_at,
    if(
        j.final_state in ('WAITING_RETRY', 'RETRY_OVERDUE'), j.last_expected_redelivery_at, null
    ) as next_delivery_expected_at,
    epoch_ms(j.consumed_at) - epoch_ms(j.first_consume_at) as time_to_success_ms,
    j.client_line,
    j.lifecycle_date,
    j.lifecycle_hour
from judged as j
left join published_messages as p on j.msg_id = p.msg_id;

-- step: dlq_messages
-- The dead-letter set: the rules' DLQ decisions (PREDICTED) matched with the copies in the dlq/
-- exports and the 5.x brokers' DLQ lines (OBSERVED), per (group, message) in time order; BOTH
-- when they agree. A one-sided entry says why (docs/rules.md, "Dead letters predicted and
-- observed"); a recovered one says when and by whom.
create or replace table dlq_messages as
with

overturned_decisions as (
    select
        consumer_group,
        msg_id,
        previous_delivery_number as delivery_number
    from redeliveries
    where previous_decision = 'DLQ' and redelivery_cause in ('CLIENT_FALLBACK', 'LOCAL_RECONSUME')
),

predicted as (
    select
        d.consumer_group,
        d.msg_id,
        d.target_topic as dlq_topic,
        d.next_reconsume_times as predicted_reconsume_times,
        d.failed_at as last_failed_at,
        d.entered_dlq_at as predicted_entered_dlq_at,
        d.dlq_reason,
        d.prediction_basis,
        row_number() over (
            partition by d.consumer_group, d.msg_id order by d.entered_dlq_at, d.delivery_number
        ) as entry_number
    from retry_decisions as d
    anti join overturned_decisions as o
        on
            d.consumer_group = o.consumer_group
            and d.msg_id = o.msg_id
            and d.delivery_number = o.delivery_number
    where d.decision = 'DLQ'
),

-- a broker DLQ line is the same evidence as an exported copy, without its count and
-- properties: where both tell one entry (stored within 5 s), the copy is kept
logged_only as (
    select b.*
    from broker_dlq_lines as b
    anti join dlq_copies as c
        on
            b.consumer_group = c.consumer_group
            and b.msg_id = c.msg_id
            and abs(epoch_ms(b.stored_at) - epoch_ms(c.stored_at)) <= 5000
),

observed as (
    select
        *,
        row_number() over (
            partition by consumer_group, msg_id order by stored_at, offset_msg_id nulls first
        ) as entry_number
    from (
        select
            consumer_group,
            msg_id,
            namespace,
            dlq_topic,
            offset_msg_id,
            stored_at,
            reconsume_times,
            retry_topic,
            origin_msg_id,
            delay_property,
            keys,
            tags,
            copies_landed,
            'DLQ_EXPORT' as observed_in
        from dlq_copies

        union all

        select
            consumer_group,
            msg_id,
            namespace,
            dlq_topic,
            null as offset_msg_id,
            stored_at,
            null as reconsume_times,
            original_topic as retry_topic,
            null as origin_msg_id,
            null as delay_property,
            null as keys,
            null as tags,
            null as copies_landed,
            'BROKER_LOG' as observed_in
        from logged_only
    )
),

-- what each group's export covers: a copy stored after its last one was not exported yet
export_windows as (
    select
        consumer_group,
        max(stored_at) as export_last_stored_at
    from dlq_copies
    group by all
),

-- the namespace a group's dead letters were seen in, for those predicted only
group_namespaces as (
    select
        consumer_group,
        max(namespace) as namespace
    from observed
    group by all
),

-- The copies the count cut-off wrote imply the max the consumer ran with: the failed
-- delivery's count is the stored count - 1 (broker path) or the stored count (orderly 4.9.x
-- client). Client-fallback copies (DELAY other than 0 on a concurrent group) are left out.
cut_off_copies as (
    select
        c.consumer_group,
        if(
            g.consume_mode = 'ORDERLY' and g.client_line = 'remoting-4.9',
            c.reconsume_times,
            c.reconsume_times - 1
        ) as failed_reconsume_times
    from dlq_copies as c
    inner join consumer_group_settings as g on c.consumer_group = g.consumer_group
    where not (g.consume_mode <> 'ORDERLY' and coalesce(c.delay_property, '0') <> '0')
),

implied_candidates as (
    select
        consumer_group,
        failed_reconsume_times,
        sum(count(*)) over (partition by consumer_group) as cut_off_copies,
        row_number() over (
            partition by consumer_group order by count(*) desc, failed_reconsume_times desc
        ) as candidate_rank
    from cut_off_copies
    group by consumer_group, failed_reconsume_times
),

traced_highest_counts as (
    select
        consumer_group,
        max(max_reconsume_times) as highest_traced_reconsume_times
    from message_lifecycles
    group by all
),

-- drift: on three copies or more, for a group whose rules cut off by count, the implied max is
-- not the effective one, and no traced delivery counts more than it
implied_max as (
    select
        i.consumer_group,
        i.failed_reconsume_times as implied_max_reconsume_times,
        coalesce(
            i.cut_off_copies >= 3
            and (
                g.consume_mode = 'ORDERLY'
                or (
                    g.message_model = 'CLUSTERING'
                    and g.retry_queue_nums > 0
                    and g.delay_level_when_next_consume >= 0
                )
            )
            and i.failed_reconsume_times <> coalesce(g.effective_max_reconsume_times, -1)
            and coalesce(t.highest_traced_reconsume_times <= i.failed_reconsume_times, true),
            false
        ) as max_reconsume_drift
    from implied_candidates as i
    inner join consumer_group_settings as g on i.consumer_group = g.consumer_group
    left join traced_highest_counts as t on i.consumer_group = t.consumer_group
    where i.candidate_rank = 1
),

matched as (
    select
        coalesce(p.consumer_group, o.consumer_group) as consumer_group,
        coalesce(p.msg_id, o.msg_id) as msg_id,
        coalesce(p.entry_number, o.entry_number) as dlq_entry_number,
        coalesce(o.dlq_topic, p.dlq_topic) as dlq_topic,
        o.namespace as observed_namespace,
        p.predicted_reconsume_times,
        p.last_failed_at,
        p.predicted_entered_dlq_at,
        p.dlq_reason,
        p.prediction_basis,
        o.observed_in,
        o.offset_msg_id as observed_offset_msg_id,
        o.stored_at as observed_stored_at,
        o.reconsume_times as observed_reconsume_times,
        o.retry_topic as observed_retry_topic,
        o.origin_msg_id as observed_origin_msg_id,
        o.delay_property as observed_delay_property,
        o.keys as observed_keys,
        o.tags as observed_tags,
        o.copies_landed as observed_copies_landed,
        case
            when p.msg_id is not null and o.msg_id is not null then 'BOTH'
            when p.msg_id is not null then 'PREDICTED'
            else 'OBSERVED'
        end as evidence
    from predicted as p
    full outer join observed as o
        on
            p.consumer_group = o.consumer_group
            and p.msg_id = o.msg_id
            and p.entry_number = o.entry_number
),

with_context as (
    select
        m.*,
        l.msg_id is not null as is_traced,
        l.origin_msg_id as published_origin_msg_id,
        l.origin_kind,
        l.published_offset_msg_id,
        l.topic as lifecycle_topic,
        l.keys as lifecycle_keys,
        l.tags as lifecycle_tags,
        l.deliveries,
        l.max_reconsume_times,
        l.last_reconsume_times,
        l.last_return_type,
        l.last_consume_at,
        l.recovered_at as resent_recovered_at,
        l.lifecycle_date,
        l.lifecycle_hour,
        g.consume_mode,
        g.consume_timeout_minutes,
        g.effective_max_reconsume_times,
        g.is_4x_broker,
        coalesce(g.is_grpc, false) as is_grpc,
        if(
            g.consume_mode = 'ORDERLY' and g.client_line = 'remoting-4.9',
            m.observed_reconsume_times,
            m.observed_reconsume_times - 1
        ) as observed_failed_reconsume_times,
        coalesce(i.max_reconsume_drift, false) as max_reconsume_drift,
        i.implied_max_reconsume_times,
        e.export_last_stored_at,
        coalesce(m.observed_namespace, n.namespace) as namespace,
        (select max(stored_at) from broker_dlq_lines) as log_last_stored_at
    from matched as m
    left join message_lifecycles as l on m.consumer_group = l.consumer_group and m.msg_id = l.msg_id
    left join consumer_group_settings as g on m.consumer_group = g.consumer_group
    left join implied_max as i on m.consumer_group = i.consumer_group
    left join export_windows as e on m.consumer_group = e.consumer_group
    left join group_namespaces as n on m.consumer_group = n.consumer_group
),

-- the traced failure an observed-only copy came from: the latest failed delivery at the count
-- the copy implies, ended before the copy was stored (a minute allowed for the clocks)
deciding_failures as (
    select
        w.consumer_group,
        w.msg_id,
        w.dlq_entry_number,
        arg_max_null(d.decision, d.failed_at) as deciding_decision
    from with_context as w
    inner join retry_decisions as d
        on
            w.consumer_group = d.consumer_group
            and w.msg_id = d.msg_id
            and w.observed_failed_reconsume_times = d.reconsume_times
            and d.failed_at <= add_ms(w.observed_stored_at, 60000)
    where w.evidence = 'OBSERVED'
    group by all
),

reconciled as (
    select
        w.*,
        case
            when w.evidence = 'BOTH' then null
            -- 5.x: the dead letters are seen in the brokers' DLQ log (or an export)
            when
                w.is_grpc and w.evidence = 'PREDICTED'
                and coalesce(w.log_last_stored_at, w.export_last_stored_at) is null
                then 'GROUP_NOT_EXPORTED'
            when
                w.is_grpc and w.evidence = 'PREDICTED'
                and w.predicted_entered_dlq_at
                > greatest(w.log_last_stored_at, w.export_last_stored_at)
                then 'AFTER_EXPORT_WINDOW'
            when w.is_grpc and w.evidence = 'PREDICTED' then 'LOG_LINE_MISSING'
            when w.is_grpc and not w.is_traced then 'NOT_IN_TRACE'
            when w.is_grpc then 'LAST_DELIVERY_NOT_IN_TRACE'
            -- remoting
            when w.evidence = 'PREDICTED' and w.export_last_stored_at is null
                then 'GROUP_NOT_EXPORTED'
            when w.evidence = 'PREDICTED' and w.predicted_entered_dlq_at > w.export_last_stored_at
                then 'AFTER_EXPORT_WINDOW'
            when w.evidence = 'PREDICTED' then 'UNEXPLAINED'
            when not w.is_traced then 'NOT_IN_TRACE'
            when
                w.observed_failed_reconsume_times > w.max_reconsume_times
                or (
                    w.observed_failed_reconsume_times = w.last_reconsume_times
                    and w.last_return_type is null
                    and w.observed_stored_at >= w.last_consume_at
                    and w.observed_stored_at
                    < add_ms(w.last_consume_at, w.consume_timeout_minutes * 60000)
                )
                then 'LAST_DELIVERY_NOT_IN_TRACE'
            -- the client's fallback copy (DELAY other than 0) reaches the DLQ at r + 1 >= max on
            -- a 4.x broker, r + 1 > max on 5.x (spec §1.3, §1.4)
            when
                w.consume_mode <> 'ORDERLY'
                and coalesce(w.observed_delay_property, '0') <> '0'
                and if(
                    w.is_4x_broker,
                    w.observed_reconsume_times >= w.effective_max_reconsume_times,
                    w.observed_reconsume_times > w.effective_max_reconsume_times
                )
                then 'CLIENT_FALLBACK'
            when
                w.observed_failed_reconsume_times = w.last_reconsume_times
                and coalesce(w.last_return_type = 'TIME_OUT', true)
                then 'CONSUME_TIMEOUT'
            when
                w.max_reconsume_drift
                and w.observed_failed_reconsume_times = w.implied_max_reconsume_times
                then 'MAX_RECONSUME_DRIFT'
            when f.deciding_decision = 'RETRY' then 'LISTENER_REQUESTED_DLQ'
            else 'UNEXPLAINED'
        end as reconciliation_reason
    from with_context as w
    left join deciding_failures as f
        on
            w.consumer_group = f.consumer_group
            and w.msg_id = f.msg_id
            and w.dlq_entry_number = f.dlq_entry_number
),

-- A group that consumes `%DLQ%<group>` receives the stored copies: its first delivery of a
-- message carries the copy's count (> 0), after the entry. A group whose lifecycles are at
-- least half such deliveries is that group's recovery consumer.
recovery_deliveries as (
    select
        rec.consumer_group as recovery_consumer_group,
        r.consumer_group,
        r.msg_id,
        rec.consumed_at
    from message_lifecycles as rec
    inner join reconciled as r
        on
            rec.msg_id = r.msg_id
            and rec.consumer_group <> r.consumer_group
            and rec.first_consume_at >= coalesce(r.observed_stored_at, r.predicted_entered_dlq_at)
    where rec.first_reconsume_times > 0
),

recovery_candidates as (
    select
        d.recovery_consumer_group,
        d.consumer_group,
        count(distinct d.msg_id) as recovered_messages,
        max(sizes.lifecycles) as lifecycles
    from recovery_deliveries as d
    inner join (
        select
            consumer_group,
            count(*) as lifecycles
        from message_lifecycles
        group by consumer_group
    ) as sizes on d.recovery_consumer_group = sizes.consumer_group
    group by d.recovery_consumer_group, d.consumer_group
),

recovery_consumers as (
    select
        recovery_consumer_group,
        consumer_group
    from recovery_candidates
    where 2 * recovered_messages >= lifecycles
    qualify row_number() over (
        partition by recovery_consumer_group order by recovered_messages desc, consumer_group asc
    ) = 1
),

recovered_by_consumer as (
    select
        d.consumer_group,
        d.msg_id,
        min(d.consumed_at) as consumed_at
    from recovery_deliveries as d
    semi join recovery_consumers as c
        on
            d.recovery_consumer_group = c.recovery_consumer_group
            and d.consumer_group = c.consumer_group
    group by all
),

recovery_consumer_of_group as (
    select
        consumer_group,
        min(recovery_consumer_group) as recovery_consumer_group
    from recovery_consumers
    group by all
)

select
    r.consumer_group,
    r.namespace,
    -- a predicted-only entry's topic in its group's namespace, where one was seen
    if(
        r.observed_in is null and r.namespace is not null,
        '%DLQ%' || r.namespace || '%' || r.consumer_group,
        r.dlq_topic
    ) as dlq_topic,
    r.msg_id,
    r.dlq_entry_number,
    -- the Pub's offset id for a normal message, else a broker-path copy's ORIGIN_MESSAGE_ID (on
    -- client paths it is the msgId or missing, spec §3.4, §3.5; a gRPC copy's names the last
    -- pop-retry copy, spec §8.3)
    coalesce(
        r.published_origin_msg_id,
        case
            when r.is_grpc then null
            when r.observed_origin_msg_id <> r.msg_id then r.observed_origin_msg_id
        end
    ) as origin_msg_id,
    coalesce(r.origin_kind, 'UNKNOWN') as origin_kind,
    r.published_offset_msg_id,
    -- a 5.x copy's RETRY_TOPIC or logged originalTopic can be the pop retry topic (§8.3)
    coalesce(
        r.lifecycle_topic,
        if(
            pop_separator_at(r.observed_retry_topic, r.consumer_group) > 0,
            substr(
                r.observed_retry_topic,
                pop_separator_at(r.observed_retry_topic, r.consumer_group) + 1
            ),
            r.observed_retry_topic
        )
    ) as topic,
    coalesce(r.lifecycle_keys, r.observed_keys) as keys,
    coalesce(r.lifecycle_tags, r.observed_tags) as tags,
    coalesce(r.observed_reconsume_times, r.predicted_reconsume_times) as reconsume_times,
    r.deliveries,
    r.last_failed_at,
    coalesce(r.predicted_entered_dlq_at, r.observed_stored_at) as entered_dlq_at,
    case
        when r.dlq_reason is not null then r.dlq_reason
        when r.reconciliation_reason = 'LISTENER_REQUESTED_DLQ' then 'CLIENT_REQUESTED'
        when
            r.reconciliation_reason
            in ('NOT_IN_TRACE', 'LAST_DELIVERY_NOT_IN_TRACE', 'UNEXPLAINED')
            then 'UNKNOWN'
        else 'MAX_RECONSUME_EXCEEDED'
    end as reason,
    r.evidence,
    if(r.evidence <> 'OBSERVED', r.prediction_basis, null) as prediction_basis,
    r.observed_in,
    r.reconciliation_reason,
    r.predicted_reconsume_times,
    r.predicted_entered_dlq_at,
    r.observed_offset_msg_id,
    r.observed_stored_at,
    r.observed_reconsume_times,
    r.observed_retry_topic,
    r.observed_origin_msg_id,
    r.observed_copies_landed,
    r.implied_max_reconsume_times,
    r.max_reconsume_drift,
    case
        when c.consumed_at is null or r.resent_recovered_at <= c.consumed_at
            then r.resent_recovered_at
        else c.consumed_at
    end as recovered_at,
    case
        when
            r.resent_recovered_at is not null
            and (c.consumed_at is null or r.resent_recovered_at <= c.consumed_at)
            then 'RESEND'
        when c.consumed_at is not null then 'RECOVERY_CONSUMER'
    end as recovered_by,
    g.recovery_consumer_group,
    cast(coalesce(r.predicted_entered_dlq_at, r.observed_stored_at) as date) as dlq_date,
    r.lifecycle_date,
    r.lifecycle_hour
from reconciled as r
left join recovered_by_consumer as c on r.consumer_group = c.consumer_group and r.msg_id = c.msg_id
left join recovery_consumer_of_group as g on r.consumer_group = g.consumer_group;
