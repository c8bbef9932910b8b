{{/* Name of every object: the release name, with the chart's name unless the release already carries it. */}}
{{- define "tpproxy.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "tpproxy.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "tpproxy.labels" -}}
{{ include "tpproxy.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "tpproxy.secretName" -}}
{{- .Values.secrets.existingSecret | default (include "tpproxy.fullname" .) -}}
{{- end -}}

{{/*
The replica count the budget is split over: the most replicas that can run
at once.
*/}}
{{- define "tpproxy.maxReplicas" -}}
{{- if .Values.autoscaling.enabled -}}
{{- int .Values.autoscaling.maxReplicas -}}
{{- else -}}
{{- int .Values.replicaCount -}}
{{- end -}}
{{- end -}}

{{/*
One replica's backend.pool_size: floor(budget / maxReplicas), so that
maxReplicas x share never exceeds the fleet's budget.
*/}}
{{- define "tpproxy.poolShare" -}}
{{- $budget := int (required "config.backend.pool_size (the fleet's connection budget) is required" .Values.config.backend.pool_size) -}}
{{- $n := int (include "tpproxy.maxReplicas" .) -}}
{{- if lt $n 1 -}}
{{- fail (printf "the replica count to split backend.pool_size over is %d: it must be at least 1" $n) -}}
{{- end -}}
{{- $share := div $budget $n -}}
{{- if lt $share 1 -}}
{{- fail (printf "backend.pool_size %d split over %d replicas gives each less than 1 connection: raise the budget or lower the replica count" $budget $n) -}}
{{- end -}}
{{- $share -}}
{{- end -}}

{{/* tpproxy.yaml: the user's config with the keys the chart owns set. */}}
{{- define "tpproxy.config" -}}
{{- $cfg := deepCopy .Values.config -}}
{{- if hasKey $cfg "shutdown_timeout" -}}
{{- fail "set shutdownTimeoutSeconds, not config.shutdown_timeout: the pod's grace period is derived from it" -}}
{{- end -}}
{{- if hasKey $cfg "listen" -}}
{{- fail "set ports.client, not config.listen" -}}
{{- end -}}
{{- $_ := set $cfg "listen" (printf "0.0.0.0:%d" (int .Values.ports.client)) -}}
{{- $_ = set $cfg "shutdown_timeout" (printf "%ds" (int .Values.shutdownTimeoutSeconds)) -}}
{{- $backend := $cfg.backend -}}
{{- $_ = set $backend "pool_size" (int (include "tpproxy.poolShare" .)) -}}
{{- $admin := $cfg.admin | default dict -}}
{{- if or (hasKey $admin "listen") (hasKey $admin "http_listen") (hasKey $admin "password") (hasKey $backend "password") -}}
{{- fail "admin.listen and admin.http_listen come from ports, passwords from secrets: do not set them in config" -}}
{{- end -}}
{{- $_ = set $admin "listen" (printf "0.0.0.0:%d" (int .Values.ports.admin)) -}}
{{- $_ = set $admin "http_listen" (printf "0.0.0.0:%d" (int .Values.ports.http)) -}}
{{- $_ = set $cfg "admin" $admin -}}
{{- toYaml $cfg -}}
{{- end -}}
