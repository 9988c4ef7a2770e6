#!/usr/bin/env bash
# The serve test keeps its lakehouse's Hive metastore in a real PostgreSQL server, which the
# test starts on loopback (tests/integration/postgres.py). Installs Debian's server and JDBC
# driver when missing; the test fails, naming this script, when they cannot be installed.
set -euo pipefail
server_present() { compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; }
server_present && [ -f /usr/share/java/postgresql.jar ] && exit 0
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing Debian's postgresql and libpostgresql-jdbc-java for the metastore test..."
  export DEBIAN_FRONTEND=noninteractive
  packages=(postgresql libpostgresql-jdbc-java)
  apt-get install -y -q --no-install-recommends "${packages[@]}" >/dev/null \
    || { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends "${packages[@]}" >/dev/null; }
else
  echo "PostgreSQL or its JDBC driver is not installed and this user cannot apt-get them;" \
    "install Debian's postgresql and libpostgresql-jdbc-java" >&2
fi
