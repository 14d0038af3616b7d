#!/usr/bin/env bash
# The production runbook (docs/runbook.md), step by step: from
# empty PostgreSQL databases and a Redis to a first tool call, with the three
# service binaries. tests/tests/operations/runbook.rs runs it and checks that the
# documented steps are these.
#
# Inputs (environment):
#   AUTH_DATABASE_URL, TOOLS_DATABASE_URL   PostgreSQL databases (they must exist)
#   REDIS_URL                               Redis of the gateway and the OAuth rate limits
#   BIN        directory of the binaries (default: target/release)
#   WORK       directory of the configuration files and logs (default: ./runbook)
#   AUTH_HTTP_PORT AUTH_GRPC_PORT TOOLS_GRPC_PORT GATEWAY_PORT GATEWAY_INTERNAL_PORT
#   ADMIN_PASSWORD, MANAGER_PASSWORD        the two users' passwords (default: generated)
#   KEEP_RUNNING=1   leave the services running at the end (default: stop them)
set -euo pipefail

BIN=${BIN:-target/release}
WORK=${WORK:-./runbook}
AUTH_HTTP_PORT=${AUTH_HTTP_PORT:-8090}
AUTH_GRPC_PORT=${AUTH_GRPC_PORT:-50051}
TOOLS_GRPC_PORT=${TOOLS_GRPC_PORT:-50052}
GATEWAY_PORT=${GATEWAY_PORT:-8080}
GATEWAY_INTERNAL_PORT=${GATEWAY_INTERNAL_PORT:-9090}
: "${AUTH_DATABASE_URL:?a PostgreSQL URL for the auth-service}"
: "${TOOLS_DATABASE_URL:?a PostgreSQL URL for the tool-service}"
: "${REDIS_URL:?a Redis URL}"
mkdir -p "$WORK"
PIDS=()
# Each service runs in a background subshell: stop the service, then the subshell.
stop() { [ "${KEEP_RUNNING:-0}" = 1 ] || for pid in "${PIDS[@]}"; do pkill -TERM -P "$pid" 2>/dev/null; kill "$pid" 2>/dev/null || true; done; }
trap stop EXIT
# Polls a URL until it answers 2xx (60 s).
wait_for() { for _ in $(seq 600); do curl -fsS -o /dev/null "$1" 2>/dev/null && return 0; sleep 0.1; done; echo "no answer from $1" >&2; return 1; }

ISSUER=http://127.0.0.1:$AUTH_HTTP_PORT
MCP_URL=http://127.0.0.1:$GATEWAY_PORT/mcp/v1
TOOL_SERVICE_URL=http://127.0.0.1:$TOOLS_GRPC_PORT

# step 1: secrets, generated once and kept in a secret store
KEK=${KEK:-$(openssl rand -base64 32)}
CURSOR_KEY=${CURSOR_KEY:-$(openssl rand -hex 32)}
IDEMPOTENCY_SECRET=${IDEMPOTENCY_SECRET:-$(openssl rand -hex 32)}
RATE_LIMIT_KEY=${RATE_LIMIT_KEY:-$(openssl rand -hex 32)}
GATEWAY_CREDENTIAL=${GATEWAY_CREDENTIAL:-$(openssl rand -hex 32)}
ADMIN_PASSWORD=${ADMIN_PASSWORD:-$(openssl rand -hex 16)}
MANAGER_PASSWORD=${MANAGER_PASSWORD:-$(openssl rand -hex 16)}

# step 2: configuration files (everything but the secrets)
cat >"$WORK/auth-service.toml" <<EOF
grpc_listen = "127.0.0.1:$AUTH_GRPC_PORT"
http_listen = "127.0.0.1:$AUTH_HTTP_PORT"
issuer = "$ISSUER"
[oauth]
allowed_resources = ["$MCP_URL"]
EOF
cat >"$WORK/tool-service.toml" <<EOF
listen = "127.0.0.1:$TOOLS_GRPC_PORT"
auth_service_url = "http://127.0.0.1:$AUTH_GRPC_PORT"
EOF
cat >"$WORK/gateway.toml" <<EOF
listen = "127.0.0.1:$GATEWAY_PORT"
internal_listen = "127.0.0.1:$GATEWAY_INTERNAL_PORT"
public_url = "http://127.0.0.1:$GATEWAY_PORT"
authorization_server = "$ISSUER"
auth_service_url = "http://127.0.0.1:$AUTH_GRPC_PORT"
tool_service_url = "$TOOL_SERVICE_URL"
[allowlist]
enabled = true
cidrs = ["127.0.0.0/8"]
EOF
auth() {
  CHATAIGNE_CONFIG="$WORK/auth-service.toml" \
  CHATAIGNE_DATABASE__URL="$AUTH_DATABASE_URL" \
  CHATAIGNE_KEYS__ENCRYPTION_KEY="$KEK" \
  CHATAIGNE_OAUTH__RATE_LIMITS__REDIS__URL="$REDIS_URL" \
  CHATAIGNE_OAUTH__RATE_LIMITS__REDIS__KEY_SECRET="$RATE_LIMIT_KEY" \
  CHATAIGNE_GATEWAY_CREDENTIAL="$GATEWAY_CREDENTIAL" \
  "$BIN/chataigne-auth-service" "$@"
}
tools() {
  CHATAIGNE_CONFIG="$WORK/tool-service.toml" \
  CHATAIGNE_DATABASE__URL="$TOOLS_DATABASE_URL" \
  CHATAIGNE_CURSOR__KEYS="$CURSOR_KEY" \
  CHATAIGNE_IDEMPOTENCY__SECRET="$IDEMPOTENCY_SECRET" \
  "$BIN/chataigne-tool-service" "$@"
}
gateway() {
  CHATAIGNE_CONFIG="$WORK/gateway.toml" \
  CHATAIGNE_REDIS__URL="$REDIS_URL" \
  CHATAIGNE_GATEWAY_CREDENTIAL="$GATEWAY_CREDENTIAL" \
  "$BIN/chataigne-gateway" "$@"
}

