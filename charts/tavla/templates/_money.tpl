{{/*
The operator's maximum amounts per currency (values: moneyBounds), as container env
TAVLA_MONEY_MAX_<KIND>_<CURRENCY> (services/kit/money_bounds.py). The wallet,
matchmaking, the game and tournaments include them: each refuses an amount above one
before anything is recorded.
*/}}
{{- define "tavla.moneyBoundsEnv" -}}
{{- range $currency, $b := .Values.moneyBounds }}
- name: TAVLA_MONEY_MAX_DEPOSIT_{{ $currency }}
  value: {{ $b.deposit | int64 | toString | quote }}
- name: TAVLA_MONEY_MAX_WITHDRAWAL_{{ $currency }}
  value: {{ $b.withdrawal | int64 | toString | quote }}
- name: TAVLA_MONEY_MAX_STAKE_{{ $currency }}
  value: {{ $b.stake | int64 | toString | quote }}
- name: TAVLA_MONEY_MAX_TABLE_EXPOSURE_{{ $currency }}
  value: {{ $b.tableExposure | int64 | toString | quote }}
- name: TAVLA_MONEY_MAX_ADDED_PRIZE_{{ $currency }}
  value: {{ $b.addedPrize | int64 | toString | quote }}
{{- end }}
{{- end }}
