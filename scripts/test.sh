#!/usr/bin/env bash
# Runs the whole test suite: checks the architecture invariants
# (scripts/check-invariants.py), installs the official MCP clients and the
# conformance suite (tests/clients/setup.sh), Helm (as a Python library) and
# promtool from the package registries (once, cached), then one
# `cargo test --workspace` pass. PostgreSQL must listen on 127.0.0.1:5432 and
# Redis on 127.0.0.1:6379; under CI=true their absence fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."

# Architecture invariants (module docs, transport-free domain and storage,
# no upward crate dependency): seconds, before anything is installed.
python3 scripts/check-invariants.py

# The official MCP clients (Python and TypeScript SDKs, Inspector, conformance
# suite), the Python gRPC client of docs/grpc.md and the buf CLI, installed
# by tests/clients/setup.sh; the tests run them through the scripts beside it.
clients_dir="${CHATAIGNE_TEST_MCP_CLIENTS:-${XDG_CACHE_HOME:-$HOME/.cache}/chataigne/mcpclients}"
echo "installing the MCP clients into $clients_dir" >&2
if bash tests/clients/setup.sh "$clients_dir" >&2; then
  export CHATAIGNE_TEST_MCP_CLIENTS="$clients_dir"
elif [ "${CI:-}" = "true" ]; then
  echo "the MCP clients are required in CI (tests/clients/setup.sh failed)" >&2
  exit 1
else
  echo "the MCP clients could not be installed: their tests will be skipped" >&2
  unset CHATAIGNE_TEST_MCP_CLIENTS
fi

# Helm ships as a library in a PyPI package; the chart tests drive it from Python.
helm_venv="${XDG_CACHE_HOME:-$HOME/.cache}/chataigne/helm-venv"
[ -x "$helm_venv/bin/python" ] || python3 -m venv "$helm_venv"
"$helm_venv/bin/pip" install --quiet --disable-pip-version-check -r tests/helm/requirements.txt >&2
export CHATAIGNE_TEST_HELM_PYTHON="$helm_venv/bin/python"

# promtool checks and unit-tests the chart's alerting rules and the dashboard's
# queries (tests/tests/deploy/helm_chart.rs). Debian's prometheus package ships it;
# only the package file is fetched and unpacked into the cache (nothing is
# installed, no server started), once.
promtool_dir="${XDG_CACHE_HOME:-$HOME/.cache}/chataigne/promtool"
if command -v promtool >/dev/null 2>&1; then
  export CHATAIGNE_TEST_PROMTOOL="$(command -v promtool)"
else
  if [ ! -x "$promtool_dir/usr/bin/promtool" ] && command -v apt-get >/dev/null 2>&1; then
    echo "fetching promtool (Debian package prometheus) into $promtool_dir" >&2
    mkdir -p "$promtool_dir"
    (
      cd "$promtool_dir"
      { apt-get download prometheus >&2 || { apt-get update >&2 && apt-get download prometheus >&2; }; } \
        && dpkg-deb -x prometheus_*.deb . && rm -f prometheus_*.deb usr/bin/prometheus
    ) || echo "promtool could not be fetched" >&2
  fi
  if [ -x "$promtool_dir/usr/bin/promtool" ]; then
    export CHATAIGNE_TEST_PROMTOOL="$promtool_dir/usr/bin/promtool"
  elif [ "${CI:-}" = "true" ]; then
    echo "promtool is required in CI (Debian package prometheus)" >&2
    exit 1
  fi
fi

# Headless Chromium drives the consent page (tests/tests/official_clients/consent_browser.rs)
# and the accessibility check of the pages (pages_a11y.rs).
if ! command -v chromium >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
    echo "installing chromium" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y chromium >&2 \
      || { apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium >&2; }
  elif [ "${CI:-}" = "true" ]; then
    echo "chromium is required in CI (apt-get install -y chromium)" >&2
    exit 1
  fi
fi

# Each test creates databases of its own on the local server and leaves them
# there; those of earlier runs (named <prefix>_<16 hex digits>, untouched for
# an hour, no session on them) are dropped first, so that repeated runs on
# one machine do not fill its disk.
pg_url="${CHATAIGNE_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test}"
if command -v psql >/dev/null 2>&1; then
  psql "$pg_url" -Atq -v ON_ERROR_STOP=0 -c "
    select format('drop database if exists %I;', d.datname)
    from pg_database d, pg_stat_file('base/' || d.oid) f
    where d.datname ~ '^[a-z_]+_[0-9a-f]{16}\$'
      and f.modification < now() - interval '1 hour'
      and not exists (select 1 from pg_stat_activity a where a.datname = d.datname)" 2>/dev/null \
    | psql "$pg_url" -q >/dev/null 2>&1 || true
fi

exec cargo test --workspace "$@"
