"""`wb kernel bench`: bandwidth of the CUDA kernel against ceilings and the torch baseline,
all measured in the same run on the same device.

Ceilings: a large device copy (bytes read + written) for device->device, a pinned `copy_`
each way for the host directions. Baseline: the torch reference on the same tensors
(index_select / index_copy_ plus one copy across devices). Times are medians of CUDA-event
timings after warm-up; pools are several times the L2 so repeats do not measure the cache.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from kernels.geometry import GEOMETRIES

__all__ = ["run_bench", "BenchReport", "BenchRow"]

DIRECTIONS = ("d2d", "d2h", "h2d")


@dataclass
class BenchRow:
    geometry: str
    layout: str
    direction: str
    granularity: str
    bytes: int                      # payload bytes moved per transfer
    variant_gbs: dict[int, float]   # kernel variant -> GB/s (d2d counts read + write)
    default_variant: int
    baseline_gbs: float
    ceiling_gbs: float

    @property
    def best(self) -> tuple[int, float]:
        v = max(self.variant_gbs, key=self.variant_gbs.get)
        return v, self.variant_gbs[v]

    @property
    def default_gbs(self) -> float:
        return self.variant_gbs.get(self.default_variant, 0.0)


@dataclass
class BenchReport:
    device: str
    torch: str
    variants: list[str]
    ceilings: dict[str, float]
    rows: list[BenchRow] = field(default_factory=list)
    latency_us: dict[str, dict[str, float]] = field(default_factory=dict)

    def table(self) -> list[str]:
        out = [f"wb kernel bench on {self.device} (torch {self.torch})",
               "ceilings: " + ", ".join(f"{k} {v:.1f} GB/s" for k, v in self.ceilings.items()),
               "variants: " + "; ".join(f"v{i} {n}" for i, n in enumerate(self.variants)),
               f"{'geometry':13} {'layout':11} {'dir':4} {'gran':5} {'MB':>7} "
               f"{'default':>9} {'%ceil':>6} {'best':>9} {'%ceil':>6} {'torch':>8} {'x torch':>7}  per variant GB/s"]
        for r in self.rows:
            bv, bg = r.best
            per = " ".join(f"v{v}:{g:.0f}" for v, g in sorted(r.variant_gbs.items()))
            out.append(
                f"{r.geometry:13} {r.layout:11} {r.direction:4} {r.granularity:5} "
                f"{r.bytes / 1e6:7.1f} {r.default_gbs:9.1f} {100 * r.default_gbs / r.ceiling_gbs:5.1f}% "
                f"{bg:7.1f}v{bv} {100 * bg / r.ceiling_gbs:5.1f}% {r.baseline_gbs:8.1f} "
                f"{r.default_gbs / r.baseline_gbs if r.baseline_gbs else float('nan'):7.1f}  {per}")
        if self.latency_us:
            out.append("small transfer (64 tokens of index_k_bf16 x 4 layers = 64 KiB), "
                       "microseconds per call incl. sync, median:")
            for direction, d in self.latency_us.items():
                out.append(f"  {direction}: " + ", ".join(f"{k} {v:.1f}" for k, v in d.items()))
        return out

    def as_dict(self) -> dict:
        return {"device": self.device, "torch": self.torch, "variants": self.variants,
                "ceilings_gbs": self.ceilings,
                "rows": [dict(r.__dict__, best_variant=r.best[0], best_gbs=r.best[1],
                              default_gbs=r.default_gbs,
                              default_pct_ceiling=100 * r.default_gbs / r.ceiling_gbs,
                              best_pct_ceiling=100 * r.best[1] / r.ceiling_gbs)
                         for r in self.rows],
                "latency_us": self.latency_us}


def _time_ms(fn, *, reps: int, warmup: int = 3, inner: int = 1) -> float:
    """Median milliseconds per call; `inner` calls back to back per sample keep the GPU's
    queue full, so host-side launch cost does not leak into the figure."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(inner):
            fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / inner)
    return statistics.median(times)


def _wall_us(fn, *, reps: int = 200) -> float:
    import time

    import torch

    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t) * 1e6)
    return statistics.median(times)


