"""Reading built marts with DuckDB, without Java: queries, the HTML report, the DLQ work list."""