# step 3: migrate, then start each service
auth migrate
tools migrate
auth serve >"$WORK/auth-service.log" 2>&1 & PIDS+=($!)
wait_for "$ISSUER/.well-known/oauth-authorization-server"
tools serve >"$WORK/tool-service.log" 2>&1 & PIDS+=($!)
gateway >"$WORK/gateway.log" 2>&1 & PIDS+=($!)
# /readyz: 200 "ready" (serves), 200 "degraded" (Redis down: calls served
# without rate limits, rate_limits.on_store_failure = fail_open), 503
# "not_ready" (a backend or its database down, or Redis down under fail_closed)
wait_for "http://127.0.0.1:$GATEWAY_INTERNAL_PORT/readyz"

# step 4: a platform admin and the client people sign in through
ADMIN=$(printf '%s\n' "$ADMIN_PASSWORD" | auth users add --email admin@example.com --name "Platform Admin" --password-stdin | sed -n 's/^user_id=//p')
auth users grant-admin "$ADMIN"
auth clients add runbook-cli --name "Runbook CLI" --redirect-uri http://127.0.0.1:8976/callback

# step 5: an organization and a location, created by the admin through MCP
as_admin() { printf '%s\n' "$ADMIN_PASSWORD" | auth smoke-test --issuer "$ISSUER" --mcp-url "$MCP_URL" --client-id runbook-cli --redirect-uri http://127.0.0.1:8976/callback --email admin@example.com --password-stdin "$@"; }
ORG=$(as_admin --scope admin.organizations.create --tool chataigne_organization_create \
  --arguments "{\"name\":\"Bistro Runbook\",\"idempotency_key\":\"runbook-org-$(openssl rand -hex 8)\"}" --print /data/organization/id)
LOC=$(as_admin --scope admin.locations.create --tool chataigne_location_create \
  --arguments "{\"organization_id\":\"$ORG\",\"name\":\"Bistro Runbook Lyon\",\"line1\":\"1 rue Mercière\",\"city\":\"Lyon\",\"postal_code\":\"69002\",\"country\":\"FR\",\"timezone\":\"Europe/Paris\",\"currency\":\"EUR\",\"idempotency_key\":\"runbook-loc-$(openssl rand -hex 8)\"}" \
  --print /data/location/id)
echo "organization=$ORG location=$LOC"

# step 6: roles, a manager of the organization, and a service account
auth roles set manager --permission "businessOrganization.read location.read locationStatusSettings.read orders.read orders.write"
auth roles set analyst --permission "businessOrganization.read location.read orders.read analytics.read"
MANAGER=$(printf '%s\n' "$MANAGER_PASSWORD" | auth users add --email manager@example.com --name "Restaurant Manager" --password-stdin | sed -n 's/^user_id=//p')
auth memberships grant "$MANAGER" --organization "$ORG" --role manager
SECRET=$(auth clients add reporting --name Reporting --kind service --scope "businessOrganization.read location.read" | sed -n 's/^client_secret=//p')
auth memberships grant svc_reporting --organization "$ORG" --role analyst

# step 7: smoke tests — the manager through MCP, the service account through gRPC
printf '%s\n' "$MANAGER_PASSWORD" | auth smoke-test --issuer "$ISSUER" --mcp-url "$MCP_URL" \
  --client-id runbook-cli --redirect-uri http://127.0.0.1:8976/callback --email manager@example.com --password-stdin
printf '%s\n' "$SECRET" | auth smoke-test --issuer "$ISSUER" --tool-service-url "$TOOL_SERVICE_URL" \
  --client-id reporting --client-secret-stdin --tool chataigne_locations_list --arguments "{\"organization_id\":\"$ORG\"}"
echo "runbook complete"
