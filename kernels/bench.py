"""`wb kernel bench`: bandwidth of the CUDA kernel and of `transfer()` against the copy
ceiling of the same size, all measured in the same run on the same device.

Each row times, on the same pools and ids:
- kernel: the default path of a plan validated once (`plan_transfer`, then `run_plan`);
- api: `transfer()` with the ids on the device, the same tensors handed again each call, as a
  loader reusing its id buffers does (no synchronisation; from their third call they run as a
  plan made from a host copy: kernels.reuse); calls back to back, like the kernel column;
- new: `transfer()` with new id tensors each call (two copies taken in turn: the kernel checks
  them, nothing is kept from one call to the next);
- host-checked: `run_plan(plan_transfer(...))` per call, i.e. ids validated on the host with
  a synchronisation, which is what `transfer()` did with device ids before (the "before");
- ceiling: a `copy_` of the same payload (device to device: read + written, as the rows are
  counted) or a pinned copy of it for the host directions, timed just before the row.
Headline rows have random ids on both sides ("rand"); "seq" rows have consecutive ids on the
host side (device to device: on the destination side), "partial" the prefixes of consecutive
pages (a HiCache partial-page load), "sparse" (host to device, a quarter of the size) 32 random
slots in each of few random host pages (1 page in 11-12 of the pool: the touched pages' scale
blocks are few), the pairs in random order ("sparseP": page by page). The page-order gate
(kernels.scales.PAGE_ORDER_MIN_BYTES) is timed around its
crossover: fp8 random rows device to device in one launch against page order, on a plan.
Times are medians of CUDA-event timings after warm-up; pools are several times the L2 so
repeats do not measure the cache.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from .geometry import GEOMETRIES

__all__ = ["run_bench", "BenchReport", "BenchRow"]

# Variants timed per row unless the caller names others: the defaults' families and the
# scale-first split kernels (device to device), the zero-copy pair (host).
D2D_VARIANTS = (0, 1, 12, 13, 16, 17, 18, 19, 23, 24)
HOST_VARIANTS = (0, 1, 13, 16, 17, 19, 23)


@dataclass
class BenchRow:
    geometry: str
    layout: str
    direction: str
    granularity: str
    order: str                      # rand, seq, partial, sparse, sparseP (module docstring)
    bytes: int                      # payload bytes moved per transfer
    variant_gbs: dict[str, float]   # path -> GB/s (d2d counts read + write): v<k> zero-copy
                                    # kernel variants, sB/sL staged with batched/looped DMA
                                    # (whole pages), sD/sS host scales by 2D copy (overlapped
                                    # / in line), sK/sKs the touched pages' scale blocks
                                    # (overlapped / in line), pO scales in page order
    default_gbs: float              # kernel: the default path on a validated plan
    api_gbs: float                  # transfer() with device ids
    baseline_gbs: float             # torch index_select / index_copy_
    ceiling_gbs: float              # copy of the same payload, this row
    checked_gbs: float = 0.0        # run_plan(plan_transfer()) per call (host validation)
    api_new_gbs: float = 0.0        # transfer() with new device id tensors each call

    @property
    def best(self) -> tuple[str, float]:
        if not self.variant_gbs:
            return "-", 0.0
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
    sweep: list[dict] = field(default_factory=list)
    gate: list[dict] = field(default_factory=list)

    def table(self) -> list[str]:
        out = [f"wb kernel bench on {self.device} (torch {self.torch})",
               "large copies: " + ", ".join(f"{k} {v:.1f} GB/s" for k, v in self.ceilings.items()),
               "variants: " + "; ".join(f"v{i} {n}" for i, n in enumerate(self.variants)),
               "kernel = default path on a validated plan; api = transfer() with the same "
               "device ids each call; new = transfer() with new device id tensors each call "
               "(checked on the device); host-chk = plan_transfer+run_plan per call (the old "
               "transfer()); ceil = copy of the same payload in this row; % = of ceil",
               f"{'geometry':13} {'layout':11} {'dir':4} {'gran':5} {'order':7} {'MB':>6} "
               f"{'ceil':>7} {'kernel':>7} {'%':>5} {'api':>7} {'%':>5} {'api/k':>5} "
               f"{'new':>7} {'new/k':>5} {'host-chk':>8} {'best':>11} {'%':>5} {'torch':>6}  "
               f"per path GB/s"]
        for r in self.rows:
            bv, bg = r.best
            c = r.ceiling_gbs
            per = " ".join(f"{v}:{g:.0f}" for v, g in r.variant_gbs.items())
            out.append(
                f"{r.geometry:13} {r.layout:11} {r.direction:4} {r.granularity:5} {r.order:7} "
                f"{r.bytes / 1e6:6.1f} {c:7.1f} {r.default_gbs:7.1f} {100 * r.default_gbs / c:5.1f} "
                f"{r.api_gbs:7.1f} {100 * r.api_gbs / c:5.1f} {r.api_gbs / r.default_gbs:5.2f} "
                f"{r.api_new_gbs:7.1f} {r.api_new_gbs / r.default_gbs:5.2f} {r.checked_gbs:8.1f} "
                f"{bg:7.1f} {bv:>3} {100 * bg / c:5.1f} "
                f"{r.baseline_gbs:6.1f}  {per}")
        if self.sweep:
            out.append("size sweep, device to device, random ids (GB/s; api/k = transfer() over "
                       "kernel; % of the same-size copy):")
            for s in self.sweep:
                out.append(f"  {s['name']:44} {s['mb']:7.1f} MB  ceil {s['ceil']:7.1f}  kernel "
                           f"{s['kernel']:7.1f} ({100 * s['kernel'] / s['ceil']:5.1f}%)  api "
                           f"{s['api']:7.1f} ({100 * s['api'] / s['ceil']:5.1f}%)  api/k "
                           f"{s['api'] / s['kernel']:5.3f}  new/k "
                           f"{s['api_new'] / s['kernel']:5.3f}")
        if self.gate:
            out.append("fp8 page-order gate (random rows d2d, plan; GB/s, % of the same-size "
                       "copy; order/one > 1: page order faster; new ids: transfer() with new "
                       "id tensors each call, sorted on the device per call or one launch):")
            for g in self.gate:
                out.append(f"  {g['mb']:7.1f} MB  ceil {g['ceil']:7.1f}  one launch "
                           f"{g['one']:7.1f} ({100 * g['one'] / g['ceil']:5.1f}%)  page order "
                           f"{g['order']:7.1f} ({100 * g['order'] / g['ceil']:5.1f}%)  order/one "
                           f"{g['order'] / g['one']:5.3f}  default {g['default']:7.1f}  "
                           f"new ids: sorted per call {g['new_sort']:7.1f}, one launch "
                           f"{g['new_one']:7.1f} (sort/one {g['new_sort'] / g['new_one']:5.3f}), "
                           f"the sort alone ({g.get('sort', 'count')}) {g['sort_us']:.1f} us")
        if self.latency_us:
            out.append("small transfer (64 tokens of index_k_bf16 x 4 layers = 64 KiB), "
                       "microseconds per call, median:")
            for direction, d in self.latency_us.items():
                out.append(f"  {direction}: " + ", ".join(f"{k} {v:.1f}" for k, v in d.items()))
        return out

    def as_dict(self) -> dict:
        return {"device": self.device, "torch": self.torch, "variants": self.variants,
                "ceilings_gbs": self.ceilings,
                "rows": [dict(r.__dict__, best_variant=r.best[0], best_gbs=r.best[1],
                              default_pct_ceiling=100 * r.default_gbs / r.ceiling_gbs,
                              api_pct_ceiling=100 * r.api_gbs / r.ceiling_gbs)
                         for r in self.rows],
                "sweep": self.sweep, "gate": self.gate, "latency_us": self.latency_us}


def _time_ms(fn, *, reps: int, warmup: int = 3, inner: int = 1) -> float:
    """Median milliseconds per call; `inner` calls back to back per sample keep the GPU's
    queue full, so host-side launch cost does not leak into the figure (unless it is larger
    than the device time, which is then what the figure shows)."""
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


def _wall_us(fn, *, reps: int = 200, inner: int = 1) -> float:
    """Median wall microseconds per call; inner > 1 issues calls back to back and syncs once
    (host cost per call when the device keeps up)."""
    import time

    import torch

    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t) * 1e6 / inner)
    return statistics.median(times)


def _copy_gbs(direction: str, nbytes: int, raw_a, raw_b, raw_host) -> float:
    """A copy_ of nbytes in this direction (d2d counted read + written)."""
    if direction == "d2d":
        s, d = raw_a[:nbytes], raw_b[:nbytes]
        return 2 * nbytes / _time_ms(lambda: d.copy_(s), reps=15, inner=5) / 1e6
    h, dv = raw_host[:nbytes], raw_b[:nbytes]
    if direction == "h2d":
        return nbytes / _time_ms(lambda: dv.copy_(h, non_blocking=True), reps=10, inner=2) / 1e6
    return nbytes / _time_ms(lambda: h.copy_(raw_a[:nbytes], non_blocking=True), reps=10,
                             inner=2) / 1e6


def _configs(quick: bool):
    tok = [(g, "page_first", d, "token", o) for o in ("rand", "seq") for g in GEOMETRIES
           for d in ("d2d", "d2h", "h2d")]
    tok += [(g, "page_first", "h2d", "token", o) for o in ("sparse", "sparseP")
            for g in ("c4_latent", "index_k_fp8")]
    rest = [("index_k_bf16", "layer_first", "d2d", "token", "rand")]
    rest += [(g, "page_first", "d2d", "page", o) for o in ("rand", "seq") for g in GEOMETRIES]
    rest += [("index_k_bf16", "page_first", d, "page", o) for o in ("rand", "seq")
             for d in ("d2h", "h2d")]
    rest += [("index_k_bf16", "page_first", d, "token", "partial") for d in ("d2h", "h2d")]
    return tok if quick else tok + rest


def chosen_variants(variants: list[int] | None, names: list[str]) -> list[int] | None:
    """--variants' numbers, each one the built kernel has (`names`, by number): the kernel runs its default
    variant for any other, which the bench would time under the number asked for."""
    from workbench.errors import BadInput

    for v in variants or ():
        if not 0 <= v < len(names):
            raise BadInput(f"--variants: {v} is not a variant of this kernel, which has 0 to {len(names) - 1}",
                           hint="leave --variants out to time the usual set", where="--variants")
    return variants


def run_bench(*, quick: bool = False, variants: list[int] | None = None, layers: int = 4,
              progress=None, token_rows_only: bool = False) -> BenchReport:
    """token_rows_only: the page_first token rows (the headline) at full size, no page rows."""
    import torch

    from . import build
    from workbench.errors import KernelError

    if torch.version.cuda is None or not torch.cuda.is_available():
        raise KernelError("wb kernel bench needs a CUDA device: " + build.unavailable_reason(),
                          hint="run it on the GPU machine (see kernels/NOTES.md)")
    ext = build.load()
    names = list(ext.variants())
    variants = chosen_variants(variants, names)
    dev_pool_bytes = (256 if quick else 1536) << 20
    host_pool_bytes = (128 if quick else 768) << 20
    env = dict(layers=layers, reps=5 if quick else 11, moved=(16 if quick else 128) << 20,
               variants=variants)
    if progress:
        progress("ceilings")
    raw = (torch.empty(dev_pool_bytes, dtype=torch.uint8, device="cuda").random_(0, 256),
           torch.empty(dev_pool_bytes, dtype=torch.uint8, device="cuda"),
           torch.empty(host_pool_bytes, dtype=torch.uint8, pin_memory=True))
    raw[2].copy_(raw[0][:host_pool_bytes])
    big = min(1 << 30, dev_pool_bytes)
    report = BenchReport(device=torch.cuda.get_device_name(0), torch=torch.__version__,
                         variants=names,
                         ceilings={"d2d": _copy_gbs("d2d", big, *raw),
                                   "d2h": _copy_gbs("d2h", host_pool_bytes, *raw),
                                   "h2d": _copy_gbs("h2d", host_pool_bytes, *raw)})
    gen = torch.Generator().manual_seed(0)
    for cfg in _configs(quick or token_rows_only):
        if progress:
            progress(" ".join(cfg))
        report.rows.append(_row(cfg, raw, gen, env))
    if progress:
        progress("size sweep")
    report.sweep = _sweep(raw, gen, env, quick)
    if progress:
        progress("page-order gate")
    report.gate = _gate(raw, gen, env, quick)
    report.latency_us = _latency(*raw, layers)
    return report


def parts_buffers():
    """What the parts scripts (kernels.scale_parts, kernels.sparse_parts) time on: random device bytes, a
    device destination, a pinned host copy of the first 768 MiB, and the ids' generator."""
    import torch

    raw = (torch.empty(1536 << 20, dtype=torch.uint8, device="cuda").random_(0, 256),
           torch.empty(1536 << 20, dtype=torch.uint8, device="cuda"),
           torch.empty(768 << 20, dtype=torch.uint8, pin_memory=True))
    raw[2].copy_(raw[0][:768 << 20])
    return raw, torch.Generator().manual_seed(0)


