{{- define "docqa.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "docqa.fullname" -}}
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

{{- define "docqa.selectorLabels" -}}
app.kubernetes.io/name: {{ include "docqa.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "docqa.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "docqa.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "docqa.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "docqa.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "docqa.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* The OpenSearch URL: the official chart's service in this release, else the external one. */}}
{{- define "docqa.opensearchUrl" -}}
{{- if .Values.opensearch.enabled }}
{{- printf "https://%s-%s:9200" (default "opensearch-cluster" .Values.opensearch.clusterName) (default "master" .Values.opensearch.nodeGroup) }}
{{- else }}
{{- .Values.opensearch.externalUrl }}
{{- end }}
{{- end }}

{{/* The DocQA configuration file: values.config plus what the chart decides (listen address, ports). */}}
{{- define "docqa.configFile" -}}
{{- $server := dict "server" (dict "host" "0.0.0.0" "grpc_port" (int .Values.service.grpcPort) "http_port" (int .Values.service.httpPort)) }}
{{- $config := mustMergeOverwrite (deepCopy .Values.config) $server (dict "data_dir" "/var/lib/docqa") }}
{{- toYaml $config }}
{{- end }}

{{/* Environment shared by the service, the migration Job and the indexer: the config file and the secrets. */}}
{{- define "docqa.env" -}}
- name: DOCQA_CONFIG
  value: /etc/docqa/config/docqa.yaml
- name: HOME
  value: /tmp
{{- with (include "docqa.opensearchUrl" .) }}
- name: DOCQA_INDEX__OPENSEARCH__URL
  value: {{ . | quote }}
{{- end }}
{{- with .Values.secrets.database.existingSecret }}
- name: DOCQA_DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.secrets.database.key }}
{{- end }}
{{- with .Values.secrets.watsonx.existingSecret }}
- name: DOCQA_GENERATOR__WATSONX__API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.secrets.watsonx.key }}
{{- end }}
{{- with .Values.secrets.opensearch.existingSecret }}
- name: DOCQA_INDEX__OPENSEARCH__USERNAME
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.secrets.opensearch.usernameKey }}
- name: DOCQA_INDEX__OPENSEARCH__PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.secrets.opensearch.passwordKey }}
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "docqa.volumeMounts" -}}
- name: config
  mountPath: /etc/docqa/config
  readOnly: true
- name: data
  mountPath: /var/lib/docqa
- name: tmp
  mountPath: /tmp
{{- if .Values.secrets.jwt.existingSecret }}
- name: jwt
  mountPath: /etc/docqa/jwt
  readOnly: true
{{- end }}
{{- end }}

{{- define "docqa.volumes" -}}
- name: config
  configMap:
    name: {{ include "docqa.fullname" . }}
- name: data
  emptyDir: {}
- name: tmp
  emptyDir: {}
{{- with .Values.secrets.jwt.existingSecret }}
- name: jwt
  secret:
    secretName: {{ . }}
{{- end }}
{{- end }}

{{/* The indexer's pod: `docqa index <path> --store <store>` with the documents' volume. */}}
{{- define "docqa.indexerPod" -}}
metadata:
  labels:
    {{- include "docqa.labels" . | nindent 4 }}
    app.kubernetes.io/component: indexer
spec:
  restartPolicy: Never
  serviceAccountName: {{ include "docqa.serviceAccountName" . }}
  {{- with .Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    {{- toYaml .Values.podSecurityContext | nindent 4 }}
  containers:
    - name: indexer
      image: {{ include "docqa.image" . | quote }}
      imagePullPolicy: {{ .Values.image.pullPolicy }}
      args: ["index", {{ .Values.indexer.path | quote }}, "--store", {{ .Values.indexer.store | quote }}, "--quiet"]
      securityContext:
        {{- toYaml .Values.securityContext | nindent 8 }}
      env:
        {{- include "docqa.env" . | nindent 8 }}
      resources:
        {{- toYaml .Values.indexer.resources | nindent 8 }}
      volumeMounts:
        {{- include "docqa.volumeMounts" . | nindent 8 }}
        {{- if .Values.indexer.volume }}
        - name: documents
          mountPath: {{ .Values.indexer.path }}
          readOnly: true
        {{- end }}
  volumes:
    {{- include "docqa.volumes" . | nindent 4 }}
    {{- with .Values.indexer.volume }}
    - name: documents
      {{- toYaml . | nindent 6 }}
    {{- end }}
{{- end }}
