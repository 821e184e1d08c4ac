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

{{/* The self-signed serving pair and its CA, base64: the Secret's if it exists (an
     upgrade keeps it), else generated (ECDSA P-256, as certs/gen-certs.sh makes). Made
     once per render and cached, so the Secret and the caBundle agree. */}}
{{- define "kubegap.selfSignedTLS" -}}
{{- if not (hasKey .Values "_kubegapTLS") -}}
{{- $name := include "kubegap.fullname" . -}}
{{- $svc := printf "%s.%s.svc" $name .Release.Namespace -}}
{{- $secret := lookup "v1" "Secret" .Release.Namespace (include "kubegap.tlsSecret" .) -}}
{{- $pair := dict -}}
{{- if and $secret $secret.data (hasKey $secret.data "tls.crt") (hasKey $secret.data "ca.crt") -}}
{{- $pair = dict "crt" (index $secret.data "tls.crt") "key" (index $secret.data "tls.key") "ca" (index $secret.data "ca.crt") -}}
{{- else -}}
{{- $days := int .Values.certificates.selfSigned.validityDays -}}
{{- $caKey := genPrivateKey "ecdsa" -}}
{{- $ca := genCAWithKey (printf "%s CA" $name) $days $caKey -}}
{{- $leafKey := genPrivateKey "ecdsa" -}}
{{- $names := list $name (printf "%s.%s" $name .Release.Namespace) $svc (printf "%s.cluster.local" $svc) -}}
{{- $leaf := genSignedCertWithKey $svc nil $names $days $ca $leafKey -}}
{{- $pair = dict "crt" ($leaf.Cert | b64enc) "key" ($leaf.Key | b64enc) "ca" ($ca.Cert | b64enc) -}}
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