def _pools_for(geometry, layout, direction, raw, layers, ps=64):
    row = GEOMETRIES[geometry].page_bytes(ps)
    dev_pages = raw[0].numel() // (layers * row)
    host_pages = raw[2].numel() // (layers * row)

    def pool(t, pages):
        shape = (pages, layers, row) if layout == "page_first" else (layers, pages, row)
        return t[:pages * layers * row].view(shape)

    if direction == "d2d":
        return pool(raw[0], dev_pages), pool(raw[1], dev_pages), dev_pages, dev_pages
    if direction == "d2h":
        return pool(raw[0], dev_pages), pool(raw[2], host_pages), dev_pages, host_pages
    return pool(raw[2], host_pages), pool(raw[1], dev_pages), host_pages, dev_pages


def _row(cfg, raw, gen, env) -> BenchRow:
    from . import api, build, staged, transfer
    from .reference import reference_transfer

    geometry, layout, direction, gran, order = cfg
    layers, reps = env["layers"], env["reps"]
    ps, geo = 64, GEOMETRIES[geometry]
    src, dst, s_pages, d_pages = _pools_for(geometry, layout, direction, raw, layers)
    unit = geo.bytes_per_token if gran == "token" else geo.page_bytes(ps)
    target = 4 * env["moved"] if direction == "d2d" else env["moved"]
    if order.startswith("sparse"):
        target //= 4
    si, di = _bench_ids(direction, gran, order, n=target // (unit * layers), s_pages=s_pages,
                        d_pages=d_pages, ps=ps, gen=gen)
    si_d, di_d = si.cuda(), di.cuda()
    # The validated plan takes the host side's ids on the cpu (the DMA plan reads them there).
    s_ids = si if direction == "h2d" else si_d
    d_ids = di if direction == "d2h" else di_d
    kw = dict(geometry=geometry, granularity=gran, layout=layout, page_size=ps)
    plan = api.plan_transfer(src, dst, s_ids, d_ids, impl="cuda", **kw)
    moved = si.numel() * layers * unit
    count = 2 * moved if direction == "d2d" else moved
    inner = 10 if direction == "d2d" else 3

    def gb(fn, r=reps, i=inner):
        return count / _time_ms(fn, reps=r, inner=i) / 1e6

    ceiling = _copy_gbs(direction, moved, *raw)
    wanted = env["variants"] or (D2D_VARIANTS if direction == "d2d" else HOST_VARIANTS)
    paths = {}
    for v in wanted:
        if direction != "d2d" and 4 <= v <= 8:
            continue    # wide variants are device-to-device only (the launcher says why)
        paths[f"v{v}"] = gb(lambda: build.launch(plan, v, staging="never"))
    if direction != "d2d" and staged.plan_staged(plan, force=True) is not None:
        paths["sB"] = gb(lambda: build.launch(plan, staging="always", dma_mode=1))
    if gran == "token" and geo.scale_bytes and direction == "h2d":
        # the scales apart (kernels.scales): 2D copy overlapped with the values, or in line
        paths["sD"] = gb(lambda: build.launch(plan, staging="never", scales="always"))
        paths["sS"] = gb(lambda: build.launch(plan, staging="never", scales="serial"))
        paths["sK"] = gb(lambda: build.launch(plan, staging="never", scales="blocks"))
        paths["sKs"] = gb(lambda: build.launch(plan, staging="never", scales="blocks-serial"))
    elif gran == "token" and geo.scale_bytes and direction == "d2d":
        paths["pO"] = gb(lambda: build.launch(plan, scales="always"))   # scales in page order
    default = gb(lambda: build.launch(plan))
    api_gbs = gb(lambda: transfer(src, dst, si_d, di_d, impl="cuda", **kw))
    api_new = gb(_new_ids_each_call(src, dst, si_d, di_d, kw))
    api.synchronize()
    checked = gb(lambda: api.run_plan(api.plan_transfer(src, dst, si_d, di_d, impl="cuda", **kw)),
                 r=3, i=1)
    base = gb(lambda: reference_transfer(src, dst, si_d if src.is_cuda else si,
                                         di_d if dst.is_cuda else di, geometry=geo,
                                         granularity=gran, layout=layout, page_size=ps),
              r=3, i=1)
    return BenchRow(geometry, layout, direction, gran, order, moved, paths, default, api_gbs,
                    base, ceiling, checked, api_new)


