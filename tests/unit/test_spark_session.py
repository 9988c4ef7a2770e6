"""The embedded session's scheduler: dbt runs several models at once on two cores."""

import pytest

pytestmark = pytest.mark.spark


def test_jobs_of_concurrent_models_share_the_cores(spark) -> None:
    # First in, first out, a small model's job waits for every task of a large one submitted
    # before it. Jobs with no pool of their own go to the default pool, which must share too.
    context = spark.sparkContext._jsc.sc()
    assert context.getSchedulingMode().toString() == "FAIR"
    default_pool = context.getPoolForName("default").get()
    assert default_pool.schedulingMode().toString() == "FAIR"
