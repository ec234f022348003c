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

from .geometry import GEOMETRIES

__all__ = ["run_bench", "BenchReport", "BenchRow"]

DIRECTIONS = ("d2d", "d2h", "h2d")


@dataclass
class BenchRow:
    geometry: str
    layout: str
    direction: str
    granularity: str
    order: str                      # host/other side: seq (consecutive ids), rand, partial pages
    bytes: int                      # payload bytes moved per transfer
    variant_gbs: dict[str, float]   # path -> GB/s (d2d counts read + write): v<k> zero-copy
                                    # kernel variants, sB/sL staged with batched/looped DMA
    default_gbs: float              # what transfer() picks by itself, on a validated plan
    api_gbs: float                  # transfer() itself: validation and planning included
    baseline_gbs: float
    ceiling_gbs: float

    @property
    def best(self) -> tuple[str, float]:
        v = max(self.variant_gbs, key=self.variant_gbs.get)
        return v, self.variant_gbs[v]


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
               "paths: v<k> zero-copy kernel variant k; sB/sL host rows staged by DMA "
               "(batched/looped) pipelined with the kernel, sB1 batched unpipelined; "
               "default = what transfer() picks; api = transfer() with validation and planning",
               f"{'geometry':13} {'layout':11} {'dir':4} {'gran':5} {'order':7} {'MB':>6} "
               f"{'default':>8} {'%ceil':>6} {'best':>11} {'%ceil':>6} {'api':>7} {'torch':>7} "
               f"{'x torch':>7}  per path GB/s"]
        for r in self.rows:
            bv, bg = r.best
            per = " ".join(f"{v}:{g:.0f}" for v, g in r.variant_gbs.items())
            out.append(
                f"{r.geometry:13} {r.layout:11} {r.direction:4} {r.granularity:5} {r.order:7} "
                f"{r.bytes / 1e6:6.1f} {r.default_gbs:8.1f} {100 * r.default_gbs / r.ceiling_gbs:5.1f}% "
                f"{bg:7.1f} {bv:>3} {100 * bg / r.ceiling_gbs:5.1f}% {r.api_gbs:7.1f} "
                f"{r.baseline_gbs:7.1f} "
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


def _ceilings(dev_bytes: int, host_bytes: int, same_bytes: int) -> dict[str, float]:
    import torch

    a = torch.empty(dev_bytes, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    a.random_(0, 256)
    t = _time_ms(lambda: b.copy_(a), reps=20, inner=3)
    d2d = 2 * dev_bytes / t / 1e6
    # The same copy at the d2d transfers' payload size: shows how much of a gap is launch
    # ramp and tail rather than access pattern. Informational, not used for %ceil.
    s = min(same_bytes, dev_bytes)
    t_s = _time_ms(lambda: b[:s].copy_(a[:s]), reps=20, inner=10)
    d2d_same = 2 * s / t_s / 1e6
    h = torch.empty(host_bytes, dtype=torch.uint8, pin_memory=True)
    d = a[:host_bytes]
    t_h2d = _time_ms(lambda: d.copy_(h, non_blocking=True), reps=10)
    t_d2h = _time_ms(lambda: h.copy_(d, non_blocking=True), reps=10)
    del a, b, h
    return {"d2d": d2d, "d2h": host_bytes / t_d2h / 1e6, "h2d": host_bytes / t_h2d / 1e6,
            "d2d at transfer size (info)": d2d_same}


def run_bench(*, quick: bool = False, variants: list[int] | None = None, layers: int = 4,
              progress=None) -> BenchReport:
    import torch

    from . import api, build, staged, transfer
    from .reference import reference_transfer
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
    d2d_moved = moved_target * 4
    if progress:
        progress("ceilings")
    report = BenchReport(device=torch.cuda.get_device_name(0), torch=torch.__version__,
                         variants=names,
                         ceilings=_ceilings(1 << 30 if not quick else 256 << 20, host_pool_bytes,
                                            d2d_moved))
    raw_dev_a = torch.empty(dev_pool_bytes, dtype=torch.uint8, device="cuda").random_(0, 256)
    raw_dev_b = torch.empty(dev_pool_bytes, dtype=torch.uint8, device="cuda")
    raw_host = torch.empty(host_pool_bytes, dtype=torch.uint8, pin_memory=True)
    raw_host.copy_(raw_dev_a[:host_pool_bytes])
    gen = torch.Generator().manual_seed(0)
    ps = 64
    configs = [(g, "page_first", d, gran, "seq") for g in GEOMETRIES for d in DIRECTIONS
               for gran in ("token", "page")]
    configs += [("index_k_bf16", "layer_first", d, "token", "seq") for d in DIRECTIONS]
    configs += [("index_k_bf16", "page_first", d, "page", "rand") for d in ("d2h", "h2d")]
    configs += [("index_k_bf16", "page_first", d, "token", "partial") for d in ("d2h", "h2d")]
    for geometry, layout, direction, gran, order in configs:
        if progress:
            progress(f"{geometry} {layout} {direction} {gran} {order}")
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
        target = d2d_moved if direction == "d2d" else moved_target
        si, di = _bench_ids(direction, gran, order, n=target // (unit * layers),
                            s_pages=s_pages, d_pages=d_pages, ps=ps, gen=gen)
        n = si.numel()
        si_d, di_d = si.cuda(), di.cuda()
        # Ids travel as the caller would hand them: cpu for the host side (the DMA plan
        # needs them there), device for the device side.
        s_ids = si if direction == "h2d" else si_d
        d_ids = di if direction == "d2h" else di_d
        kw = dict(geometry=geometry, granularity=gran, layout=layout, page_size=ps)
        plan = api.plan_transfer(src, dst, s_ids, d_ids, impl="cuda", **kw)
        moved = n * layers * unit
        count = 2 * moved if direction == "d2d" else moved
        inner = 10 if direction == "d2d" else 3

        def gb(fn, r=reps, i=inner):
            return count / _time_ms(fn, reps=r, inner=i) / 1e6

        paths = {}
        for v in variants:
            if direction != "d2d" and v >= 4:
                continue    # wide variants are device-to-device only (the launcher says why)
            paths[f"v{v}"] = gb(lambda: build.launch(plan, v, staging="never"))
        if direction != "d2d" and staged.plan_staged(plan, force=True) is not None:
            paths["sB"] = gb(lambda: build.launch(plan, staging="always", dma_mode=1))
            paths["sL"] = gb(lambda: build.launch(plan, staging="always", dma_mode=0))
            paths["sB1"] = gb(lambda: build.launch(plan, staging="always", dma_mode=1,
                                                   pipelined=False))
        default = gb(lambda: build.launch(plan))
        api_gbs = gb(lambda: transfer(src, dst, s_ids, d_ids, impl="cuda", **kw),
                     r=max(3, reps // 3), i=1)
        base = gb(lambda: reference_transfer(src, dst, si_d if src.is_cuda else si,
                                             di_d if dst.is_cuda else di, geometry=geo,
                                             granularity=gran, layout=layout, page_size=ps),
                  r=max(3, reps // 3), i=1)
        report.rows.append(BenchRow(geometry, layout, direction, gran, order, moved, paths,
                                    default, api_gbs, base, report.ceilings[direction]))
    report.latency_us = _latency(raw_dev_a, raw_dev_b, raw_host, layers)
    return report


def _bench_ids(direction, gran, order, *, n, s_pages, d_pages, ps, gen):
    """Random rows on the device side; on the other side consecutive rows (seq), random rows
    (rand) or the prefixes of consecutive pages (partial, a HiCache partial-page load)."""
    import torch

    from .experiment import _page_lengths

    dev_is_src = direction != "h2d"
    dev_lim = (s_pages if dev_is_src else d_pages) * (ps if gran == "token" else 1)
    other_lim = (d_pages if dev_is_src else s_pages) * (ps if gran == "token" else 1)
    if order == "partial":
        lengths = _page_lengths(n, True, gen)
        slots = torch.arange(ps)
        keep = slots[None, :] < lengths[:, None]
        other = (torch.arange(lengths.numel())[:, None] * ps + slots)[keep]
        dev_pages_used = torch.randperm(dev_lim // ps, generator=gen)[:lengths.numel()]
        dev = (dev_pages_used[:, None] * ps + slots)[keep]
        return (dev, other) if dev_is_src else (other, dev)
    n = min(n, dev_lim, other_lim)
    dev = torch.randperm(dev_lim, generator=gen)[:n]
    other = torch.arange(n, dtype=torch.int64) if order == "seq" else \
        torch.randperm(other_lim, generator=gen)[:n]
    return (dev, other) if dev_is_src else (other, dev)


def _latency(raw_dev_a, raw_dev_b, raw_host, layers: int) -> dict:
    import torch

    from . import api, build, transfer

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