def _new_ids_each_call(src, dst, si_d, di_d, kw):
    """transfer() on two copies of the ids taken in turn: each call sees id tensors other than
    the last call's, so nothing derived from them is kept (kernels.api._reused)."""
    from . import transfer

    pairs = [(si_d.clone(), di_d.clone()) for _ in range(2)]
    turn = [0]

    def call():
        turn[0] ^= 1
        a, b = pairs[turn[0]]
        transfer(src, dst, a, b, impl="cuda", **kw)

    return call


def _sweep(raw, gen, env, quick: bool) -> list[dict]:
    """Random token gathers device to device at 32, 128 and 512 MB (kernel against transfer()),
    and random rows of 256 B .. 16 KiB (bf16 pages of page_size 1 .. 64, layer_first: each
    row contiguous), which bounds what random ids can reach whatever the kernel does."""
    from . import api, build, transfer

    out = []
    sizes = (8, 32) if quick else (32, 128, 512)
    cases = [(g, "token", 64, mb) for g in GEOMETRIES for mb in sizes]
    cases += [("index_k_bf16", "page", ps, sizes[-1]) for ps in (1, 2, 4, 16, 64)]
    for geometry, gran, ps, mb in cases:
        layout = "page_first" if gran == "token" else "layer_first"
        src, dst, s_pages, d_pages = _pools_for(geometry, layout, "d2d", raw, env["layers"], ps)
        geo = GEOMETRIES[geometry]
        unit = geo.bytes_per_token if gran == "token" else geo.page_bytes(ps)
        n = (mb << 20) // (unit * env["layers"])
        si, di = _bench_ids("d2d", gran, "rand", n=n, s_pages=s_pages, d_pages=d_pages, ps=ps,
                            gen=gen)
        si, di = si.cuda(), di.cuda()
        kw = dict(geometry=geometry, granularity=gran, layout=layout, page_size=ps)
        plan = api.plan_transfer(src, dst, si, di, impl="cuda", **kw)
        moved = si.numel() * env["layers"] * unit
        t_k = _time_ms(lambda: build.launch(plan), reps=env["reps"], inner=20)
        t_a = _time_ms(lambda: transfer(src, dst, si, di, impl="cuda", **kw), reps=env["reps"],
                       inner=20)
        t_n = _time_ms(_new_ids_each_call(src, dst, si, di, kw), reps=env["reps"], inner=20)
        api.synchronize()
        out.append({"name": f"{geometry} {gran} ps={ps} rand", "mb": moved / 1e6,
                    "ceil": _copy_gbs("d2d", moved, *raw), "kernel": 2 * moved / t_k / 1e6,
                    "api": 2 * moved / t_a / 1e6, "api_new": 2 * moved / t_n / 1e6})
    return out


