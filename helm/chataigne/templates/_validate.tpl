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
