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

{{/* True ("true") when config.auth verifies RS256 tokens (public keys or a JWKS file); else HS256. */}}
{{- define "docqa.rs256" -}}
{{- $auth := default dict .Values.config.auth }}
{{- if or $auth.rs256_public_key_file $auth.jwks_file }}true{{- end }}
{{- end }}

{{/* Refuse, at `helm install`, a release whose pods could not agree on callers' identity or on TLS. */}}
{{- define "docqa.validate" -}}
{{- $auth := default dict .Values.config.auth }}
{{- $server := default dict .Values.config.server }}
{{- if $auth.hs256_secret_file }}
{{- fail "config.auth.hs256_secret_file is set by the chart: name the Secret in secrets.jwtSigning.existingSecret instead" }}
{{- end }}
{{- if hasKey $server "tls" }}
{{- fail "config.server.tls is set by the chart: use the tls.* values (tls.enabled, tls.existingSecret, tls.clientCA, tls.clientAuth)" }}
{{- end }}
{{- if include "docqa.rs256" . }}
{{- if .Values.secrets.jwtSigning.existingSecret }}
{{- fail "auth: RS256 keys (config.auth.rs256_public_key_file / jwks_file) and secrets.jwtSigning.existingSecret are both set; choose one" }}
{{- end }}
{{- if not .Values.secrets.jwt.existingSecret }}
{{- fail "auth: config.auth.rs256_public_key_file / jwks_file name files in /etc/docqa/jwt: set secrets.jwt.existingSecret to the Secret holding them" }}
{{- end }}
{{- else if not .Values.secrets.jwtSigning.existingSecret }}
{{- fail "auth: HS256 tokens need one signing key shared by every replica: create it (kubectl create secret generic docqa-jwt-signing --from-literal=hs256-secret=\"$(openssl rand -base64 48)\") and set secrets.jwtSigning.existingSecret, or verify RS256 tokens (secrets.jwt.existingSecret with config.auth.rs256_public_key_file or jwks_file). The chart never lets a pod generate its own key." }}
{{- end }}
{{- if not (and $auth.issuer $auth.audience) }}
{{- fail "auth: config.auth.issuer and config.auth.audience are required, so that a token issued for another application is refused" }}
{{- end }}
{{- if .Values.tls.enabled }}
{{- if not .Values.tls.existingSecret }}
{{- fail "tls.enabled needs tls.existingSecret: a kubernetes.io/tls Secret with tls.crt and tls.key" }}
{{- end }}
{{- if and (ne .Values.tls.clientAuth "none") (not .Values.tls.clientCA.existingSecret) }}
{{- fail (printf "tls.clientAuth %s needs tls.clientCA.existingSecret: the CA bundle that signs client certificates" .Values.tls.clientAuth) }}
{{- end }}
{{- if and (eq .Values.tls.clientAuth "none") .Values.tls.clientCA.existingSecret }}
{{- fail "tls.clientCA.existingSecret is set but tls.clientAuth is none: say who must present a client certificate (grpc or all)" }}
{{- end }}
{{- else if or (ne .Values.tls.clientAuth "none") .Values.tls.clientCA.existingSecret }}
{{- fail "tls.clientAuth / tls.clientCA need tls.enabled: client certificates are asked for over TLS" }}
{{- end }}
{{- end }}

{{/* The service's configuration file: values.config plus what the chart decides (listen addresses, ports,
TLS files, the HS256 key file). */}}
{{- define "docqa.configFile" -}}
{{- $server := dict "host" "0.0.0.0" "grpc_port" (int .Values.service.grpcPort) "http_port" (int .Values.service.httpPort) "metrics_port" (int .Values.service.metricsPort) }}
{{- if .Values.tls.enabled }}
{{- $tls := dict "cert_file" "/etc/docqa/tls/tls.crt" "key_file" "/etc/docqa/tls/tls.key" "client_auth" .Values.tls.clientAuth }}
{{- if .Values.tls.clientCA.existingSecret }}
{{- $_ := set $tls "client_ca_file" (printf "/etc/docqa/client-ca/%s" .Values.tls.clientCA.key) }}
{{- end }}
{{- $_ := set $server "tls" $tls }}
{{- end }}
{{- $chart := dict "server" $server "data_dir" "/var/lib/docqa" }}
{{- if .Values.secrets.jwtSigning.existingSecret }}
{{- $_ := set $chart "auth" (dict "hs256_secret_file" (printf "/etc/docqa/jwt-signing/%s" .Values.secrets.jwtSigning.key)) }}
{{- end }}
{{- toYaml (mustMergeOverwrite (deepCopy .Values.config) $chart) }}
{{- end }}

{{/* The indexer's and the migration Job's configuration file: no server, no auth, no language model and
no reranker (they neither serve nor answer), so they need none of those secrets. */}}
{{- define "docqa.jobsConfigFile" -}}
{{- toYaml (mustMergeOverwrite (omit (deepCopy .Values.config) "server" "auth" "generator" "rerank") (dict "data_dir" "/var/lib/docqa")) }}
{{- end }}