def _gate(raw, gen, env, quick: bool) -> list[dict]:
    """fp8 random rows device to device around the page-order gate: one launch (v0) against
    the scales in page order (sorted once on the plan), and the plan's default; then
    transfer() with new id tensors each call, sorted on the device per call ("new_sort")
    against one checked launch ("new_one"): the crossover of NEW_ORDER_MIN_BYTES."""
    from . import api, build, scales

    geometry, layout, ps = "index_k_fp8", "page_first", 64
    src, dst, s_pages, d_pages = _pools_for(geometry, layout, "d2d", raw, env["layers"], ps)
    unit = GEOMETRIES[geometry].bytes_per_token
    out = []
    kw = dict(geometry=geometry, granularity="token", layout=layout, page_size=ps)
    for mb in ((16, 64) if quick else (24, 32, 48, 64, 80, 96, 128, 256, 512)):
        n = (mb << 20) // (unit * env["layers"])
        si, di = _bench_ids("d2d", "token", "rand", n=n, s_pages=s_pages, d_pages=d_pages,
                            ps=ps, gen=gen)
        plan = api.plan_transfer(src, dst, si.cuda(), di.cuda(), impl="cuda", geometry=geometry,
                                 granularity="token", layout=layout, page_size=ps)
        moved = si.numel() * env["layers"] * unit

        def gbs(**kw):
            return 2 * moved / _time_ms(lambda: build.launch(plan, **kw), reps=env["reps"],
                                        inner=20) / 1e6

        new = {}
        for key, least in (("new_sort", 0), ("new_one", 1 << 62)):
            keep = scales.NEW_ORDER_MIN_BYTES
            scales.NEW_ORDER_MIN_BYTES = least
            try:
                call = _new_ids_each_call(src, dst, si.cuda(), di.cuda(), kw)
                new[key] = 2 * moved / _time_ms(call, reps=env["reps"], inner=20) / 1e6
            finally:
                scales.NEW_ORDER_MIN_BYTES = keep
        api.synchronize()
        a, b = si.cuda(), di.cuda()
        new["sort_us"] = 1e3 * _time_ms(lambda: scales.device_page_order(
            build.load(), a, b, ps, (s_pages, d_pages), (s_pages * ps, d_pages * ps)),
            reps=env["reps"], inner=20)
        new["sort"] = scales.ORDER_SORT
        out.append({"mb": moved / 1e6, "ceil": _copy_gbs("d2d", moved, *raw),
                    "one": gbs(scales="never"), "order": gbs(scales="always"),
                    "default": gbs(), **new})
    return out


