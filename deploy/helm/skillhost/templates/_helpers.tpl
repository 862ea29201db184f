{{/* The chart's name, and the release's full name (at most 63 characters). */}}
{{- define "skillhost.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "skillhost.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The labels that select the pods: the Deployment, Service and PDB share them. */}}
{{- define "skillhost.selectorLabels" -}}
app.kubernetes.io/name: {{ include "skillhost.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "skillhost.labels" -}}
{{ include "skillhost.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{/*
terminationGracePeriodSeconds: the preStop sleep, then the daemon's own
drain (--grace), then a margin before the kubelet's SIGKILL.
*/}}
{{- define "skillhost.terminationGracePeriodSeconds" -}}
{{- add (int .Values.preStopSleepSeconds) (int .Values.graceSeconds) (int .Values.terminationMarginSeconds) }}
{{- end }}

{{/* The etcd URL of --state: etcd[s]://[user@]host:port[,host:port]/prefix. */}}
{{- define "skillhost.stateURL" -}}
{{- $e := .Values.etcd -}}
{{- $scheme := ternary "etcds" "etcd" (or $e.tls (and $e.tlsSecret.name true)) -}}
{{- $user := ternary (printf "%s@" $e.user) "" (ne $e.user "") -}}
{{- printf "%s://%s%s/%s" $scheme $user (join "," $e.endpoints) (trimPrefix "/" $e.prefix) }}
{{- end }}
