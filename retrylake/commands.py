"""What each CLI command does: session, configuration check, dbt, summaries."""

from __future__ import annotations

import shutil
from pathlib import Path

from retrylake.config_check import check_configuration
from retrylake.dbt_runner import run_dbt
from retrylake.lakehouse import Lakehouse
from retrylake.spark import start_session


def build(
    project_dir: Path,
    lakehouse: Lakehouse,
    *,
    full_refresh: bool = False,
    select: list[str] | None = None,
) -> None:
    """`dbt build` on the embedded session; the configuration is checked before any change."""
    check_configuration(project_dir)
    command = ["build"]
    if full_refresh:
        command.append("--full-refresh")
    if select:
        command += ["--select", *select]
    with lakehouse.lock():
        start_session(lakehouse)
        run_dbt(command, project_dir, lakehouse)


def dbt(project_dir: Path, lakehouse: Lakehouse, args: list[str]) -> None:
    """Any dbt command, on the same session and with the same UDFs as `build`."""
    if args[0] in ("build", "run", "seed"):
        check_configuration(project_dir)
    with lakehouse.lock():
        start_session(lakehouse)
        run_dbt(args, project_dir, lakehouse)


SUMMARY_SQL = """
select
    consumer_group,
    count(*) as messages,
    sum(deliveries) as deliveries,
    sum(deliveries - 1) as retries,
    count_if(final_state = 'CONSUMED') as consumed,
    count_if(final_state = 'DLQ') as dlq,
    count_if(final_state = 'DROPPED') as dropped,
    count_if(final_state in ('WAITING_RETRY', 'RETRY_OVERDUE')) as waiting,
    count_if(final_state = 'IN_FLIGHT') as in_flight
from retrylake.message_lifecycles
group by consumer_group
order by consumer_group
"""


def demo(project_dir: Path, lakehouse: Lakehouse) -> None:
    """Write the sample landing set into a fresh landing zone, build, and print a summary."""
    from retrylake.sample import write_sample

    check_configuration(project_dir)
    with lakehouse.lock():
        if lakehouse.landing.exists():
            shutil.rmtree(lakehouse.landing)
        sample = write_sample(lakehouse.landing)
        print(
            f"Wrote {sample.landing_lines} trace lines for {len(sample.lifecycles)} lifecycles "
            f"to {lakehouse.landing}"
        )
        spark = start_session(lakehouse)
        run_dbt(["build", "--full-refresh"], project_dir, lakehouse)
        rows = spark.sql(SUMMARY_SQL).collect()
        quarantined = spark.sql("select count(*) from retrylake.landing_quarantine").first()[0]
    print()
    print(
        format_table(
            rows,
            [
                "consumer_group",
                "messages",
                "deliveries",
                "retries",
                "consumed",
                "dlq",
                "dropped",
                "waiting",
                "in_flight",
            ],
        )
    )
    print(f"\nQuarantined landing lines and records: {quarantined}")
    print(
        f"Marts are in {lakehouse.warehouse / 'retrylake.db'}; "
        'query them with `retrylake dbt -- show --inline "select ..."`.'
    )


def format_table(rows: list, columns: list[str]) -> str:
    cells = [[str(row[column]) for column in columns] for row in rows]
    widths = [
        max(len(column), *(len(line[i]) for line in cells)) for i, column in enumerate(columns)
    ]
    lines = ["  ".join(column.ljust(width) for column, width in zip(columns, widths, strict=True))]
    lines.append("  ".join("-" * width for width in widths))
    lines += [
        "  ".join(
            cell.rjust(width) if i else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(line, widths, strict=True))
        )
        for line in cells
    ]
    return "\n".join(lines)
