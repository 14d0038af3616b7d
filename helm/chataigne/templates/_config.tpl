{{/*
THE ONE PLACE where the services' configuration is wired.

Each service reads defaults -> the TOML file mounted at /etc/chataigne/<svc>.toml
(--config / CHATAIGNE_CONFIG) -> CHATAIGNE_* environment variables. The chart
computes the keys below, merges `<service>.config` from the values over them
and writes the result as TOML into the ConfigMap (templates/configmap.yaml).
Secrets reach the services only as environment variables from existing
Secrets (see "chataigne.secretEnv.*" in _helpers.tpl and `secrets.*.env`).
If a service renames a key, change it here.
*/}}

{{/*
The public MCP endpoints as a JSON list: on publicUrl, /mcp/v1 (MCP
2025-11-25, frozen) and /mcp/v2 (MCP 2026-07-28); then /mcp/v1 on
https://<host> for each gateway.profileHosts entry (the Connected Apps
Platform speaks 2025-11-25). Each has the gateway's EndpointConfig keys
(path, profile, revision, hosts, public_url) and `resource`, its canonical URL
(origin + path): the token audience the auth-service must allow, one per
endpoint, so a token of one endpoint is refused by the others.
*/}}
{{- define "chataigne.endpoints" -}}
{{- $legacy := "/mcp/v1" -}}
{{- $modern := "/mcp/v2" -}}
{{- $public := trimSuffix "/" (.Values.publicUrl | default "") -}}
{{- $all := list (dict "path" $legacy "profile" "default" "revision" "2025-11-25" "hosts" (list) "resource" (printf "%s%s" $public $legacy)) -}}
{{- $all = append $all (dict "path" $modern "profile" "default" "revision" "2026-07-28" "hosts" (list) "resource" (printf "%s%s" $public $modern)) -}}
{{- range .Values.gateway.profileHosts -}}
{{- $origin := printf "https://%s" .host -}}
{{- $all = append $all (dict "path" $legacy "profile" .profile "revision" "2025-11-25" "hosts" (list .host) "public_url" $origin "resource" (printf "%s%s" $origin $legacy)) -}}
{{- end -}}
{{- toJson $all -}}
{{- end -}}

{{- define "chataigne.config.gateway" -}}
{{- $ := . -}}
{{- $endpoints := list -}}
{{- range include "chataigne.endpoints" $ | fromJsonArray -}}
{{- $endpoints = append $endpoints (omit . "resource") -}}
{{- end -}}
{{- $cfg := dict
  "listen" (printf "0.0.0.0:%d" (int .Values.gateway.ports.public))
  "internal_listen" (printf "0.0.0.0:%d" (int .Values.gateway.ports.internal))
  "public_url" .Values.publicUrl
  "authorization_server" .Values.authorizationServer
  "auth_service_url" (include "chataigne.grpcUrl" (dict "root" $ "component" "auth-service" "port" .Values.authService.ports.grpc))
  "tool_service_url" (include "chataigne.grpcUrl" (dict "root" $ "component" "tool-service" "port" .Values.toolService.ports.grpc))
  "endpoints" $endpoints
  "allowlist" (dict "enabled" true "cidrs" .Values.gateway.allowedCidrs "trusted_proxies" .Values.gateway.trustedProxies "proxy_protocol" .Values.gateway.proxyProtocol)
-}}
{{- if .Values.gateway.tls.enabled }}
{{- $_ := set $cfg "tls" (dict "cert_file" "/etc/chataigne/tls/tls.crt" "key_file" "/etc/chataigne/tls/tls.key") }}
{{- end }}
{{- if .Values.internalTls.enabled }}
{{- $_ := set $cfg "backend_tls" (include "chataigne.internalTlsClient" . | fromJson) }}
{{- end }}
{{- include "chataigne.toml" (mergeOverwrite $cfg (deepCopy .Values.gateway.config)) -}}
{{- end -}}