{{/* Environment of every pod: HOME, the OpenSearch URL (no secret) and the database URL. */}}
{{- define "docqa.env" -}}
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
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The OpenSearch credentials: the service and the indexer (the migration Job never calls OpenSearch). */}}
{{- define "docqa.opensearchEnv" -}}
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
{{- end }}

{{/* Secrets only the service pods get: the watsonx key, the metrics token, the shared rate-limit store's URL. */}}
{{- define "docqa.serverEnv" -}}
{{- with .Values.secrets.rateLimitStore.existingSecret }}
- name: DOCQA_LIMITS__RATE__STORAGE_URI
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.secrets.rateLimitStore.key }}
{{- end }}
{{- with .Values.secrets.watsonx.existingSecret }}
- name: DOCQA_GENERATOR__WATSONX__API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.secrets.watsonx.key }}
{{- end }}
{{- with .Values.secrets.metricsToken.existingSecret }}
- name: DOCQA_SERVER__METRICS_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.secrets.metricsToken.key }}
{{- end }}
{{- end }}

{{/* NetworkPolicy egress rules: one per name in .names, from .egress (networkPolicy.egress); an empty `to`
allows any peer on the rule's ports. */}}
{{- define "docqa.egressRules" -}}
{{- range $name := .names }}
{{- $rule := get $.egress $name }}
- {{- with $rule.to }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  ports:
    {{- toYaml $rule.ports | nindent 4 }}
{{- end }}
{{- end }}

{{/* The pod security context: values.podSecurityContext, with seccomp RuntimeDefault unless it names a profile. */}}
{{- define "docqa.podSecurityContext" -}}
{{- $context := deepCopy .Values.podSecurityContext }}
{{- if not $context.seccompProfile }}
{{- $_ := set $context "seccompProfile" (dict "type" "RuntimeDefault") }}
{{- end }}
{{- toYaml $context }}
{{- end }}

{{- define "docqa.volumeMounts" -}}
- name: config
  mountPath: /etc/docqa/config
  readOnly: true
- name: data
  mountPath: /var/lib/docqa
- name: tmp
  mountPath: /tmp
{{- end }}

{{- define "docqa.volumes" -}}
- name: config
  configMap:
    name: {{ include "docqa.fullname" . }}
- name: data
  emptyDir: {}
- name: tmp
  emptyDir: {}
{{- end }}

{{/* Files only the service pods mount: JWT keys, the HS256 signing key, the TLS certificate and client CA. */}}
{{- define "docqa.serverVolumeMounts" -}}
{{- if .Values.secrets.jwt.existingSecret }}
- name: jwt
  mountPath: /etc/docqa/jwt
  readOnly: true
{{- end }}
{{- if .Values.secrets.jwtSigning.existingSecret }}
- name: jwt-signing
  mountPath: /etc/docqa/jwt-signing
  readOnly: true
{{- end }}
{{- if .Values.tls.enabled }}
- name: tls
  mountPath: /etc/docqa/tls
  readOnly: true
{{- end }}
{{- if .Values.tls.clientCA.existingSecret }}
- name: client-ca
  mountPath: /etc/docqa/client-ca
  readOnly: true
{{- end }}
{{- end }}

{{- define "docqa.serverVolumes" -}}
{{- with .Values.secrets.jwt.existingSecret }}
- name: jwt
  secret:
    secretName: {{ . }}
    defaultMode: 0440
{{- end }}
{{- with .Values.secrets.jwtSigning.existingSecret }}
- name: jwt-signing
  secret:
    secretName: {{ . }}
    defaultMode: 0440
    items:
      - key: {{ $.Values.secrets.jwtSigning.key }}
        path: {{ $.Values.secrets.jwtSigning.key }}
{{- end }}
{{- if .Values.tls.enabled }}
- name: tls
  secret:
    secretName: {{ .Values.tls.existingSecret }}
    defaultMode: 0440
    items:
      - {key: tls.crt, path: tls.crt}
      - {key: tls.key, path: tls.key}
{{- end }}
{{- with .Values.tls.clientCA.existingSecret }}
- name: client-ca
  secret:
    secretName: {{ . }}
    defaultMode: 0440
    items:
      - key: {{ $.Values.tls.clientCA.key }}
        path: {{ $.Values.tls.clientCA.key }}
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
  automountServiceAccountToken: false
  {{- with .Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    {{- include "docqa.podSecurityContext" . | nindent 4 }}
  containers:
    - name: indexer
      image: {{ include "docqa.image" . | quote }}
      imagePullPolicy: {{ .Values.image.pullPolicy }}
      args: ["index", {{ .Values.indexer.path | quote }}, "--store", {{ .Values.indexer.store | quote }}, "--quiet"]
      securityContext:
        {{- toYaml .Values.securityContext | nindent 8 }}
      env:
        - name: DOCQA_CONFIG
          value: /etc/docqa/config/jobs.yaml
        {{- include "docqa.env" . | nindent 8 }}
        {{- include "docqa.opensearchEnv" . | nindent 8 }}
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
