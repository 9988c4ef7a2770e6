#!/usr/bin/env bash
# The report test opens the report in headless Chromium (Debian's package). Installs it when
# missing; the test fails, naming this script, when it cannot be installed.
set -euo pipefail
command -v chromium >/dev/null 2>&1 && exit 0
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing Debian's chromium for the report test..."
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q --no-install-recommends chromium >/dev/null \
    || { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends chromium >/dev/null; }
else
  echo "chromium is not installed and this user cannot apt-get it; install Debian's chromium package" >&2
fi
