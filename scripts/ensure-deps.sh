#!/usr/bin/env bash
# Installs what the test suite needs and is missing on a fresh Debian machine:
# redis-server and Chromium (Debian packages; Chromium drives the dashboard's
# browser tests, DROVER_NEED_CHROMIUM=0 skips it) and the pinned Node BullMQ
# oracle (npm ci).
# PostgreSQL 15 binaries are expected on the machine; tests start their own
# throwaway clusters with initdb/pg_ctl.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || need_apt+=(redis-tools)
# PostgreSQL 15 server binaries (initdb, postgres) for the kit's tests.
if ! command -v initdb >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  need_apt+=(postgresql)
fi
if [ "${DROVER_NEED_CHROMIUM:-1}" = 1 ]; then
  command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "ensure-deps: installing ${need_apt[*]}"
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  # Wait for dpkg's lock (another install under way, as on a machine whose
  # other checkouts run this script at the same time) instead of failing.
  lock=(-o DPkg::Lock::Timeout=600)
  $SUDO apt-get "${lock[@]}" install -y "${need_apt[@]}" >/dev/null 2>&1 || {
    $SUDO apt-get "${lock[@]}" update >/dev/null
    $SUDO apt-get "${lock[@]}" install -y "${need_apt[@]}" >/dev/null
  }
fi

oracle=internal/testkit/bullmqoracle/node
if [ -f "$oracle/package-lock.json" ]; then
  if [ ! -d "$oracle/node_modules/bullmq" ] || [ "$oracle/package-lock.json" -nt "$oracle/node_modules/.package-lock.json" ]; then
    echo "ensure-deps: npm ci in $oracle"
    (cd "$oracle" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  fi
fi
