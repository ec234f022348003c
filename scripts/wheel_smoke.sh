#!/usr/bin/env bash
# Build wb's wheel, install it non-editable into a fresh venv and drive a store from it: the wheel
# must carry everything a store needs (migrations, templates). The venv borrows the dependencies
# already installed for .venv, so nothing is downloaded (in particular no CUDA build of torch).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
PY=$REPO/.venv/bin/python
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$PY" -m pip wheel -q --no-deps --no-build-isolation -w "$tmp/dist" . >/dev/null
wheel=$(ls "$tmp"/dist/wb-*.whl)
"$PY" -m venv --without-pip "$tmp/venv"
site=$("$tmp/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
# Plain path lines in a .pth file extend sys.path without running the .pth files found there, so
# the project venv's editable hook (which would import the source tree) stays off.
"$PY" -c 'import sys; print("\n".join(p for p in sys.path if p.endswith("site-packages")))' > "$site/zz_wb_deps.pth"
"$PY" -m pip --python "$tmp/venv/bin/python" install -q --no-deps --no-index "$wheel" >/dev/null

work=$tmp/work
mkdir -p "$work"
cp "$REPO/hypotheses.yaml" "$work/"
cp -r "$REPO/experiments" "$work/"
cd "$work"
where=$("$tmp/venv/bin/python" -c 'import workbench; print(workbench.__file__)')
case "$where" in
  "$site"/*) ;;
  *) echo "wheel smoke: workbench imported from $where, not from the installed wheel" >&2; exit 1 ;;
esac
WB=$tmp/venv/bin/wb
"$WB" db upgrade --db "$work/wb.duckdb"
"$WB" import evidence "$REPO/evidence/seed-runs.csv" --db "$work/wb.duckdb"
out=$("$WB" hypothesis analyze wedge-confound --db "$work/wb.duckdb")
echo "$out" | head -1
echo "$out" | head -1 | grep -q "^wedge-confound: " || { echo "wheel smoke: no verdict" >&2; exit 1; }
echo "wheel smoke: ok ($(basename "$wheel"))"
