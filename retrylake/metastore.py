"""The lakehouse's Hive metastore: embedded Derby (the default) or a PostgreSQL database.

Derby lives inside the lakehouse folder and admits one process. A PostgreSQL metastore is a
catalog that lives outside it. Spark creates the Hive schema by itself only in Derby, so for
PostgreSQL retrylake creates it once per lakehouse, with DataNucleus' SchemaTool and the Hive
metastore's own mapping (`package.jdo`), both from the jars pyspark ships. A lakehouse keeps the
metastore it was first built with (recorded in `metastore.txt`, without the password): its
warehouse folders mean nothing to another catalog.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from retrylake.errors import RetrylakeError, UsageError
from retrylake.lakehouse import Lakehouse

# Debian's libpostgresql-jdbc-java; RETRYLAKE_POSTGRES_JDBC_JAR names another copy
DEBIAN_JDBC_JAR = Path("/usr/share/java/postgresql.jar")
URL_FORM = "postgresql://USER@HOST[:PORT]/DATABASE"
# What Hive's ObjectStore expects of the schema's names and id columns (HiveConf's defaults)
HIVE_DATANUCLEUS_SETTINGS = {
    "datanucleus.identifierFactory": "datanucleus1",
    "datanucleus.rdbms.useLegacyNativeValueStrategy": "true",
}


class MetastoreError(RetrylakeError):
    """The metastore cannot be used: unreachable, no JDBC driver, or not this lakehouse's."""


@dataclass(frozen=True)
class PostgresMetastore:
    user: str
    host: str
    port: int
    database: str

    @classmethod
    def parse(cls, url: str) -> PostgresMetastore:
        parts = urlsplit(url.strip())
        database = parts.path.lstrip("/")
        try:
            port = parts.port or 5432
        except ValueError:  # not a number, or out of range
            port = None
        valid = (
            parts.scheme in ("postgresql", "postgres")
            and parts.hostname
            and parts.username
            and parts.password is None
            and database
            and "/" not in database
            and port is not None
        )
        if not valid:
            raise UsageError(
                f"metastore {url!r} is not {URL_FORM} (the password goes in "
                "$RETRYLAKE_METASTORE_PASSWORD, never in the URL)"
            )
        return cls(unquote(parts.username), parts.hostname, port, unquote(database))

    @property
    def url(self) -> str:
        return f"postgresql://{self.user}@{self.host}:{self.port}/{self.database}"

    @property
    def jdbc_url(self) -> str:
        return f"jdbc:postgresql://{self.host}:{self.port}/{self.database}"

    def connection_settings(self, password: str) -> dict[str, str]:
        """The JDO connection, as Hive's configuration names it."""
        return {
            "javax.jdo.option.ConnectionURL": self.jdbc_url,
            "javax.jdo.option.ConnectionDriverName": "org.postgresql.Driver",
            "javax.jdo.option.ConnectionUserName": self.user,
            "javax.jdo.option.ConnectionPassword": password,
        }


def lakehouse_metastore(lakehouse: Lakehouse, given: str | None) -> PostgresMetastore | None:
    """The PostgreSQL metastore this lakehouse uses, or None for its embedded Derby.

    ``given`` (``--metastore``, else $RETRYLAKE_METASTORE) must agree with the one the lakehouse
    recorded; a lakehouse built on Derby cannot move to PostgreSQL, nor the other way.
    """
    given = given or os.environ.get("RETRYLAKE_METASTORE") or None
    record = lakehouse.metastore_record
    recorded = PostgresMetastore.parse(record.read_text()) if record.exists() else None
    if given is None:
        return recorded
    wanted = PostgresMetastore.parse(given)
    if recorded is not None and recorded != wanted:
        raise MetastoreError(
            f"the lakehouse {lakehouse.root} uses the metastore {recorded.url}, not {wanted.url}"
        )
    if recorded is None and lakehouse.metastore.exists():
        raise MetastoreError(
            f"the lakehouse {lakehouse.root} was built with the embedded Derby metastore; "
            f"use a new lakehouse folder for the metastore {wanted.url}"
        )
    return wanted


