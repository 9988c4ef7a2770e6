{{ config(materialized='incremental', incremental_strategy='append') }}

{#- The consumer groups named in each load's SubBefore records: consumer_group_settings reads
    this small table instead of every SubBefore record ever loaded. -#}
{%- set loaded_before = max_load_id(this) %}

with

sub_before as (
    select
        load_id,
        consumer_group
    from {{ ref('stg_trace__sub_before') }}
    where load_id > {{ loaded_before }}
),

final as (
    select distinct
        load_id,
        consumer_group
    from sub_before
)

select * from final
