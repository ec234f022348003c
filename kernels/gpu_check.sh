#!/usr/bin/env bash
# Everything the kernel needs a GPU for, in one go: build, `wb kernel check`, `wb kernel bench`,
# the gpu-marked tests, a memcheck pass and the geometry arms. Run from the repo root:
#   OUT=/some/dir bash kernels/gpu_check.sh [bench options...]
# WB_GPU_STEPS=core stops after the bench (build + check + bench).
# Outputs land in $OUT (default /tmp/wb-gpu-out); the summaries are printed last.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/wb-gpu-out}
mkdir -p "$OUT"
cd "$ROOT"
export PYTHONPATH=$ROOT${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}
export WB_KERNEL_BUILD_DIR=${WB_KERNEL_BUILD_DIR:-/tmp/wb-kernel-build}
PY=${PYTHON:-python3}
wb() { "$PY" -m workbench.cli.main "$@"; }

{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  "$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))"
  nvcc --version | tail -1
} > "$OUT/env.txt" 2>&1

start=$(date +%s)
timeout 300 "$PY" -c "from kernels import build; build.load(verbose=True)" > "$OUT/build.log" 2>&1
echo "build rc=$? in $(( $(date +%s) - start )) s" >> "$OUT/build.log"

timeout 240 "$PY" -m workbench.cli.main kernel check > "$OUT/check.txt" 2>&1 || \
  echo "check rc=$?" >> "$OUT/check.txt"

timeout 300 "$PY" -m workbench.cli.main kernel bench --json "$@" > "$OUT/bench.json" 2> "$OUT/bench.err"
echo "bench rc=$?" >> "$OUT/bench.err"
"$PY" - "$OUT/bench.json" > "$OUT/bench.txt" 2>&1 <<'PYEOF'
import dataclasses, json, sys
from kernels.bench import BenchReport, BenchRow
d = json.load(open(sys.argv[1]))
names = {f.name for f in dataclasses.fields(BenchRow)}
rows = [BenchRow(**{k: v for k, v in r.items() if k in names}) for r in d["rows"]]
rep = BenchReport(d["device"], d["torch"], d["variants"], d["ceilings_gbs"], rows, d["latency_us"])
print("\n".join(rep.table()))
PYEOF

if [ "${WB_GPU_STEPS:-all}" = core ]; then   # build + check + bench only (short device slots)
  echo "===== build"; tail -3 "$OUT/build.log"
  echo "===== check"; tail -25 "$OUT/check.txt"
  echo "===== bench"; cat "$OUT/bench.txt"; tail -3 "$OUT/bench.err"
  exit 0
fi

timeout 240 "$PY" -m pytest -q -p no:cacheprovider -m gpu tests/kernels > "$OUT/pytest.txt" 2>&1
echo "pytest rc=$?" >> "$OUT/pytest.txt"

{
  timeout 150 compute-sanitizer --tool memcheck --leak-check no "$PY" - <<'PYEOF'
import torch
from kernels import transfer
from kernels.cases import make_pool, index_set
gen = torch.Generator().manual_seed(0)
for g, addr in [("index_k_bf16", None), ("index_k_bf16", "c4_latent"), ("c4_latent", "index_k_bf16"),
                ("index_k_fp8", None), ("index_k_fp8", "c4_latent"), ("c4_latent", None)]:
    for gran in ("token", "page"):
        for lay in ("page_first", "layer_first"):
            src = make_pool(g, lay, 12, 2, 64, gen=gen).cuda()
            dst = make_pool(g, lay, 10, 2, 64, gen=gen).pin_memory()
            si, di = index_set("scattered" if gran == "token" else "aligned", granularity=gran,
                               src_pages=12, dst_pages=10, page_size=64, gen=gen)
            if gran == "token":   # the pool's last tokens: c4 strides run past the end
                si = torch.arange(12 * 64 - si.numel(), 12 * 64)
            transfer(src, dst, si, di, geometry=g, granularity=gran, layout=lay,
                     stride_geometry=addr, impl="cuda")
            transfer(dst, src, di, si, geometry=g, granularity=gran, layout=lay,
                     stride_geometry=addr, impl="cuda")
from kernels import api, build
for g in ("index_k_bf16", "c4_latent", "index_k_fp8"):   # the staged (DMA) host path
    for lay in ("page_first", "layer_first"):
        host = make_pool(g, lay, 40, 2, 64, gen=gen).pin_memory()
        dev = make_pool(g, lay, 40, 2, 64, gen=gen).cuda()
        for gran, n in (("page", 30), ("token", 30 * 64)):
            ids = torch.arange(n)
            other = torch.randperm(n, generator=gen)
            for s, d, a, b in ((host, dev, ids, other.cuda()), (dev, host, other.cuda(), ids)):
                plan = api.plan_transfer(s, d, a, b, geometry=g, granularity=gran, layout=lay,
                                         impl="cuda")
                build.launch(plan, staging="always")
torch.cuda.synchronize()
print("memcheck workload done")
PYEOF
} > "$OUT/sanitizer.txt" 2>&1

timeout 120 "$PY" - > "$OUT/arms.txt" 2>&1 <<'PYEOF'
from kernels.experiment import run_geometry_arm
for fix in (False, True):
    for seed in (0, 1):
        print("geometry_fix", fix, "seed", seed, run_geometry_arm(geometry_fix=fix, seed=seed))
PYEOF

echo "===== build"; tail -3 "$OUT/build.log"
echo "===== sanitizer"; grep -E "ERROR SUMMARY|memcheck workload|Error" "$OUT/sanitizer.txt" | head -5
echo "===== arms"; cat "$OUT/arms.txt"
echo "===== pytest"; tail -4 "$OUT/pytest.txt"
echo "===== check"; cat "$OUT/check.txt" | tail -25
echo "===== bench"; cat "$OUT/bench.txt"; tail -3 "$OUT/bench.err"
