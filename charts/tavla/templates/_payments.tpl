{{/*
The wallet's payment-provider settings (values: payments), as container env,
volume mounts and volumes. Only the wallet's Deployment includes them; the
migration Job does not need them. Secrets are mounted as files, never inlined.
*/}}
{{- define "tavla.paymentsEnv" -}}
{{- $p := .Values.payments -}}
- name: TAVLA_WALLET_PAYMENT_PROVIDER
  value: {{ $p.provider | quote }}
{{- if eq $p.provider "http" }}
- name: TAVLA_WALLET_PROVIDER_URL
  value: {{ $p.http.url | quote }}
- name: TAVLA_WALLET_PROVIDER_API_KEY_FILE
  value: /var/run/secrets/tavla/payments/api-key/{{ $p.http.apiKey.key }}
- name: TAVLA_WALLET_WEBHOOK_SECRET_FILE
  value: /var/run/secrets/tavla/payments/webhook-secret/{{ $p.http.webhookSecret.key }}
- name: TAVLA_WALLET_WEBHOOK_HOST
  value: "0.0.0.0"
- name: TAVLA_WALLET_WEBHOOK_PORT
  value: {{ $p.http.webhookPort | quote }}
- name: TAVLA_WALLET_WEBHOOK_TOLERANCE_SECONDS
  value: {{ $p.http.webhookToleranceSeconds | quote }}
- name: TAVLA_WALLET_PROVIDER_TIMEOUT_SECONDS
  value: {{ $p.http.timeoutSeconds | quote }}
{{- end }}
{{- if $p.sandbox.realMoneyUnsafe }}
- name: TAVLA_WALLET_SANDBOX_REAL_MONEY_UNSAFE
  value: "true"
- name: TAVLA_NOT_PRODUCTION
  value: "true"
{{- end }}
{{- end }}

{{- define "tavla.paymentsVolumeMounts" -}}
{{- if eq .Values.payments.provider "http" }}
- name: payment-provider-api-key
  mountPath: /var/run/secrets/tavla/payments/api-key
  readOnly: true
- name: payment-provider-webhook-secret
  mountPath: /var/run/secrets/tavla/payments/webhook-secret
  readOnly: true
{{- end }}
{{- end }}

{{- define "tavla.paymentsVolumes" -}}
{{- $h := .Values.payments.http -}}
{{- if eq .Values.payments.provider "http" }}
- name: payment-provider-api-key
  secret:
    secretName: {{ required "payments.http.apiKey.existingSecret is required" $h.apiKey.existingSecret }}
    defaultMode: 0440
    items:
      - key: {{ $h.apiKey.key }}
        path: {{ $h.apiKey.key }}
- name: payment-provider-webhook-secret
  secret:
    secretName: {{ required "payments.http.webhookSecret.existingSecret is required" $h.webhookSecret.existingSecret }}
    defaultMode: 0440
    items:
      - key: {{ $h.webhookSecret.key }}
        path: {{ $h.webhookSecret.key }}
{{- end }}
{{- end }}