def _ceilings(dev_bytes: int, host_bytes: int) -> dict[str, float]:
    import torch

    a = torch.empty(dev_bytes, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    a.random_(0, 256)
    t = _time_ms(lambda: b.copy_(a), reps=20, inner=3)
    d2d = 2 * dev_bytes / t / 1e6
    h = torch.empty(host_bytes, dtype=torch.uint8, pin_memory=True)
    d = a[:host_bytes]
    t_h2d = _time_ms(lambda: d.copy_(h, non_blocking=True), reps=10)
    t_d2h = _time_ms(lambda: h.copy_(d, non_blocking=True), reps=10)
    del a, b, h
    return {"d2d": d2d, "d2h": host_bytes / t_d2h / 1e6, "h2d": host_bytes / t_h2d / 1e6}


def run_bench(*, quick: bool = False, variants: list[int] | None = None, layers: int = 4,
              progress=None) -> BenchReport:
    import torch

    from kernels import api, build
    from kernels.reference import reference_transfer
    from workbench.errors import KernelError

    if torch.version.cuda is None or not torch.cuda.is_available():
        raise KernelError("wb kernel bench needs a CUDA device: " + build.unavailable_reason(),
                          hint="run it on the GPU machine (see kernels/NOTES.md)")
    ext = build.load()
    names = list(ext.variants())
    variants = list(range(len(names))) if variants is None else variants
    dev_pool_bytes = (256 if quick else 1536) << 20
    host_pool_bytes = (128 if quick else 768) << 20
    moved_target = (16 if quick else 128) << 20
    reps = 5 if quick else 15
    if progress:
        progress("ceilings")
    report = BenchReport(device=torch.cuda.get_device_name(0), torch=torch.__version__,
                         variants=names,
                         ceilings=_ceilings(1 << 30 if not quick else 256 << 20, host_pool_bytes))
    raw_dev_a = torch.empty(dev_pool_bytes, dtype=torch.uint8, device="cuda").random_(0, 256)
    raw_dev_b = torch.empty(dev_pool_bytes, dtype=torch.uint8, device="cuda")
    raw_host = torch.empty(host_pool_bytes, dtype=torch.uint8, pin_memory=True)
    raw_host.copy_(raw_dev_a[:host_pool_bytes])
    gen = torch.Generator().manual_seed(0)
    ps = 64
    configs = [(g, "page_first", d, gran) for g in GEOMETRIES for d in DIRECTIONS
               for gran in ("token", "page")]
    configs += [("index_k_bf16", "layer_first", d, "token") for d in DIRECTIONS]
    for geometry, layout, direction, gran in configs:
        if progress:
            progress(f"{geometry} {layout} {direction} {gran}")
        geo = GEOMETRIES[geometry]
        row = geo.page_bytes(ps)
        dev_pages = dev_pool_bytes // (layers * row)
        host_pages = host_pool_bytes // (layers * row)

        def pool(raw, pages):
            shape = (pages, layers, row) if layout == "page_first" else (layers, pages, row)
            return raw[:pages * layers * row].view(shape)

        if direction == "d2d":
            src, dst = pool(raw_dev_a, dev_pages), pool(raw_dev_b, dev_pages)
        elif direction == "d2h":
            src, dst = pool(raw_dev_a, dev_pages), pool(raw_host, host_pages)
        else:
            src, dst = pool(raw_host, host_pages), pool(raw_dev_b, dev_pages)
        s_pages, d_pages = (dev_pages, dev_pages) if direction == "d2d" else (
            (dev_pages, host_pages) if direction == "d2h" else (host_pages, dev_pages))
        unit = geo.bytes_per_token if gran == "token" else row
        s_lim, d_lim = (s_pages * ps, d_pages * ps) if gran == "token" else (s_pages, d_pages)
        n = min(moved_target // (unit * layers), s_lim, d_lim)
        # Random rows on the device side, consecutive rows on the other (a gather or scatter).
        rand = torch.randperm(s_lim if direction != "h2d" else d_lim, generator=gen)[:n]
        seq = torch.arange(n, dtype=torch.int64)
        si, di = (seq, rand) if direction == "h2d" else (rand, seq)
        si_d, di_d = si.cuda(), di.cuda()
        plan = api.plan_transfer(src, dst, si_d, di_d, geometry=geometry, granularity=gran,
                                 layout=layout, page_size=ps, impl="cuda")
        moved = n * layers * unit
        count = 2 * moved if direction == "d2d" else moved
        gbs = {}
        for v in variants:
            t = _time_ms(lambda: build.launch(plan, v), reps=reps,
                         inner=10 if direction == "d2d" else 3)
            gbs[v] = count / t / 1e6
        t = _time_ms(lambda: reference_transfer(src, dst, si_d if src.is_cuda else si,
                                                di_d if dst.is_cuda else di, geometry=geo,
                                                granularity=gran, layout=layout,
                                                page_size=ps), reps=max(3, reps // 3), warmup=1)
        report.rows.append(BenchRow(geometry, layout, direction, gran, moved, gbs,
                                    _default_variant(direction), count / t / 1e6,
                                    report.ceilings[direction]))
    report.latency_us = _latency(raw_dev_a, raw_dev_b, raw_host, layers)
    return report


def _default_variant(direction: str) -> int:
    # Mirrors kDefault in cuda/transfer.cu.
    return {"d2d": 1, "d2h": 1, "h2d": 1}[direction]


def _latency(raw_dev_a, raw_dev_b, raw_host, layers: int) -> dict:
    import torch

    from kernels import api, build, transfer

    ps, g = 64, "index_k_bf16"
    row = GEOMETRIES[g].page_bytes(ps)
    pages = 64
    shape = (pages, layers, row)
    dev_a = raw_dev_a[:pages * layers * row].view(shape)
    dev_b = raw_dev_b[:pages * layers * row].view(shape)
    host = raw_host[:pages * layers * row].view(shape)
    si = torch.randperm(pages * ps)[:64]
    di = torch.randperm(pages * ps)[:64]
    nbytes = 64 * layers * 256
    out = {}
    for direction, (s, d) in {"d2d": (dev_a, dev_b), "d2h": (dev_a, host),
                              "h2d": (host, dev_b)}.items():
        kw = dict(geometry=g, granularity="token", layout="page_first", page_size=ps)
        plan = api.plan_transfer(s, d, si.cuda(), di.cuda(), impl="cuda", **kw)
        flat_s, flat_d = s.view(-1)[:nbytes], d.view(-1)[:nbytes]
        out[direction] = {
            "transfer() cpu ids": _wall_us(lambda: transfer(s, d, si, di, impl="cuda", **kw)),
            "launch only": _wall_us(lambda: build.launch(plan)),
            "one copy_ of the bytes": _wall_us(lambda: flat_d.copy_(flat_s, non_blocking=True)),
        }
    return out
