-- noqa: disable=LT02
{#- (The noqa above: sqlfluff lays out the loops over the keys as if they were one query.) -#}
{#- The records of `new_records` (a relation of the loads counted now: the `keys`, load_id,
    source_file, line_number) landed again, counted per load and file for landing_ignored. A
    record is landed again when an earlier copy has its key (null-safe): in a load counted before
    (`history`'s rows up to load `counted` matching `history_condition`, looked up for the new
    keys only), or earlier among the new records by load, file and line. The new keys are
    broadcast to the look-up, so the history is scanned but not shuffled, unless a run catches up
    broadcast_max_new_records records or more; nothing is looked up when nothing was counted
    before. -#}
{% macro landed_again(source, reason, new_records, history, history_condition, keys, counted) %}
    {%- set spread = counted > 0 and (count_rows(history, 'load_id > ' ~ counted) | int)
        >= (var('broadcast_max_new_records') | int) %}
    select
        '{{ source }}' as source,
        ranked.load_id,
        ranked.source_file as file,
        '{{ reason }}' as reason,
        count(*) as records
    from (
        select
            new_records.load_id,
            new_records.source_file,
            coalesce(seen_before.seen_before, false) as seen_before,
            row_number() over (
                partition by
                    {%- for key in keys %} new_records.{{ key }}{{ ',' if not loop.last }}{% endfor %}
                order by new_records.load_id, new_records.source_file, new_records.line_number
            ) as copy_number
        from {{ new_records }} as new_records
        left join (
            select {{ '/*+ broadcast(new_records) */' if not spread }} distinct
                {%- for key in keys %}
                earlier.{{ key }},
                {%- endfor %}
                true as seen_before
            from {{ history }} as earlier
            left semi join {{ new_records }} as new_records
                on
                    {%- for key in keys %}
                    {{ 'and ' if not loop.first }}earlier.{{ key }} <=> new_records.{{ key }}
                    {%- endfor %}
            where
                {{ history_condition }}
                and {{ 'earlier.load_id <= ' ~ counted if counted > 0 else 'false' }}
        ) as seen_before
            on
                {%- for key in keys %}
                {{ 'and ' if not loop.first }}new_records.{{ key }} <=> seen_before.{{ key }}
                {%- endfor %}
    ) as ranked
    where ranked.copy_number > 1 or ranked.seen_before
    group by ranked.load_id, ranked.source_file
{% endmacro %}
