{{/*
Kafka TLS and SASL/SCRAM of one service (values: kafka.security), as container env,
volume mounts and volumes: (dict "root" $ "component" "wallet"). Only the services'
Deployments include them (migrations and the reconcile job never reach Kafka).
Each service has its own Kafka user: Secret "<secretPrefix><service>", its
password mounted as a file (TAVLA_KAFKA_SASL_PASSWORD_FILE), never inlined.
services/kit/events/connection.py refuses half settings at start.
*/}}
{{- define "tavla.kafkaEnv" -}}
{{- $k := .root.Values.kafka.security -}}
{{- $sasl := hasPrefix "SASL_" $k.protocol -}}
{{- $tls := or (eq $k.protocol "SSL") (eq $k.protocol "SASL_SSL") -}}
- name: TAVLA_KAFKA_SECURITY_PROTOCOL
  value: {{ $k.protocol | quote }}
{{- if $sasl }}
{{- $secret := printf "%s%s" $k.sasl.secretPrefix .component }}
- name: TAVLA_KAFKA_SASL_MECHANISM
  value: {{ $k.sasl.mechanism | quote }}
- name: TAVLA_KAFKA_SASL_USERNAME
{{- if $k.sasl.usernameKey }}
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: {{ $k.sasl.usernameKey }}
{{- else }}
  {{- /* Strimzi names a KafkaUser's Secret after the user; the name is no secret. */}}
  value: {{ $secret | quote }}
{{- end }}
- name: TAVLA_KAFKA_SASL_PASSWORD_FILE
  value: /var/run/secrets/tavla/kafka-user/{{ $k.sasl.passwordKey }}
{{- end }}
{{- if and $tls $k.tls.caSecret }}
- name: TAVLA_KAFKA_SSL_CA_FILE
  value: /etc/tavla/kafka-ca/{{ $k.tls.caKey }}
{{- end }}
{{- end }}

{{- define "tavla.kafkaVolumeMounts" -}}
{{- $k := .root.Values.kafka.security -}}
{{- if hasPrefix "SASL_" $k.protocol }}
- name: kafka-user
  mountPath: /var/run/secrets/tavla/kafka-user
  readOnly: true
{{- end }}
{{- if and (or (eq $k.protocol "SSL") (eq $k.protocol "SASL_SSL")) $k.tls.caSecret }}
- name: kafka-ca
  mountPath: /etc/tavla/kafka-ca
  readOnly: true
{{- end }}
{{- end }}

{{- define "tavla.kafkaVolumes" -}}
{{- $k := .root.Values.kafka.security -}}
{{- if hasPrefix "SASL_" $k.protocol }}
- name: kafka-user
  secret:
    secretName: {{ printf "%s%s" (required "kafka.security.sasl.secretPrefix is required with SASL" $k.sasl.secretPrefix) .component }}
    defaultMode: 0440
    items:
      - key: {{ $k.sasl.passwordKey }}
        path: {{ $k.sasl.passwordKey }}
{{- end }}
{{- if and (or (eq $k.protocol "SSL") (eq $k.protocol "SASL_SSL")) $k.tls.caSecret }}
- name: kafka-ca
  secret:
    secretName: {{ $k.tls.caSecret }}
    defaultMode: 0444
    items:
      - key: {{ $k.tls.caKey }}
        path: {{ $k.tls.caKey }}
{{- end }}
{{- end }}

{{- /*
Which topics each service writes (it owns them: no other user may write them) and
reads (what its consumers subscribe to), for the KafkaUsers' ACLs
(templates/kafkausers.yaml). Mirrors the services' producers and consumers
(tests/integration/test_helm_chart.py writes the same table out by hand).
*/}}
{{- define "tavla.kafkaTopicAccess" -}}
accounts:
  writes: [tavla.accounts.v1]
  reads: [tavla.antiabuse.v1]
game:
  writes: [tavla.game.v1]
  reads: []
matchmaking:
  writes: [tavla.matchmaking.v1]
  reads: [tavla.antiabuse.v1, tavla.game.v1, tavla.wallet.v1]
wallet:
  writes: [tavla.wallet.v1]
  reads: [tavla.accounts.v1, tavla.antiabuse.v1, tavla.game.v1]
analysis:
  writes: [tavla.analysis.v1]
  reads: [tavla.game.v1]
antiabuse:
  writes: [tavla.antiabuse.v1, tavla.compliance.alerts.v1]
  reads: [tavla.accounts.v1, tavla.analysis.v1, tavla.compliance.alerts.v1, tavla.game.v1, tavla.geo.v1, tavla.matchmaking.v1, tavla.tournaments.v1, tavla.wallet.v1]
geo:
  writes: [tavla.geo.v1]
  reads: []
tournaments:
  writes: [tavla.tournaments.v1]
  reads: [tavla.accounts.v1, tavla.game.v1]
{{- end }}
