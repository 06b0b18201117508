{{/*
The geo service's MaxMind databases (values: services.geo.geoip), as container env,
volume mounts and volumes. Only geo's Deployment includes the env and the read-only
mount; the geoipupdate CronJob (geoip.yaml) mounts the same volume read-write.
Use as: (dict "root" $ "geoip" $s.geoip).
*/}}
{{- define "tavla.geoEnv" -}}
{{- $g := .geoip -}}
- name: TAVLA_GEO_CITY_DB
  value: {{ printf "%s/%s" (trimSuffix "/" $g.mountPath) (required "services.geo.geoip.cityDatabase is required" $g.cityDatabase) | quote }}
- name: TAVLA_GEO_ANONYMOUS_DB
  value: {{ printf "%s/%s" (trimSuffix "/" $g.mountPath) (required "services.geo.geoip.anonymousDatabase is required" $g.anonymousDatabase) | quote }}
- name: TAVLA_GEO_RELOAD_SECONDS
  value: {{ $g.reloadSeconds | quote }}
{{- end }}

{{- define "tavla.geoVolumeMounts" -}}
- name: geoip
  mountPath: {{ .geoip.mountPath }}
  readOnly: true
{{- end }}

{{/* The databases' volume; "readOnly" true for geo, false for the updater. */}}
{{- define "tavla.geoVolume" -}}
{{- $v := .geoip.volume -}}
- name: geoip
{{- if $v.source }}
  {{- toYaml $v.source | nindent 2 }}
{{- else }}
  persistentVolumeClaim:
    claimName: {{ required "services.geo.geoip.volume: existingClaim or source is required" $v.existingClaim }}
    readOnly: {{ .readOnly }}
{{- end }}
{{- end }}
