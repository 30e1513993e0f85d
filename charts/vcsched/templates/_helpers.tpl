{{/* The resource prefix: fullnameOverride, else the release name when it
already contains the chart name, else "<release>-vcsched". */}}
{{- define "vcsched.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "vcsched.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels that select the scheduler pods; stable across upgrades. */}}
{{- define "vcsched.selectorLabels" -}}
app.kubernetes.io/name: {{ include "vcsched.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: scheduler
{{- end -}}

{{- define "vcsched.labels" -}}
{{ include "vcsched.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "vcsched.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "vcsched.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/*
The deviceshare plugin's arguments from .Values.deviceshare, as a dict; empty
when no device mode is on. Argument names and meanings: spec/devices.md §2.1.
The combinations Volcano refuses at start (it exits) are refused here.
*/}}
{{- define "vcsched.deviceshareArguments" -}}
{{- $d := .Values.deviceshare -}}
{{- $vgpu := or $d.vgpu $d.mig -}}
{{- if and $d.gpushare $d.gpuNumber -}}
{{- fail "deviceshare: gpushare and gpuNumber cannot both be on (Volcano exits: \"can not define true in both gpu sharing and gpu number\")" -}}
{{- end -}}
{{- if and $vgpu (or $d.gpushare $d.gpuNumber) -}}
{{- fail "deviceshare: vgpu/mig cannot be combined with gpushare or gpuNumber (Volcano exits: \"gpu-share and vgpu can't be used together\")" -}}
{{- end -}}
{{- if not (has ($d.schedulePolicy | default "") (list "" "binpack" "spread" "fragmentation")) -}}
{{- fail (printf "deviceshare.schedulePolicy: must be binpack, spread, fragmentation or empty, got %q" $d.schedulePolicy) -}}
{{- end -}}
{{- $args := dict -}}
{{- if $d.gpushare }}{{ $_ := set $args "deviceshare.GPUSharingEnable" true }}{{ end -}}
{{- if $d.gpuNumber }}{{ $_ := set $args "deviceshare.GPUNumberEnable" true }}{{ end -}}
{{- if $vgpu }}{{ $_ := set $args "deviceshare.VGPUEnable" true }}{{ end -}}
{{- if $d.vnpu }}{{ $_ := set $args "deviceshare.AscendHAMiVNPUEnable" true }}{{ end -}}
{{- if $d.mindClusterVnpu }}{{ $_ := set $args "deviceshare.AscendMindClusterVNPUEnable" true }}{{ end -}}
{{- $anyMode := gt (len $args) 0 -}}
{{- $tuned := or $d.nodeLock $d.schedulePolicy $d.scheduleWeight $d.knownGeometriesCMName $d.knownGeometriesCMNamespace -}}
{{- if and $tuned (not $anyMode) -}}
{{- fail "deviceshare: nodeLock, schedulePolicy, scheduleWeight or knownGeometriesCM* is set but no device mode (vgpu, mig, gpushare, gpuNumber, vnpu, mindClusterVnpu) is on" -}}
{{- end -}}
{{- if $d.nodeLock }}{{ $_ := set $args "deviceshare.NodeLockEnable" true }}{{ end -}}
{{- if $d.schedulePolicy }}{{ $_ := set $args "deviceshare.SchedulePolicy" $d.schedulePolicy }}{{ end -}}
{{- if $d.scheduleWeight }}{{ $_ := set $args "deviceshare.ScheduleWeight" (int64 $d.scheduleWeight) }}{{ end -}}
{{- if $d.knownGeometriesCMName }}{{ $_ := set $args "deviceshare.KnownGeometriesCMName" $d.knownGeometriesCMName }}{{ end -}}
{{- if $d.knownGeometriesCMNamespace }}{{ $_ := set $args "deviceshare.KnownGeometriesCMNamespace" $d.knownGeometriesCMNamespace }}{{ end -}}
{{- toJson $args -}}
{{- end -}}

{{/*
The text of volcano-scheduler.conf: schedulerConfig.override, else the shipped
default, verbatim when no device mode is on. With a device mode on, the conf is
parsed, deviceshare is inserted before predicates in predicates' tier, and the
result is written back as YAML in Volcano's layout (name first in each plugin;
comments in an override are not kept).
*/}}
{{- define "vcsched.schedulerConf" -}}
{{- $text := .Values.schedulerConfig.override | default (.Files.Get "files/volcano-scheduler.conf") -}}
{{- $conf := fromYaml $text -}}
{{- if hasKey $conf "Error" -}}
{{- fail (printf "schedulerConfig.override: not valid YAML: %s" $conf.Error) -}}
{{- end -}}
{{- $args := include "vcsched.deviceshareArguments" . | fromJson -}}
{{- if not $args -}}
{{- $text -}}
{{- else -}}
{{- $placed := false -}}
{{- range $i, $tier := $conf.tiers | default list -}}
{{- range $tier.plugins | default list -}}
{{- if eq .name "deviceshare" -}}
{{- fail (printf "schedulerConfig.override: tiers[%d] already lists deviceshare; set its arguments there and leave the deviceshare.* values off" $i) -}}
{{- end -}}
{{- if eq .name "predicates" }}{{ $placed = true }}{{ end -}}
{{- end -}}
{{- end -}}
{{- if not $placed -}}
{{- fail "deviceshare needs the predicates plugin (it runs the device allocation), and the scheduler conf has none" -}}
{{- end -}}
{{- $inserted := false -}}
actions: {{ $conf.actions | toJson }}
tiers:
{{- range $conf.tiers }}
- plugins:
{{- range .plugins }}
{{- if and (eq .name "predicates") (not $inserted) }}
  - name: deviceshare
    arguments:
      {{- toYaml $args | nindent 6 }}
{{- $inserted = true }}
{{- end }}
  - name: {{ .name }}
{{- with omit . "name" }}
    {{- toYaml . | nindent 4 }}
{{- end }}
{{- end }}
{{- with omit . "plugins" }}
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}
{{- with omit $conf "actions" "tiers" }}
{{ toYaml . }}
{{- end }}
{{- end -}}
{{- end -}}
