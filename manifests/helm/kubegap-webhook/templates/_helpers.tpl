{{/* The object names: fullnameOverride ("kubegap-webhook", the base's). */}}
{{- define "kubegap.fullname" -}}
{{- .Values.fullnameOverride | default (printf "%s-kubegap-webhook" .Release.Name) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels every object carries (the base's, plus Helm's own). */}}
{{- define "kubegap.labels" -}}
app.kubernetes.io/name: kubegap-webhook
app.kubernetes.io/part-of: kubegap
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The pods' selector. */}}
{{- define "kubegap.selector" -}}
app.kubernetes.io/name: kubegap-webhook
app.kubernetes.io/component: webhook
{{- end -}}

{{/* The Secret the serving certificate lives in. */}}
{{- define "kubegap.tlsSecret" -}}
{{- printf "%s-tls" (include "kubegap.fullname" .) -}}
{{- end -}}

{{/* Namespaces the webhook never reviews: the configured ones and its own. */}}
{{- define "kubegap.excluded" -}}
{{- $list := concat .Values.webhook.excludedNamespaces (list .Release.Namespace) | uniq -}}
{{- toJson $list -}}
{{- end -}}

{{/* The self-signed serving pair and its CA, base64. The CA (10 years by default) is
     kept in a Secret of its own that no pod mounts; the serving certificate lives
     validityDays (at most a year) and is issued again by the same CA at the first
     install or upgrade within renewBeforeDays of its end, so the caBundle does not
     change and the webhook picks the new pair up from its Secret volume (--reload-
     interval). A Secret from a release before the CA Secret existed has no CA key to
     sign with: the CA is made anew then (the caBundle changes with it). Made once per
     render and cached, so the Secrets and the caBundle agree. ECDSA P-256, as
     certs/gen-certs.sh makes. */}}
{{- define "kubegap.selfSignedTLS" -}}
{{- if not (hasKey .Values "_kubegapTLS") -}}
{{- $name := include "kubegap.fullname" . -}}
{{- $svc := printf "%s.%s.svc" $name .Release.Namespace -}}
{{- $cfg := .Values.certificates.selfSigned -}}
{{- $now := now | unixEpoch | int64 -}}
{{- $caSecret := lookup "v1" "Secret" .Release.Namespace (printf "%s-ca" (include "kubegap.tlsSecret" .)) -}}
{{- $ca := dict -}}
{{- $caNew := true -}}
{{- if and $caSecret $caSecret.data (hasKey $caSecret.data "tls.crt") (hasKey $caSecret.data "tls.key") -}}
{{- $ca = buildCustomCert (index $caSecret.data "tls.crt") (index $caSecret.data "tls.key") -}}
{{- $caNew = false -}}
{{- else -}}
{{- $ca = genCAWithKey (printf "%s CA" $name) (int $cfg.caValidityDays) (genPrivateKey "ecdsa") -}}
{{- end -}}
{{- $secret := lookup "v1" "Secret" .Release.Namespace (include "kubegap.tlsSecret" .) -}}
{{- $notAfter := 0 -}}
{{- if and $secret $secret.metadata.annotations -}}
{{- $notAfter = index $secret.metadata.annotations "kubegap.io/not-after-unix" | default "0" | int64 -}}
{{- end -}}
{{- $renewAt := sub $notAfter (mul (int $cfg.renewBeforeDays) 86400) -}}
{{- $pair := dict -}}
{{- if and (not $caNew) $secret $secret.data (hasKey $secret.data "tls.crt") (lt $now $renewAt) -}}
{{- $pair = dict "crt" (index $secret.data "tls.crt") "key" (index $secret.data "tls.key") "notAfter" (printf "%d" $notAfter) -}}
{{- else -}}
{{- $days := int $cfg.validityDays -}}
{{- $names := list $name (printf "%s.%s" $name .Release.Namespace) $svc (printf "%s.cluster.local" $svc) -}}
{{- $leaf := genSignedCertWithKey $svc nil $names $days $ca (genPrivateKey "ecdsa") -}}
{{- $pair = dict "crt" ($leaf.Cert | b64enc) "key" ($leaf.Key | b64enc) "notAfter" (printf "%d" (add $now (mul $days 86400))) -}}
{{- end -}}
{{- $_ := set $pair "ca" ($ca.Cert | b64enc) -}}
{{- $_ := set $pair "caKey" ($ca.Key | b64enc) -}}
{{- /* The API server's client certificate (CN kube-apiserver), from the same CA: kept
       while the CA is and its end is past renewBeforeDays, like the serving pair. */ -}}
{{- $client := lookup "v1" "Secret" .Release.Namespace (include "kubegap.apiServerClientSecret" .) -}}
{{- $clientEnd := 0 -}}
{{- if and $client $client.metadata.annotations -}}
{{- $clientEnd = index $client.metadata.annotations "kubegap.io/not-after-unix" | default "0" | int64 -}}
{{- end -}}
{{- if and (not $caNew) $client $client.data (hasKey $client.data "tls.crt") (hasKey $client.data "tls.key") (lt $now (sub $clientEnd (mul (int $cfg.renewBeforeDays) 86400))) -}}
{{- $_ := set $pair "clientCrt" (index $client.data "tls.crt") -}}
{{- $_ := set $pair "clientKey" (index $client.data "tls.key") -}}
{{- $_ := set $pair "clientNotAfter" (printf "%d" $clientEnd) -}}
{{- else -}}
{{- $days := int $cfg.validityDays -}}
{{- $leaf := genSignedCertWithKey "kube-apiserver" nil nil $days $ca (genPrivateKey "ecdsa") -}}
{{- $_ := set $pair "clientCrt" ($leaf.Cert | b64enc) -}}
{{- $_ := set $pair "clientKey" ($leaf.Key | b64enc) -}}
{{- $_ := set $pair "clientNotAfter" (printf "%d" (add $now (mul $days 86400))) -}}
{{- end -}}
{{- $_ := set .Values "_kubegapTLS" $pair -}}
{{- end -}}
{{- toJson .Values._kubegapTLS -}}
{{- end -}}

{{/* The audit Lease's name: serve.auditLease's NAME, else the binary's default. */}}
{{- define "kubegap.auditLeaseName" -}}
{{- $lease := .Values.serve.auditLease | default "" -}}
{{- if $lease -}}{{- last (splitList "/" $lease) -}}{{- else -}}kubegap-webhook-audit{{- end -}}
{{- end -}}

{{/* The Secret holding the client certificate the API server presents to the webhook
     (--client-ca): the administrator copies it to the control plane; no pod but the
     helm test mounts it. */}}
{{- define "kubegap.apiServerClientSecret" -}}
{{- printf "%s-apiserver-client" (include "kubegap.fullname" .) -}}
{{- end -}}

{{/* Who may send reviews: refuses to render when nothing limits the callers, unless
     networkPolicy.allowAnyCaller says so (docs/security.md, "Who may call"). */}}
{{- define "kubegap.checkCallers" -}}
{{- $np := .Values.networkPolicy -}}
{{- $byNetwork := and $np.enabled (or $np.webhookSources $np.webhookPeers) -}}
{{- if not (or .Values.serve.clientCAKey $byNetwork $np.allowAnyCaller) -}}
{{- fail (printf "serve.clientCAKey is empty, so the webhook would take reviews from any pod: keep it (the API server presents the client certificate in the Secret %s; docs/security.md, \"Who may call\"), or limit port 8443 with networkPolicy.webhookSources or webhookPeers, or set networkPolicy.allowAnyCaller=true to accept every caller" (include "kubegap.apiServerClientSecret" .)) -}}
{{- end -}}
{{- end -}}
