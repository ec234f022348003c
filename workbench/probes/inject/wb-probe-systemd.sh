#!/bin/sh
# wb probe for systemd units: write (or, without WB_PROBE_TARGETS, remove) a runtime drop-in that gives
# each named unit the probe's environment (PYTHONPATH, WB_PROBE_*), then reload systemd.
# Usage: WB_PROBE_TARGETS=... WB_PROBE_OUT=... PYTHONPATH=... wb-probe-systemd.sh UNIT [UNIT...]
# Run it right before `systemctl restart UNIT...`; /run drop-ins vanish at reboot.
set -eu
dir="${WB_PROBE_SYSTEMD_DIR:-/run/systemd/system}"
systemctl="${WB_PROBE_SYSTEMCTL:-systemctl}"

esc() {  # systemd Environment= value: escape backslash, double quote and the % specifier
  printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/%/%%/g'
}

for unit in "$@"; do
  case "$unit" in *.service) ;; *) unit="$unit.service" ;; esac
  conf="$dir/$unit.d/wb-probe.conf"
  if [ -n "${WB_PROBE_TARGETS:-}" ]; then
    mkdir -p "$dir/$unit.d"
    {
      echo "# written by wb-probe-systemd.sh: the wb reachability probe for this unit"
      echo "[Service]"
      for name in PYTHONPATH WB_PROBE_TARGETS WB_PROBE_OUT WB_PROBE_INTERVAL; do
        eval "value=\${$name:-}"
        if [ -n "$value" ]; then printf 'Environment="%s=%s"\n' "$name" "$(esc "$value")"; fi
      done
    } > "$conf.tmp"
    mv "$conf.tmp" "$conf"
    # the unit's user must be able to write the counts
    if [ -n "${WB_PROBE_OUT:-}" ]; then mkdir -p "$WB_PROBE_OUT" && chmod 1777 "$WB_PROBE_OUT"; fi
  else
    rm -f "$conf"
  fi
done
"$systemctl" daemon-reload
