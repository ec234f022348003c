#!/usr/bin/env bash
# Everything the kernel needs a GPU for, in one go: build, `wb kernel check`, `wb kernel bench`,
# a memcheck pass (device-checked bad ids included), Nsight Compute counters of the random-order
# gathers, the gpu-marked tests, the geometry arms and the random-row ceiling probe
# (kernels/cuda/rowprobe.cu, plain nvcc, no torch). Run from the repo root:
#   OUT=/some/dir bash kernels/gpu_check.sh [bench options...]
# WB_GPU_STEPS: "all" (default), "core" (build + check + bench), or a comma list of
# build,check,bench,memcheck,ncu,pytest,arms,probe (build runs unless the list is only probe). Outputs land in $OUT (default /tmp/wb-gpu-out);
# WB_BENCH_VARIANTS=0,18,23 times only those variant columns, WB_BENCH_ROWS=token only the token rows;
# WB_SCALES=NAME=VALUE,... sets kernels.scales constants for the bench (True/False/None or an integer);
# the summaries are printed last.
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
# The package installs as wb_kernels (tests and the workbench import that name); a bare
# checkout gets a link of that name on the path.
if ! "$PY" -c "import wb_kernels" > /dev/null 2>&1; then
  mkdir -p /tmp/wb-pkg && ln -sfn "$ROOT/kernels" /tmp/wb-pkg/wb_kernels
  export PYTHONPATH=/tmp/wb-pkg:$PYTHONPATH
