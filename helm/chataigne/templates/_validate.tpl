{{/*
Checks of value combinations that the JSON schema cannot express. Included
once from configmap.yaml; any failure stops the render with a message.
*/}}
{{- define "chataigne.validate" -}}
{{- $v := .Values -}}
{{- $modes := list -}}
{{- if $v.ingress.enabled }}{{ $modes = append $modes "ingress.enabled" }}{{ end -}}
{{- if $v.httpRoute.enabled }}{{ $modes = append $modes "httpRoute.enabled" }}{{ end -}}
{{- if $v.gateway.tls.enabled }}{{ $modes = append $modes "gateway.tls.enabled" }}{{ end -}}
{{- if ne (len $modes) 1 -}}
{{- fail (printf "exactly one way of exposing the gateway on 443 must be enabled (ingress.enabled, httpRoute.enabled or gateway.tls.enabled); got %d: %s" (len $modes) (join ", " $modes)) -}}
{{- end -}}
{{- if and $v.ingress.enabled (not $v.ingress.tls.secretName) -}}
{{- fail "ingress.enabled needs ingress.tls.secretName: the existing TLS Secret for ingress.host" -}}
{{- end -}}
{{- if and $v.gateway.tls.enabled (not $v.gateway.tls.secretName) -}}
{{- fail "gateway.tls.enabled needs gateway.tls.secretName: the existing TLS Secret mounted into the gateway pods" -}}
{{- end -}}
{{- if and $v.httpRoute.enabled (not $v.httpRoute.parentRefs) -}}
{{- fail "httpRoute.enabled needs httpRoute.parentRefs: the Gateway whose 443 listener terminates TLS" -}}
{{- end -}}
{{- if not (hasPrefix "https://" ($v.publicUrl | default "")) -}}
{{- fail "publicUrl is required and must be the https:// URL clients use (e.g. https://mcp.example.com)" -}}
{{- end -}}
{{- if not (regexMatch "^https?://" ($v.authorizationServer | default "")) -}}
{{- fail "authorizationServer is required: the issuer URL of the OAuth authorization server" -}}
{{- end -}}
{{- if $v.oauthRoute.enabled -}}
{{- if not (regexMatch "^https://[^/:?#]+/?$" ($v.authorizationServer | default "")) -}}
{{- fail "oauthRoute.enabled needs authorizationServer as https://<host>, without port or path: the chart publishes the authorization server's endpoints at the root of that host on 443" -}}
{{- end -}}
{{- $host := include "chataigne.oauthHost" . -}}
{{- $shared := include "chataigne.oauthSharesGatewayHost" . -}}
{{- if and $v.gateway.tls.enabled $shared -}}
{{- fail (printf "oauthRoute: with gateway.tls.enabled the gateway's LoadBalancer owns %s; the authorization server needs a host of its own (authorizationServer)" $host) -}}
{{- end -}}
{{- if and (or $v.ingress.enabled $v.gateway.tls.enabled) (not (include "chataigne.oauthTlsSecret" .)) -}}
{{- fail (printf "oauthRoute.ingress.tls.secretName is required: the existing TLS Secret for the authorization server's host %s (ingress.tls.secretName is reused only when that host is ingress.host)" $host) -}}
{{- end -}}
{{- if and $shared (not $v.gateway.tls.enabled) -}}
{{- $gatewayPaths := ternary $v.ingress.paths $v.httpRoute.paths (and $v.ingress.enabled true) -}}
{{- range $a := $v.oauthRoute.paths -}}
{{- range $g := $gatewayPaths -}}
{{- $as := printf "%s/" (trimSuffix "/" $a) -}}
{{- $gs := printf "%s/" (trimSuffix "/" $g) -}}
{{- if or (hasPrefix $as $gs) (hasPrefix $gs $as) -}}
{{- fail (printf "oauthRoute.paths entry %s overlaps the gateway's path %s on the shared host %s: each request must reach exactly one service" $a $g $host) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- /* Profile hosts: each a host of its own, served by one endpoint. */ -}}
{{- $mcpHosts := list (include "chataigne.urlHost" ($v.publicUrl | default "")) -}}
{{- if $v.ingress.enabled }}{{ $mcpHosts = append $mcpHosts $v.ingress.host }}{{ end -}}
{{- if $v.httpRoute.enabled }}{{ $mcpHosts = concat $mcpHosts $v.httpRoute.hostnames }}{{ end -}}
{{- $seen := list -}}
{{- range $i, $p := $v.gateway.profileHosts -}}
{{- $host := lower $p.host -}}
{{- if has $host $seen -}}
{{- fail (printf "gateway.profileHosts: %s is listed twice: a host serves exactly one profile" $host) -}}
{{- end -}}
{{- $seen = append $seen $host -}}
{{- range $m := $mcpHosts -}}
{{- if eq $host (lower $m) -}}
{{- fail (printf "gateway.profileHosts[%d]: %s is the MCP host (publicUrl, ingress.host or httpRoute.hostnames), which serves the default endpoint: a profile host must be a host of its own, e.g. gemini.<MCP host>" $i $host) -}}
{{- end -}}
{{- end -}}
{{- if and $v.oauthRoute.enabled (eq $host (include "chataigne.oauthHost" $)) -}}
{{- fail (printf "gateway.profileHosts[%d]: %s is the authorization server's host (authorizationServer): a profile host must be a host of its own" $i $host) -}}
{{- end -}}
{{- if and (dig "tls" "secretName" "" $p) (not $v.ingress.enabled) -}}
{{- fail (printf "gateway.profileHosts[%d].tls.secretName is used by the Ingress only (ingress.enabled); with httpRoute.enabled the parent Gateway's listener, with gateway.tls.enabled the certificate of gateway.tls.secretName must cover %s" $i $host) -}}
{{- end -}}
{{- end -}}
{{- if and $v.gateway.profileHosts (hasKey $v.gateway.config "endpoints") -}}
{{- fail "gateway.config.endpoints and gateway.profileHosts are exclusive: the chart writes the gateway's endpoints (and the auth-service's allowed resources) from gateway.profileHosts" -}}
{{- end -}}
{{- range $key := list "gateway" "authService" "toolService" -}}
{{- $sa := (index $v $key).serviceAccount -}}
{{- if and (not $sa.create) (not $sa.name) -}}
{{- fail (printf "%s.serviceAccount.create=false needs %s.serviceAccount.name: the existing ServiceAccount the pods run as" $key $key) -}}
{{- end -}}
{{- end -}}
{{- $itls := $v.internalTls -}}
{{- if and (not $itls.enabled) (or $itls.certManager.enabled $itls.oauthHttp) -}}
{{- fail "internalTls.certManager.enabled and internalTls.oauthHttp need internalTls.enabled" -}}
{{- end -}}
{{- if and $itls.enabled $itls.certManager.enabled (not $itls.certManager.issuerRef.name) -}}
{{- fail "internalTls.certManager.enabled needs internalTls.certManager.issuerRef.name: the cert-manager Issuer or ClusterIssuer signing the internal certificates" -}}
{{- end -}}
{{- if and $v.migrations.enabled (not $v.migrations.serviceAccount.create) (not $v.migrations.serviceAccount.name) -}}
{{- fail "migrations.serviceAccount.create=false needs migrations.serviceAccount.name: the existing ServiceAccount the migration Jobs run as" -}}
{{- end -}}
{{- if $v.prometheusRule.enabled -}}
{{- range $key := list "authService" "toolService" -}}
{{- if not (index $v $key).metrics.enabled -}}
{{- fail (printf "prometheusRule.enabled alerts on all three services' metrics: set %s.metrics.enabled too" $key) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if $v.serviceMonitor.enabled -}}
{{- range $key := list "authService" "toolService" -}}
{{- if not (index $v $key).metrics.enabled -}}
{{- fail (printf "serviceMonitor.enabled scrapes all three services: set %s.metrics.enabled too (it adds metrics_listen and the <name>-internal Service)" $key) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $ports := dict
  "gateway" (list (int $v.gateway.ports.public) (int $v.gateway.ports.internal))
  "authService" (list (int $v.authService.ports.grpc) (int $v.authService.ports.http))
  "toolService" (list (int $v.toolService.ports.grpc))
-}}
{{- range $key := list "authService" "toolService" -}}
{{- $svc := index $v $key -}}
{{- if and $svc.metrics.enabled (has (int $svc.metrics.port) (index $ports $key)) -}}
{{- fail (printf "%s.metrics.port (%d) must differ from the service's other ports" $key (int $svc.metrics.port)) -}}
{{- end -}}
{{- end -}}
{{- if eq (int $v.authService.ports.grpc) (int $v.authService.ports.http) -}}
{{- fail "authService.ports.grpc and authService.ports.http must differ: only the OAuth HTTP port is published" -}}
{{- end -}}
{{- if eq (int $v.gateway.ports.public) (int $v.gateway.ports.internal) -}}
{{- fail "gateway.ports.public and gateway.ports.internal must differ: the internal port is never exposed publicly" -}}
{{- end -}}
{{- if $v.networkPolicy.enabled -}}
{{- if not $v.networkPolicy.egress.postgres.cidrs -}}
{{- fail "networkPolicy.egress.postgres.cidrs is required with networkPolicy.enabled: the managed PostgreSQL address ranges" -}}
{{- end -}}
{{- if not $v.networkPolicy.egress.redis.cidrs -}}
{{- fail "networkPolicy.egress.redis.cidrs is required with networkPolicy.enabled: the managed Redis address ranges" -}}
{{- end -}}
{{- end -}}
{{- range $key, $meta := include "chataigne.services" . | fromYaml -}}
{{- $svc := index $v $key -}}
{{- $hpa := $svc.autoscaling -}}
{{- $pdb := $svc.pdb -}}
{{- if and $hpa.enabled (gt (int $hpa.minReplicas) (int $hpa.maxReplicas)) -}}
{{- fail (printf "%s.autoscaling.minReplicas (%d) must not exceed maxReplicas (%d)" $key (int $hpa.minReplicas) (int $hpa.maxReplicas)) -}}
{{- end -}}
{{- if $pdb.enabled -}}
{{- $hasMin := not (kindIs "invalid" $pdb.minAvailable) -}}
{{- $hasMax := not (kindIs "invalid" $pdb.maxUnavailable) -}}
{{- if eq $hasMin $hasMax -}}
{{- fail (printf "%s.pdb: set exactly one of minAvailable and maxUnavailable" $key) -}}
{{- end -}}
{{- $replicas := ternary (int $hpa.minReplicas) (int $svc.replicas) (and $hpa.enabled true) -}}
{{- if and $hasMin (not (kindIs "string" $pdb.minAvailable)) (ge (int $pdb.minAvailable) $replicas) -}}
{{- fail (printf "%s.pdb.minAvailable (%d) must be lower than the replica count (%d, %s): otherwise no pod can ever be evicted and node drains block" $key (int $pdb.minAvailable) $replicas (ternary "autoscaling.minReplicas" "replicas" $hpa.enabled)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