{{- define "chataigne.config.authService" -}}
{{- /* Tokens are issued for exactly the gateway's endpoints (their canonical URLs). */}}
{{- $resources := list -}}
{{- range include "chataigne.endpoints" . | fromJsonArray -}}
{{- $resources = append $resources .resource -}}
{{- end -}}
{{- $cfg := dict
  "grpc_listen" (printf "0.0.0.0:%d" (int .Values.authService.ports.grpc))
  "http_listen" (printf "0.0.0.0:%d" (int .Values.authService.ports.http))
  "issuer" .Values.authorizationServer
  "oauth" (dict "allowed_resources" $resources)
-}}
{{- if .Values.authService.metrics.enabled }}
{{- $_ := set $cfg "metrics_listen" (printf "0.0.0.0:%d" (int .Values.authService.metrics.port)) }}
{{- end }}
{{- /* Behind the Ingress / Gateway, the client address for the OAuth rate limits comes from X-Forwarded-For. */}}
{{- $proxies := .Values.oauthRoute.trustedProxies | default (ternary (list) .Values.gateway.trustedProxies .Values.gateway.tls.enabled) }}
{{- if and .Values.oauthRoute.enabled $proxies }}
{{- $_ := set $cfg.oauth "rate_limits" (dict "trusted_proxies" $proxies) }}
{{- end }}
{{- if .Values.internalTls.enabled }}
{{- $_ := set $cfg "grpc_tls" (include "chataigne.internalTlsServer" . | fromJson) }}
{{- if .Values.internalTls.oauthHttp }}
{{- /* Callers of /token need no client certificate: the OAuth client authenticates itself. */}}
{{- $_ := set $cfg "http_tls" (omit (include "chataigne.internalTlsServer" . | fromJson) "client_ca_file") }}
{{- end }}
{{- end }}
{{- include "chataigne.toml" (mergeOverwrite $cfg (deepCopy .Values.authService.config)) -}}
{{- end -}}

{{- define "chataigne.config.toolService" -}}
{{- $ := . -}}
{{- $cfg := dict
  "listen" (printf "0.0.0.0:%d" (int .Values.toolService.ports.grpc))
  "auth_service_url" (include "chataigne.grpcUrl" (dict "root" $ "component" "auth-service" "port" .Values.authService.ports.grpc))
-}}
{{- if .Values.toolService.metrics.enabled }}
{{- $_ := set $cfg "metrics_listen" (printf "0.0.0.0:%d" (int .Values.toolService.metrics.port)) }}
{{- end }}
{{- if .Values.internalTls.enabled }}
{{- $_ := set $cfg "tls" (include "chataigne.internalTlsServer" . | fromJson) }}
{{- $_ := set $cfg "auth_service_tls" (include "chataigne.internalTlsClient" . | fromJson) }}
{{- end }}
{{- include "chataigne.toml" (mergeOverwrite $cfg (deepCopy .Values.toolService.config)) -}}
{{- end -}}

{{/*
A small TOML writer (Helm's toToml turns YAML integers into floats, which
typed configs refuse). Scalars first, then sub-tables; keys sorted; null
values are left out; maps inside lists become inline tables.
*/}}
{{- define "chataigne.toml" -}}
{{- include "chataigne.toml.table" (dict "table" . "prefix" "") -}}
{{- end -}}

{{- define "chataigne.toml.key" -}}
{{- if regexMatch "^[A-Za-z0-9_-]+$" . -}}{{ . }}{{- else -}}{{ toJson . }}{{- end -}}
{{- end -}}

{{- define "chataigne.toml.value" -}}
{{- $v := . -}}
{{- if kindIs "string" $v -}}
{{ toJson $v }}
{{- else if kindIs "bool" $v -}}
{{ $v }}
{{- else if or (kindIs "float64" $v) (kindIs "int" $v) (kindIs "int64" $v) -}}
{{- if eq (float64 $v) (floor $v) -}}{{ int64 $v }}{{- else -}}{{ $v }}{{- end -}}
{{- else if kindIs "slice" $v -}}
[{{ range $i, $e := $v }}{{ if $i }}, {{ end }}{{ include "chataigne.toml.value" $e }}{{ end }}]
{{- else if kindIs "map" $v -}}
{ {{- range $i, $k := keys $v | sortAlpha }}{{ if $i }},{{ end }} {{ include "chataigne.toml.key" $k }} = {{ include "chataigne.toml.value" (get $v $k) }}{{ end }} }
{{- else -}}
{{ fail (printf "config: cannot write %v (%s) as TOML" $v (kindOf $v)) }}
{{- end -}}
{{- end -}}

{{- define "chataigne.toml.table" -}}
{{- $t := .table -}}
{{- $prefix := .prefix -}}
{{- range $k := keys $t | sortAlpha }}
{{- $v := get $t $k }}
{{- if and (not (kindIs "map" $v)) (not (kindIs "invalid" $v)) }}
{{ include "chataigne.toml.key" $k }} = {{ include "chataigne.toml.value" $v }}
{{- end }}
{{- end }}
{{- range $k := keys $t | sortAlpha }}
{{- $v := get $t $k }}
{{- if kindIs "map" $v }}
{{- $full := ternary (include "chataigne.toml.key" $k) (printf "%s.%s" $prefix (include "chataigne.toml.key" $k)) (eq $prefix "") }}

[{{ $full }}]
{{- include "chataigne.toml.table" (dict "table" $v "prefix" $full) }}
{{- end }}
{{- end }}
{{- end -}}