def _bench_ids(direction, gran, order, *, n, s_pages, d_pages, ps, gen):
    """Random rows on the device side (device to device: the source); on the other side
    consecutive rows (seq), random rows (rand) or the prefixes of consecutive pages (partial)."""
    import torch

    from .experiment import _page_lengths

    dev_is_src = direction != "h2d"
    per = ps if gran == "token" else 1
    dev_lim = (s_pages if dev_is_src else d_pages) * per
    other_lim = (d_pages if dev_is_src else s_pages) * per
    if order.startswith("sparse"):    # 32 random slots in each of few random host pages
        k = n // 32
        pages = torch.randperm(other_lim // ps, generator=gen)[:k]
        slots = torch.rand(k, ps, generator=gen).argsort(1)[:, :32]
        other = (pages[:, None] * ps + slots).reshape(-1)
        if order == "sparse":         # the pairs in random order (sparseP: page by page)
            other = other[torch.randperm(other.numel(), generator=gen)]
        dev = torch.randperm(dev_lim, generator=gen)[:other.numel()]
        return (dev, other) if dev_is_src else (other, dev)
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
    """64 tokens x 4 layers: per call with a sync (latency), and back to back without one
    (host cost per call: what transfer() adds over the launch is the difference)."""
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
    si_d, di_d = si.cuda(), di.cuda()
    nbytes = 64 * layers * 256
    out = {}
    for direction, (s, d) in {"d2d": (dev_a, dev_b), "d2h": (dev_a, host),
                              "h2d": (host, dev_b)}.items():
        kw = dict(geometry=g, granularity="token", layout="page_first", page_size=ps)
        plan = api.plan_transfer(s, d, si_d, di_d, impl="cuda", **kw)
        flat_s, flat_d = s.view(-1)[:nbytes], d.view(-1)[:nbytes]
        out[direction] = {
            "launch only": _wall_us(lambda: build.launch(plan)),
            "transfer() device ids": _wall_us(lambda: transfer(s, d, si_d, di_d, impl="cuda", **kw)),
            "transfer() cpu ids": _wall_us(lambda: transfer(s, d, si, di, impl="cuda", **kw)),
            "host-checked (old transfer())": _wall_us(
                lambda: api.run_plan(api.plan_transfer(s, d, si_d, di_d, impl="cuda", **kw))),
            "one copy_ of the bytes": _wall_us(lambda: flat_d.copy_(flat_s, non_blocking=True)),
            "host us/call: launch only": _wall_us(lambda: build.launch(plan), reps=20, inner=200),
            "host us/call: transfer() device ids": _wall_us(
                lambda: transfer(s, d, si_d, di_d, impl="cuda", **kw), reps=20, inner=200),
            "host us/call: transfer() new device ids": _wall_us(
                _new_ids_each_call(s, d, si_d, di_d, kw), reps=20, inner=200),
        }
    api.synchronize()
    return out
