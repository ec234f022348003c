#!/bin/bash
# Restart kvcache: stop the server named in PIDFILE, start a new one with CONF in the background.
# usage: restart.sh CONF PIDFILE [PYTHON]
# The new server's output is deliberately not redirected (as most restart scripts are written): it
# keeps this script's stdout and stderr open after the script exits, which wb must not wait for.
set -u
conf=$1
pidfile=$2
py=${3:-python3}
if [ -s "$pidfile" ]; then
  old=$(cat "$pidfile")
  kill "$old" 2>/dev/null
  # wait until it is gone (a zombie counts as gone: it no longer holds the port)
  for _ in $(seq 200); do
    case $(ps -o stat= -p "$old" 2>/dev/null) in ''|Z*) break ;; esac
    sleep 0.05
  done
fi
"$py" "$(dirname "$0")/svc.py" serve "$conf" &
echo $! > "$pidfile"
