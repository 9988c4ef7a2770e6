"""retrylake: a ledger of RocketMQ consumption attempts, retries and dead letters on dbt + Spark."""

__version__ = "0.1.0"
