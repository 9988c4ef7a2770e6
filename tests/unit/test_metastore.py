"""The PostgreSQL metastore's URL, and a lakehouse keeping the metastore it was built with."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrylake.errors import UsageError
from retrylake.lakehouse import Lakehouse
from retrylake.metastore import (
    MetastoreError,
    PostgresMetastore,
    jdbc_jar,
    lakehouse_metastore,
)


def test_a_url_names_user_host_port_and_database():
    metastore = PostgresMetastore.parse("postgresql://hive@db.example:6543/hive_metastore")
    assert metastore == PostgresMetastore("hive", "db.example", 6543, "hive_metastore")
    assert metastore.jdbc_url == "jdbc:postgresql://db.example:6543/hive_metastore"
    assert PostgresMetastore.parse("postgres://hive@db/meta").port == 5432
    settings = metastore.connection_settings("secret")
    assert settings["javax.jdo.option.ConnectionURL"] == metastore.jdbc_url
    assert settings["javax.jdo.option.ConnectionPassword"] == "secret"


@pytest.mark.parametrize(
    "url",
    [
        "mysql://hive@db/meta",  # not PostgreSQL
        "postgresql://db/meta",  # no user
        "postgresql://hive:secret@db/meta",  # a password in the URL
        "postgresql://hive@db",  # no database
        "postgresql://hive@db:port/meta",  # a port that is not a number
        "jdbc:postgresql://db/meta",
    ],
)
def test_a_url_of_another_form_is_a_usage_error_naming_it(url):
    with pytest.raises(UsageError, match="is not postgresql://USER@HOST"):
        PostgresMetastore.parse(url)


def _lakehouse(tmp_path: Path, url: str | None = None) -> Lakehouse:
    return Lakehouse(root=tmp_path, landing=tmp_path / "landing", metastore_url=url)


def test_a_lakehouse_keeps_the_metastore_it_recorded(tmp_path, monkeypatch):
    monkeypatch.delenv("RETRYLAKE_METASTORE", raising=False)
    assert lakehouse_metastore(_lakehouse(tmp_path), None) is None  # embedded Derby
    _lakehouse(tmp_path).metastore_record.write_text("postgresql://hive@db:5432/meta\n")
    recorded = PostgresMetastore("hive", "db", 5432, "meta")
    assert lakehouse_metastore(_lakehouse(tmp_path), None) == recorded
    assert lakehouse_metastore(_lakehouse(tmp_path), "postgresql://hive@db/meta") == recorded
    with pytest.raises(MetastoreError, match="uses the metastore postgresql://hive@db:5432/meta"):
        lakehouse_metastore(_lakehouse(tmp_path), "postgresql://hive@other/meta")
    monkeypatch.setenv("RETRYLAKE_METASTORE", "postgresql://hive@other/meta")
    with pytest.raises(MetastoreError, match="not postgresql://hive@other:5432/meta"):
        lakehouse_metastore(_lakehouse(tmp_path), None)


def test_a_lakehouse_built_on_derby_does_not_move_to_postgresql(tmp_path, monkeypatch):
    monkeypatch.delenv("RETRYLAKE_METASTORE", raising=False)
    (tmp_path / "metastore_db").mkdir()
    with pytest.raises(MetastoreError, match="built with the embedded Derby metastore"):
        lakehouse_metastore(_lakehouse(tmp_path), "postgresql://hive@db/meta")


def test_a_missing_jdbc_driver_names_the_package(tmp_path, monkeypatch):
    monkeypatch.setenv("RETRYLAKE_POSTGRES_JDBC_JAR", str(tmp_path / "absent.jar"))
    with pytest.raises(MetastoreError, match="libpostgresql-jdbc-java"):
        jdbc_jar()
