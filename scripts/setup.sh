#!/usr/bin/env bash
# Set up wb in ./.venv on a fresh machine: the CPU build of torch first (never a CUDA download),
# then wb itself. torch is there for pdsim's data path and the transfer kernel's CPU reference (the
# default target and `wb kernel`); no GPU is needed. With --test, also the test extras and Debian's chromium, which the report tests
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
# Debian's packages for the tests go in the background while pip works (both mostly wait on the network).
apt_pid=""
apt_log=$(mktemp)
if [ "$want_tests" = 1 ]; then
  need=()
  command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || need+=(chromium)
  # The team-store tests start a real PostgreSQL server of their own (initdb in a temp dir).
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
  [ -f /usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf ] || need+=(fonts-droid-fallback)
  # The https tests file a CA under its subject hash (openssl x509 -hash); the printed restore commands are
  # run through dash, as a POSIX sh.
  command -v openssl >/dev/null 2>&1 || need+=(openssl)
  command -v dash >/dev/null 2>&1 || need+=(dash)
  if [ ${#need[@]} -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO="sudo"
    echo "installing system packages: ${need[*]}"
    ( $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" ) \
      >"$apt_log" 2>&1 &
    apt_pid=$!
  fi
fi
apt_wait() {
  [ -n "$apt_pid" ] || return 0
  if ! wait "$apt_pid"; then
    cat "$apt_log" >&2
    echo "installing system packages failed (above)" >&2
    exit 1
  fi
  apt_pid=""
}
trap 'rm -f "$apt_log"' EXIT

.venv/bin/python -m pip install -q --upgrade pip "setuptools>=77" >/dev/null
# torch alone first, so that nothing later pulls a CUDA wheel over it. On Linux a plain
# `pip install torch` from PyPI is the CUDA build (several GB of NVIDIA libraries): ask PyTorch's CPU
# wheel index for it. Where that index cannot be reached (a machine that sees only a PyPI mirror), the
# default index is used: on such machines pip is usually configured with a local CPU wheel; if it turns
# out to be a CUDA build, a note says so. WB_TORCH_INDEX names another CPU index (a mirror); empty skips it.
TORCH_VERSION=2.13.0
TORCH_INDEX=${WB_TORCH_INDEX-https://download.pytorch.org/whl/cpu}

index_reachable() {
  [ -n "$1" ] && .venv/bin/python - "$1" <<'PY' >/dev/null 2>&1
import sys, urllib.request
urllib.request.urlopen(sys.argv[1].rstrip("/") + "/torch/", timeout=10).close()
PY
}

if .venv/bin/python -c "import sys, torch; sys.exit(torch.__version__.split('+')[0] != '$TORCH_VERSION')" \
    2>/dev/null; then
  :  # already installed
elif index_reachable "$TORCH_INDEX" \
    && .venv/bin/python -m pip install -q --index-url "$TORCH_INDEX" "torch==$TORCH_VERSION"; then
  echo "torch $TORCH_VERSION: the CPU build, from $TORCH_INDEX"
else
  [ -z "$TORCH_INDEX" ] || echo "PyTorch's CPU index ($TORCH_INDEX) cannot be reached or has no torch" \
    "$TORCH_VERSION: torch from the default index" >&2
  .venv/bin/python -m pip install -q "torch==$TORCH_VERSION"
fi
if [ "$want_tests" = 1 ]; then
  .venv/bin/python -m pip install -q -e ".[sim,test]"
else
  .venv/bin/python -m pip install -q -e ".[sim]"
fi

# pip compiles what it installs, but not the modules of an editable install: with PYTHONDONTWRITEBYTECODE
# set (as on many CI machines) every `wb`, pdsim and test process would compile wb's sources again.
.venv/bin/python -m compileall -q -j 0 workbench kernels >/dev/null

apt_wait
cuda=$(.venv/bin/python -c "import torch; print(torch.version.cuda or '')" 2>/dev/null || true)
[ -z "$cuda" ] || echo "note: this torch is a CUDA $cuda build; wb needs only the CPU one (WB_TORCH_INDEX, above)" >&2
echo "wb is set up in .venv ($(.venv/bin/wb --version))"