fi
STEPS=${WB_GPU_STEPS:-all}
[ "$STEPS" = all ] && STEPS=build,check,bench,memcheck,ncu,pytest,arms,probe
[ "$STEPS" = core ] && STEPS=build,check,bench
want() { case ",$STEPS," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
stamp() { echo "[$(date -u +%T)] $*" >> "$OUT/steps.txt"; }

{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv
  "$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))"
  nvcc --version | tail -1
} > "$OUT/env.txt" 2>&1

if want probe; then
  stamp probe
  mkdir -p "$WB_KERNEL_BUILD_DIR"
  nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 kernels/cuda/rowprobe.cu \
    -o "$WB_KERNEL_BUILD_DIR/rowprobe" > "$OUT/probe.txt" 2>&1 \
    && timeout 300 "$WB_KERNEL_BUILD_DIR/rowprobe" >> "$OUT/probe.txt" 2>&1
  echo "probe rc=$?" >> "$OUT/probe.txt"
fi

if [ "$STEPS" != probe ]; then
  stamp build
  start=$(date +%s)
  timeout 300 "$PY" -c "from kernels import build; build.load(verbose=True)" > "$OUT/build.log" 2>&1
  echo "build rc=$? in $(( $(date +%s) - start )) s" >> "$OUT/build.log"
fi

if want check; then
  stamp check
  timeout 240 "$PY" - > "$OUT/check.txt" 2>&1 <<'PYEOF' || echo "check rc=$?" >> "$OUT/check.txt"
from kernels.check import run_check
report = run_check()
print("\n".join(report.summary()))
PYEOF
fi

if want bench; then
  stamp bench
  timeout 300 "$PY" - "$OUT" "$@" > "$OUT/bench.txt" 2> "$OUT/bench.err" <<'PYEOF'
import json, os, sys
from kernels import scales
from kernels.bench import run_bench
# WB_SCALES="ORDER_OVERLAP=True,ORDER_MAX_VALUE_BYTES=1024": the bench under other constants
for item in filter(None, os.environ.get("WB_SCALES", "").split(",")):
    name, value = item.split("=")
    setattr(scales, name, {"True": True, "False": False, "None": None}.get(value) if value in
            ("True", "False", "None") else int(value))
    print(f"kernels.scales.{name} = {getattr(scales, name)!r}", flush=True)
only = os.environ.get("WB_BENCH_VARIANTS")   # e.g. "0,18,23": fewer variant columns, shorter run
report = run_bench(quick="--quick" in sys.argv[2:],
                   variants=[int(v) for v in only.split(",")] if only else None,
                   token_rows_only=os.environ.get("WB_BENCH_ROWS") == "token")
json.dump(report.as_dict(), open(sys.argv[1] + "/bench.json", "w"), indent=1)
print("\n".join(report.table()))
PYEOF
  echo "bench rc=$?" >> "$OUT/bench.err"
fi

if want memcheck; then
  stamp memcheck
  SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
  timeout 200 "$SAN" --tool memcheck --leak-check no "$PY" - > "$OUT/sanitizer.txt" 2>&1 <<'PYEOF'
import torch
from kernels import api, build, transfer
from kernels.cases import make_pool, index_set
from workbench.errors import KernelError
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
            transfer(src, dst, si.cuda(), di.cuda(), geometry=g, granularity=gran, layout=lay,
                     stride_geometry=addr, impl="cuda")   # device ids: checked in the kernel
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
# Bad device ids, every variant and both host directions: skipped in the kernel, reported after.
reported = 0
for v in range(len(build.load().variants())):
    for g in ("index_k_bf16", "c4_latent", "index_k_fp8"):
        a = make_pool(g, "page_first", 8, 2, 64, gen=gen).cuda()
        for b in (make_pool(g, "page_first", 6, 2, 64, gen=gen).cuda(),
                  make_pool(g, "page_first", 6, 2, 64, gen=gen).pin_memory()):
            for s_ids, d_ids in (([1, 2, 8 * 64 + 5, 3], [4, 5, 6, 7]), ([1, 2, 3], [4, -7, 6]),
                                 ([1, 2, 3], [6 * 64, 5, 4]), ([1, 2, 3], [4, 5, 4])):
                try:
                    if v == 0:
                        transfer(a, b, torch.tensor(s_ids).cuda(), torch.tensor(d_ids).cuda(),
                                 geometry=g, granularity="token", layout="page_first", impl="cuda")
                    else:   # the variants through the binding, with the checks on
                        p = api._pools(a, b, g, "token", "page_first", 64, None, "cuda")
                        args = p.args[:9] + (v,) + p.args[10:]
                        p.ext.transfer(a, b, torch.tensor(s_ids).cuda(), torch.tensor(d_ids).cuda(), *args)
                    api.synchronize()
                except KernelError:
                    reported += 1
# The scales apart (kernels.scales): host 2D copy (overlapped, in line), page order d2d.
for g in ("c4_latent", "index_k_fp8"):
    for lay in ("page_first", "layer_first"):
        host = make_pool(g, lay, 12, 2, 64, gen=gen).pin_memory()
        dev = host.cuda()
        out = make_pool(g, lay, 10, 2, 64, gen=gen).cuda()
        si, di = torch.randperm(12 * 64, generator=gen)[:300], torch.randperm(10 * 64, generator=gen)[:300]
        for s in (host, dev):
            plan = api.plan_transfer(s, out, si, di, geometry=g, granularity="token", layout=lay,
                                     impl="cuda")
            build.launch(plan, staging="never", scales="always")
            build.launch(plan, staging="never", scales="serial")
            if s is host:   # the touched pages' blocks (cpu ids, then device ids)
                build.launch(plan, staging="never", scales="blocks")
                plan = api.plan_transfer(s, out, si.cuda(), di.cuda(), geometry=g,
                                         granularity="token", layout=lay, impl="cuda")
                build.launch(plan, staging="never", scales="blocks")
# Bad device ids through them: every call takes the 2D copy (then the touched pages' blocks);
# d2d ids handed twice.
from kernels import scales
scales.SCALE_DMA_BYTES_PER_ROW, scales.PAGE_ORDER_MIN_BYTES, scales.WIDE_ORDER_MIN_BYTES = 1 << 40, 0, 0
scales.NEW_ORDER_MIN_BYTES = 0   # new d2d ids: page order sorted on the device per call
keep_blocks = (scales.BLOCK_MARGIN, scales.BLOCK_FRACTION)
for g in ("c4_latent", "index_k_fp8"):
    a_h = make_pool(g, "page_first", 8, 2, 64, gen=gen).pin_memory()
    a_d = a_h.cuda()
    b = make_pool(g, "page_first", 6, 2, 64, gen=gen).cuda()
    for s_ids, d_ids in (([1, 2, 8 * 64 + 5, 3], [4, 5, 6, 7]), ([1, 2, 3], [4, -7, 6]),
                         ([1, 2, 3], [6 * 64, 5, 4]), ([1, 2, 3], [4, 5, 4])):
        s_t, d_t = torch.tensor(s_ids).cuda(), torch.tensor(d_ids).cuda()
        for src_pool, times in ((a_h, 1), (a_d, 2), (a_h, -1), (a_h, 3)):
            scales.BLOCK_MARGIN, scales.BLOCK_FRACTION = (0, 2) if times < 0 else keep_blocks
            for _ in range(abs(times)):
                try:
                    transfer(src_pool, b, s_t, d_t, geometry=g, granularity="token",
                             layout="page_first", impl="cuda")
                    api.synchronize()
                except KernelError:
                    reported += 1
scales.BLOCK_MARGIN, scales.BLOCK_FRACTION = keep_blocks
# New d2d ids in two passes (the values, then the scales in the ids' order), bad ids among them.
scales.NEW_ORDER_MIN_BYTES, scales.SPLIT_MIN_BYTES = None, 0
for g in ("c4_latent", "index_k_fp8"):
    a_d = make_pool(g, "page_first", 8, 2, 64, gen=gen).cuda()
    b = make_pool(g, "page_first", 6, 2, 64, gen=gen).cuda()
    for s_ids, d_ids in (([1, 2, 8 * 64 + 5, 3], [4, 5, 6, 7]), ([1, 2, 3], [4, -7, 6])):
        try:
            transfer(a_d, b, torch.tensor(s_ids).cuda(), torch.tensor(d_ids).cuda(), geometry=g,
                     granularity="token", layout="page_first", impl="cuda")
            api.synchronize()
        except KernelError:
            reported += 1
scales.SPLIT_MIN_BYTES = None
# Page order with the scale passes after the values (beside them is the default, above; c4 rows
# too), bad ids among them: the same tensors thrice (page order from the second call), then new
# tensors (sorted per call).
scales.ORDER_OVERLAP, scales.WIDE_ORDER_MIN_BYTES, scales.NEW_ORDER_MIN_BYTES = False, 0, None
for g in ("c4_latent", "index_k_fp8"):
    a_d = make_pool(g, "page_first", 8, 2, 64, gen=gen).cuda()
    b = make_pool(g, "page_first", 6, 2, 64, gen=gen).cuda()
    for s_ids, d_ids in (([1, 2, 8 * 64 + 5, 3], [4, 5, 6, 7]), ([1, 2, 3], [4, -7, 6]),
                         ([1, 2, 3], [6 * 64, 5, 4]), ([1, 2, 3], [4, 5, 4]), ([1, 2, 3], [4, 5, 6])):
        s_t, d_t = torch.tensor(s_ids).cuda(), torch.tensor(d_ids).cuda()
        for new in (None, None, None, 0, 0):
            scales.NEW_ORDER_MIN_BYTES = new
            try:
                transfer(a_d, b, s_t if new is None else s_t.clone(), d_t if new is None else d_t.clone(),
                         geometry=g, granularity="token", layout="page_first", impl="cuda")
                api.synchronize()
            except KernelError:
                reported += 1
scales.ORDER_OVERLAP, scales.NEW_ORDER_MIN_BYTES = True, None
# New host ids with scales, the path chosen on the device forced each way, bad ids among them.
keep_slack = scales.ORDER_SLACK
for slack in (0, 1e9):
    scales.ORDER_SLACK = slack
    for g in ("c4_latent", "index_k_fp8"):
        a_h = make_pool(g, "page_first", 8, 2, 64, gen=gen).pin_memory()
        a_d = a_h.cuda()
        for s_ids, d_ids in (([1, 2, 8 * 64 + 5, 3], [4, 5, 6, 7]), ([1, 2, 3], [4, -7, 6])):
            for s, d, x, y in ((a_h, a_d.clone(), s_ids, d_ids),
                               (a_d, a_h.clone().pin_memory(), d_ids, s_ids)):
                try:
                    transfer(s, d, torch.tensor(x).cuda(), torch.tensor(y).cuda(), geometry=g,
                             granularity="token", layout="page_first", impl="cuda")
                    api.synchronize()
                except KernelError:
                    reported += 1
scales.ORDER_SLACK = keep_slack
# Reused device ids (kernels.reuse): valid ids run unchecked from their host copy (the staged
# DMA path forced where host pages run whole), then changed in place to a bad id: checked again.
from kernels import staged
staged.MIN_DMA_BYTES = 0
for g in ("index_k_bf16", "c4_latent", "index_k_fp8"):
    host = make_pool(g, "page_first", 12, 2, 64, gen=gen).pin_memory()
    dev = make_pool(g, "page_first", 12, 2, 64, gen=gen).cuda()
    for s, d in ((dev, host), (host, dev), (dev, dev.clone())):
        for host_ids in (torch.arange(4 * 64), torch.randperm(12 * 64, generator=gen)[:300]):
            dev_ids = torch.randperm(12 * 64, generator=gen)[:host_ids.numel()]
            a, b = (host_ids, dev_ids) if s is host else (dev_ids, host_ids)
            a, b = a.cuda(), b.cuda()
            for k in range(5):
                if k == 3:
                    a[1] = 12 * 64 + 3
                try:
                    transfer(s, d, a, b, geometry=g, granularity="token", layout="page_first",
                             impl="cuda")
                    api.synchronize()
                except KernelError:
                    reported += 1
# The touched-page marks of new device ids, bad ids among them.
marks = build.load().mark_pages(torch.tensor([-5, 3, 700, 12 * 64 + 1, 767]).cuda(), 64, 12, 12 * 64)
torch.cuda.synchronize()
print("bad device-id calls reported:", reported)
print("memcheck workload done")
PYEOF
fi

if want ncu; then
  stamp ncu
  NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  METRICS=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,\
dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct,\
lts__t_sectors_srcunit_tex_op_read.sum,lts__t_requests_srcunit_tex_op_read.sum,\
lts__t_sectors_srcunit_tex_op_write.sum,lts__t_requests_srcunit_tex_op_write.sum,\
l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,\
sm__warps_active.avg.pct_of_peak_sustained_active,sm__throughput.avg.pct_of_peak_sustained_elapsed,\
lts__t_sectors_op_atom.sum,launch__grid_size
  timeout 200 "$NCU" --clock-control none --csv --metrics "$METRICS" \
    -k regex:"transfer_kernel|fused_kernel|split_kernel" \
    "$PY" -m kernels.profile --names "$OUT/ncu-names.txt" > "$OUT/ncu.csv" 2> "$OUT/ncu.err"
  echo "ncu rc=$?" >> "$OUT/ncu.err"
  "$PY" - "$OUT" > "$OUT/ncu.txt" 2>&1 <<'PYEOF'
import csv, io, sys
out = sys.argv[1]
names = [l.strip() for l in open(out + "/ncu-names.txt")] if __import__("os").path.exists(out + "/ncu-names.txt") else []
text = open(out + "/ncu.csv").read()
start = text.find('"ID"')
rows = list(csv.DictReader(io.StringIO(text[start:]))) if start >= 0 else []
by = {}
for r in rows:
    by.setdefault(r["ID"], {})[r["Metric Name"]] = r["Metric Value"]
def f(d, k):
    try: return float(d.get(k, "nan").replace(",", ""))
    except ValueError: return float("nan")
for i, (kid, d) in enumerate(sorted(by.items(), key=lambda kv: int(kv[0]))):
    name = names[i] if i < len(names) else kid
    t = f(d, "gpu__time_duration.sum")
    rd, wr = f(d, "dram__bytes_read.sum"), f(d, "dram__bytes_write.sum")
    rs = f(d, "lts__t_sectors_srcunit_tex_op_read.sum") / max(1, f(d, "lts__t_requests_srcunit_tex_op_read.sum"))
    ws = f(d, "lts__t_sectors_srcunit_tex_op_write.sum") / max(1, f(d, "lts__t_requests_srcunit_tex_op_write.sum"))
    print(f"{name}\n    time {t/1e3:.1f} us, DRAM read {rd/1e6:.1f} MB write {wr/1e6:.1f} MB "
          f"({(rd+wr)/max(t,1):.0f} GB/s, {f(d,'dram__throughput.avg.pct_of_peak_sustained_elapsed'):.1f}% of peak), "
          f"L2 hit {f(d,'lts__t_sector_hit_rate.pct'):.1f}%, L2 sectors/request read {rs:.2f} write {ws:.2f}, "
          f"atomics {f(d,'lts__t_sectors_op_atom.sum'):.0f}, warps active {f(d,'sm__warps_active.avg.pct_of_peak_sustained_active'):.0f}%, "
          f"SM {f(d,'sm__throughput.avg.pct_of_peak_sustained_elapsed'):.0f}%, grid {d.get('launch__grid_size','?')}")
PYEOF
fi

if want pytest; then
  stamp pytest
  timeout 240 "$PY" -m pytest -q -p no:cacheprovider -n 0 -m gpu tests/kernels > "$OUT/pytest.txt" 2>&1
  echo "pytest rc=$?" >> "$OUT/pytest.txt"
fi

if want arms; then
  stamp arms
  timeout 120 "$PY" - > "$OUT/arms.txt" 2>&1 <<'PYEOF'
from kernels.experiment import run_geometry_arm
for fix in (False, True):
    for seed in (0, 1):
        print("geometry_fix", fix, "seed", seed, run_geometry_arm(geometry_fix=fix, seed=seed))
PYEOF
fi
stamp done

echo "===== steps"; cat "$OUT/steps.txt"
[ -f "$OUT/build.log" ] && { echo "===== build"; tail -2 "$OUT/build.log"; }
want memcheck && { echo "===== sanitizer"; grep -E "ERROR SUMMARY|memcheck workload|reported|Error" "$OUT/sanitizer.txt" | head -6; }
want arms && { echo "===== arms"; cat "$OUT/arms.txt"; }
want pytest && { echo "===== pytest"; tail -4 "$OUT/pytest.txt"; }
want ncu && { echo "===== ncu"; cat "$OUT/ncu.txt"; tail -2 "$OUT/ncu.err"; }
want check && { echo "===== check"; tail -25 "$OUT/check.txt"; }
want bench && { echo "===== bench"; cat "$OUT/bench.txt"; tail -3 "$OUT/bench.err"; }
want probe && { echo "===== probe"; cat "$OUT/probe.txt"; }
exit 0
