#!/usr/bin/env bash
# Set up wb in ./.venv on a fresh machine: the CPU build of torch first (never a CUDA download),
# then wb itself. With --test, also the test extras and Debian's chromium, which the report tests
# drive headless, with a font that has the fullwidth "｜" of DeepSeek's tool calls (U+FF5C: DejaVu and
# Liberation lack it), and PostgreSQL's server binaries for the team-store tests; the SSH tests bring
# their own server on loopback, so no OpenSSH is needed.
set -euo pipefail
cd "$(dirname "$0")/.."

want_tests=0
[ "${1:-}" = "--test" ] && want_tests=1

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip "setuptools>=77" >/dev/null
# torch 2.13.0 is the CPU build on these machines; install it alone first so nothing pulls a CUDA wheel.
.venv/bin/python -m pip install -q "torch==2.13.0"
if [ "$want_tests" = 1 ]; then
  .venv/bin/python -m pip install -q -e ".[test]"
else
  .venv/bin/python -m pip install -q -e .
fi

if [ "$want_tests" = 1 ]; then
  need=()
  command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || need+=(chromium)
  # The team-store tests start a real PostgreSQL server of their own (initdb in a temp dir).
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
  [ -f /usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf ] || need+=(fonts-droid-fallback)
  if [ ${#need[@]} -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO="sudo"
    echo "installing system packages: ${need[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
  fi
fi
echo "wb is set up in .venv ($(.venv/bin/wb --version))"