def jdbc_jar() -> Path:
    jar = Path(os.environ.get("RETRYLAKE_POSTGRES_JDBC_JAR") or DEBIAN_JDBC_JAR)
    if not jar.is_file():
        raise MetastoreError(
            f"the PostgreSQL JDBC driver {jar} is missing: install Debian's "
            "libpostgresql-jdbc-java, or name the jar in $RETRYLAKE_POSTGRES_JDBC_JAR"
        )
    return jar


def spark_settings(lakehouse: Lakehouse) -> dict[str, str]:
    """Spark settings for the lakehouse's metastore: its embedded Derby, or a PostgreSQL one,
    whose Hive schema is created first if the lakehouse has not recorded it yet."""
    metastore = lakehouse_metastore(lakehouse, lakehouse.metastore_url)
    if metastore is None:
        derby = f"jdbc:derby:;databaseName={lakehouse.metastore};create=true"
        return {"spark.hadoop.javax.jdo.option.ConnectionURL": derby}
    password = os.environ.get("RETRYLAKE_METASTORE_PASSWORD", "")
    jar = jdbc_jar()
    record = lakehouse.metastore_record
    if not record.exists():
        create_hive_schema(metastore, password, jar)
        record.write_text(metastore.url + "\n")
    settings = {
        f"spark.hadoop.{key}": value
        for key, value in metastore.connection_settings(password).items()
    }
    # The schema SchemaTool made has no version row yet; Hive records it on first use.
    settings["spark.hadoop.hive.metastore.schema.verification"] = "false"
    # Hive 2.3's metastore did not filter the marts' date and int partition keys in PostgreSQL
    # (it fell back to its JDO filter, which takes string keys only), so an incremental run
    # failed; Spark lists the table's partitions and prunes them itself instead.
    settings["spark.sql.hive.metastorePartitionPruning"] = "false"
    settings["spark.driver.extraClassPath"] = str(jar)
    return settings


def create_hive_schema(metastore: PostgresMetastore, password: str, jar: Path) -> None:
    """Create the Hive metastore's tables in ``metastore`` (those missing; it is idempotent).

    Hive's lazy creation at first use is not an option: it adds foreign keys on tables another
    of its connections holds locked, and waits on that connection forever.
    """
    import pyspark

    spark_jars = Path(pyspark.__file__).parent / "jars"
    hive_jars = sorted(spark_jars.glob("hive-metastore-*.jar"))
    if not hive_jars:
        raise MetastoreError(f"no hive-metastore jar in {spark_jars}")
    java_home = os.environ.get("JAVA_HOME")
    java = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java") or "java"
    with tempfile.TemporaryDirectory(prefix="retrylake-schema-") as work:
        mapping = Path(work) / "package.jdo"
        with zipfile.ZipFile(hive_jars[-1]) as jar_file:
            mapping.write_bytes(jar_file.read("package.jdo"))
        properties = Path(work) / "datanucleus.properties"
        settings = {**metastore.connection_settings(password), **HIVE_DATANUCLEUS_SETTINGS}
        properties.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
        properties.chmod(0o600)
        command = [
            java, "-cp", f"{spark_jars}/*:{jar}", "org.datanucleus.store.schema.SchemaTool",
            "-create", "-api", "JDO", "-props", str(properties), str(mapping),
        ]  # fmt: skip
        result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0 or "completed successfully" not in result.stdout:
        detail = [
            line.strip()
            for line in (result.stdout + result.stderr).splitlines()
            if line.strip() and not line.strip().startswith(("at ", "..."))  # stack frames
        ]
        raise MetastoreError(
            f"could not create the Hive metastore schema in {metastore.url}: "
            + (detail[-1] if detail else f"SchemaTool exited with {result.returncode}")[:600]
        )
