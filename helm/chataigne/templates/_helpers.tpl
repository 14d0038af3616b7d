{{/*
Names, labels, images and the per-service table the other templates loop over.
*/}}

{{- define "chataigne.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "chataigne.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "chataigne.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The three services: values key, component name, binary. */}}
{{- define "chataigne.services" -}}
gateway:
  component: gateway
  binary: chataigne-gateway
authService:
  component: auth-service
  binary: chataigne-auth-service
toolService:
  component: tool-service
  binary: chataigne-tool-service
{{- end -}}

{{/* Resource name of a component: (dict "root" $ "component" "gateway") */}}
{{- define "chataigne.componentName" -}}
{{- printf "%s-%s" (include "chataigne.fullname" .root | trunc 48 | trimSuffix "-") .component -}}
{{- end -}}

{{- define "chataigne.selectorLabels" -}}
app.kubernetes.io/name: {{ include "chataigne.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "chataigne.labels" -}}
helm.sh/chart: {{ include "chataigne.chart" .root }}
{{ include "chataigne.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/part-of: chataigne
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
{{- with .root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Image reference of a service: (dict "root" $ "svc" .Values.gateway) */}}
{{- define "chataigne.image" -}}
{{- $repo := printf "%s/%s" (trimSuffix "/" .root.Values.image.registry) .svc.repository | trimPrefix "/" -}}
{{- if .svc.digest -}}
{{- printf "%s@%s" $repo .svc.digest -}}
{{- else -}}
{{- printf "%s:%s" $repo (.svc.tag | default .root.Values.image.tag | default .root.Chart.AppVersion) -}}
{{- end -}}
{{- end -}}

{{/* In-cluster gRPC URL of a backend: (dict "root" $ "component" "auth-service" "port" 50051) */}}
{{/* gRPC URL of a backend as the other services call it: its headless
Service, whose name resolves to every ready pod (client-side balancing). */}}
{{- define "chataigne.grpcUrl" -}}
{{- printf "http://%s-headless.%s.svc.%s:%d" (include "chataigne.componentName" .) (include "chataigne.namespace" .root) .root.Values.clusterDomain (int .port) -}}
{{- end -}}

{{/* Host of a URL: "https://auth.example.com/" -> "auth.example.com". */}}
{{- define "chataigne.urlHost" -}}
{{- regexReplaceAll "^[a-z]+://([^/:?#]+).*$" . "${1}" -}}
{{- end -}}

{{/* Host the authorization server is published on (host of authorizationServer). */}}
{{- define "chataigne.oauthHost" -}}
{{- include "chataigne.urlHost" (.Values.authorizationServer | default "") -}}
{{- end -}}

{{/* Whether the authorization server shares the gateway's host: "true" or "". */}}
{{- define "chataigne.oauthSharesGatewayHost" -}}
{{- $host := include "chataigne.oauthHost" . -}}
{{- if .Values.ingress.enabled -}}
{{- if eq $host .Values.ingress.host }}true{{ end -}}
{{- else if .Values.httpRoute.enabled -}}
{{- /* No hostnames: the gateway's route matches every host, the authorization server's too. */}}
{{- if or (not .Values.httpRoute.hostnames) (has $host .Values.httpRoute.hostnames) }}true{{ end -}}
{{- else -}}
{{- if eq $host (include "chataigne.urlHost" (.Values.publicUrl | default "")) }}true{{ end -}}
{{- end -}}
{{- end -}}

{{/* TLS Secret of the authorization server's Ingress ("" when none applies). */}}
{{- define "chataigne.oauthTlsSecret" -}}
{{- if .Values.oauthRoute.ingress.tls.secretName -}}
{{- .Values.oauthRoute.ingress.tls.secretName -}}
{{- else if and .Values.ingress.enabled (include "chataigne.oauthSharesGatewayHost" .) -}}
{{- .Values.ingress.tls.secretName -}}
{{- end -}}
{{- end -}}

{{/* Gateway Service port: explicit, else 443 with in-pod TLS, else 80. */}}
{{- define "chataigne.gatewayServicePort" -}}
{{- if .Values.gateway.service.port -}}
{{- int .Values.gateway.service.port -}}
{{- else if .Values.gateway.tls.enabled -}}
443
{{- else -}}
80
{{- end -}}
{{- end -}}

{{/* A secret reference as an EnvVar: (dict "ref" .Values.secrets.redisUrl "what" "secrets.redisUrl") */}}
{{- define "chataigne.secretEnv" -}}
- name: {{ .ref.env }}
  valueFrom:
    secretKeyRef:
      name: {{ required (printf "%s.name: the name of an existing Secret is required (the chart never creates secret values)" .what) .ref.name }}
      key: {{ required (printf "%s.key is required" .what) .ref.key }}
{{- end -}}

{{/* An optional Secret reference: rendered only when it names a Secret. */}}
{{- define "chataigne.optionalSecretEnv" -}}
{{- if .ref.name }}
{{ include "chataigne.secretEnv" . }}
{{- end }}
{{- end -}}

{{/* Secret-backed env of each service. */}}
{{- define "chataigne.secretEnv.gateway" -}}
{{ include "chataigne.secretEnv" (dict "ref" .Values.secrets.redisUrl "what" "secrets.redisUrl") }}
{{ include "chataigne.secretEnv" (dict "ref" .Values.secrets.gatewayCredential "what" "secrets.gatewayCredential") }}
{{- include "chataigne.optionalSecretEnv" (dict "ref" .Values.secrets.sentryDsn "what" "secrets.sentryDsn") }}
{{- end -}}
{{- define "chataigne.secretEnv.authService" -}}
{{ include "chataigne.secretEnv" (dict "ref" .Values.secrets.authDatabaseUrl "what" "secrets.authDatabaseUrl") }}
{{ include "chataigne.secretEnv" (dict "ref" .Values.secrets.signingKeyEncryptionKey "what" "secrets.signingKeyEncryptionKey") }}
{{ include "chataigne.secretEnv" (dict "ref" .Values.secrets.gatewayCredential "what" "secrets.gatewayCredential") }}
{{- include "chataigne.optionalSecretEnv" (dict "ref" .Values.secrets.sentryDsn "what" "secrets.sentryDsn") }}
{{- end -}}
{{- define "chataigne.secretEnv.toolService" -}}
{{ include "chataigne.secretEnv" (dict "ref" .Values.secrets.toolDatabaseUrl "what" "secrets.toolDatabaseUrl") }}
{{ include "chataigne.secretEnv" (dict "ref" .Values.secrets.cursorKeys "what" "secrets.cursorKeys") }}
{{ include "chataigne.secretEnv" (dict "ref" .Values.secrets.idempotencySecret "what" "secrets.idempotencySecret") }}
{{- include "chataigne.optionalSecretEnv" (dict "ref" .Values.secrets.sentryDsn "what" "secrets.sentryDsn") }}
{{- end -}}

{{/* Env shared by every container of a service: (dict "root" $ "key" "gateway" "component" "gateway") */}}
{{- define "chataigne.commonEnv" -}}
{{- $svc := index .root.Values .key -}}
- name: RUST_LOG
  value: {{ $svc.logLevel | default .root.Values.logLevel | quote }}
- name: OTEL_SERVICE_NAME
  value: {{ .component | quote }}
{{- if .root.Values.secrets.sentryDsn.name }}
- name: CHATAIGNE_SENTRY__ENVIRONMENT
  value: {{ .root.Values.sentry.environment | quote }}
{{- end }}
{{- with .root.Values.otel.endpoint }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ . | quote }}
- name: OTEL_EXPORTER_OTLP_PROTOCOL
  value: grpc
{{- end }}
{{- $attrs := list (printf "service.namespace=chataigne") (printf "k8s.namespace.name=%s" (include "chataigne.namespace" .root)) }}
{{- range $k, $v := .root.Values.otel.resourceAttributes }}
{{- $attrs = append $attrs (printf "%s=%v" $k $v) }}
{{- end }}
- name: OTEL_RESOURCE_ATTRIBUTES
  value: {{ join "," $attrs | quote }}
{{- end -}}

{{/* ServiceAccount of a service's pods: (dict "root" $ "svc" .Values.gateway "component" "gateway") */}}
{{- define "chataigne.serviceAccountName" -}}
{{- .svc.serviceAccount.name | default (include "chataigne.componentName" (dict "root" .root "component" .component)) -}}
{{- end -}}

{{/* PriorityClass of a service's pods ("" for none): (dict "root" $ "svc" .Values.gateway) */}}
{{- define "chataigne.priorityClassName" -}}
{{- .svc.priorityClassName | default .root.Values.priorityClassName -}}
{{- end -}}

{{/* Extra labels of every alert (prometheusRule.alertLabels). */}}
{{- define "chataigne.alertLabels" -}}
{{- with .Values.prometheusRule.alertLabels }}
{{- toYaml . }}
{{- end }}
{{- end -}}

{{/* runbook_url of an alert when prometheusRule.runbookUrl is set: (dict "root" $ "alert" "Name") */}}
{{- define "chataigne.runbook" -}}
{{- with .root.Values.prometheusRule.runbookUrl }}
runbook_url: {{ printf "%s#%s" (trimSuffix "/" .) (lower $.alert) | quote }}
{{- end }}
{{- end -}}

{{/* The `helm test` smoke script: sh, grep and curl, against
GATEWAY_INTERNAL. Exits non-zero, naming the check, on the first failure. */}}
{{- define "chataigne.smokeScript" -}}
set -u
fail() { echo "smoke test failed: $1" >&2; exit 1; }
get() { curl --silent --show-error --fail --max-time 10 --retry "${SMOKE_RETRIES:-5}" --retry-delay 2 --retry-all-errors "$1"; }
health=$(get "$GATEWAY_INTERNAL/healthz") || fail "GET /healthz"
echo "$health" | grep -q '"status":"ok"' || fail "/healthz answered $health"
ready=$(get "$GATEWAY_INTERNAL/readyz") || fail "GET /readyz: the gateway is not ready (backends not SERVING or no tool catalogue)"
echo "$ready" | grep -q '"auth_service":true' || fail "/readyz: the auth-service is not serving: $ready"
echo "$ready" | grep -q '"tool_service":true' || fail "/readyz: the tool-service is not serving: $ready"
metrics=$(get "$GATEWAY_INTERNAL/metrics") || fail "GET /metrics"
for family in chataigne_gateway_build_info process_resident_memory_bytes process_start_time_seconds; do
  echo "$metrics" | grep -q "^$family" || fail "/metrics has no $family"
done
if [ -z "${SMOKE_CLIENT_ID:-}" ]; then
  echo "no service account configured (tests.serviceAccount.secret): health, readiness and metrics checked, no tool called"
elif [ -z "${SMOKE_TOOL_SERVICE_GRPC:-}" ]; then
  echo "internal TLS on: the service account's tool call is left to chataigne-auth-service smoke-test"
else
  answer=$(curl --silent --show-error --fail --max-time 10 --retry "${SMOKE_RETRIES:-5}" --retry-delay 2 --retry-all-errors \
    --user "$SMOKE_CLIENT_ID:$SMOKE_CLIENT_SECRET" --data grant_type=client_credentials "$SMOKE_ISSUER/token") \
    || fail "POST $SMOKE_ISSUER/token: no token for the service account $SMOKE_CLIENT_ID"
  token=$(echo "$answer" | sed -n 's/.*"access_token":"\([^"]*\)".*/\1/p')
  [ -n "$token" ] || fail "$SMOKE_ISSUER/token answered no access token"
  # Restaurant/ListOrganizations (chataigne_organizations_list), an empty
  # request framed as gRPC; the status is in the trailers.
  rpc="$SMOKE_TOOL_SERVICE_GRPC/chataigne.tools.v1.Restaurant/ListOrganizations"
  called=$(printf '\000\000\000\000\000' | curl --silent --show-error --http2-prior-knowledge --max-time 20 \
    -H 'content-type: application/grpc' -H 'te: trailers' -H "authorization: Bearer $token" \
    --data-binary @- --dump-header - --output /dev/null "$rpc") || fail "POST $rpc"
  echo "$called" | grep -qi '^grpc-status: *0' \
    || fail "ListOrganizations as $SMOKE_CLIENT_ID: $(echo "$called" | grep -i '^grpc-')"
  echo "called chataigne_organizations_list (Restaurant/ListOrganizations) as the service account $SMOKE_CLIENT_ID"
fi
echo "smoke test passed: the gateway is up and ready, both backends serve, metrics are exposed"
{{- end -}}

{{/*
Internal TLS (internalTls): the Secret of a component, (dict "root" $ "key"
"authService" "component" "auth-service"), and where it is mounted.
*/}}
{{- define "chataigne.internalTlsSecret" -}}
{{- index .root.Values.internalTls.secrets .key | default (printf "%s-internal-tls" (include "chataigne.componentName" (dict "root" .root "component" .component))) -}}
{{- end -}}

{{- define "chataigne.internalTlsDir" -}}/etc/chataigne/internal-tls{{- end -}}

{{/* The server side of a backend's internal TLS as its config section (JSON). */}}
{{- define "chataigne.internalTlsServer" -}}
{{- $dir := include "chataigne.internalTlsDir" . -}}
{{- $tls := dict "cert_file" (printf "%s/tls.crt" $dir) "key_file" (printf "%s/tls.key" $dir) -}}
{{- if .Values.internalTls.mutual }}{{ $_ := set $tls "client_ca_file" (printf "%s/ca.crt" $dir) }}{{ end -}}
{{- toJson $tls -}}
{{- end -}}

{{/* The client side (CA bundle, the component's certificate as its client certificate). */}}
{{- define "chataigne.internalTlsClient" -}}
{{- $dir := include "chataigne.internalTlsDir" . -}}
{{- $tls := dict "ca_file" (printf "%s/ca.crt" $dir) "cert_file" (printf "%s/tls.crt" $dir) "key_file" (printf "%s/tls.key" $dir) -}}
{{- with .Values.internalTls.serverName }}{{ $_ := set $tls "server_name" . }}{{ end -}}
{{- toJson $tls -}}
{{- end -}}

{{/*
The namespace every object is created in: namespaceOverride, else the
release's. Takes the root context.
*/}}
{{- define "chataigne.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}
