"""What page order costs and gains device to device with random rows (GPU only), the bench's
pools, fp8 then c4 rows. Per size: with SORTS, the sorts alone (the counting sort, the radix
sort, `torch.sort` of the same int32 page keys as the baseline), each as queued calls (host and
device), replayed from a CUDA graph (device only) and as host time per call; then the transfer
(ms): the plan's one launch and its page order (scale passes after the values, or beside them
on the high-priority side stream), new ids in one launch or sorted per call (the sort beside
the values, and the scale passes after them or beside them too), the values alone, and for fp8
rows the sort in line and the scales alone in the ids' order after the values (no sort); last
the small transfer's latency (the bench's figures).
`python -m kernels.order_parts`.
"""

from __future__ import annotations

import time

SIZES_MB = (32, 64, 128, 256, 512)
SORTS = False     # the sorts alone (run 13's table); the transfers are timed whatever this says


def _graph_us(fn, calls: int = 10) -> float | str:
    """Device microseconds per call: `calls` calls captured in one CUDA graph, replayed."""
    import torch

    from .bench import _time_ms

    try:
        fn()
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(calls):
                fn()
        return 1e3 * _time_ms(g.replay, reps=9, inner=5) / calls
    except Exception as exc:  # a capture refused (an allocation or a sync inside): say which
        torch.cuda.synchronize()
        return f"no graph ({type(exc).__name__})"


def _host_us(fn, calls: int = 20) -> float:
    """Host microseconds per call: the enqueue loop's wall time, the device queue not full."""
    import torch

    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return 1e6 * (t1 - t0) / calls


def _sorts(ext, a, b, ps: int, pages: tuple, lims: tuple) -> list[tuple[str, object]]:
    import torch

    from . import scales

    ks, kd = (a // ps).int(), (b // ps).int()
    return [(f"{kind} sort", lambda kind=kind: scales.device_page_order(
                ext, a, b, ps, pages, lims, sort=kind)) for kind in ("count", "radix")] + [
        ("torch.sort x2 (int32 page keys)", lambda: (torch.sort(ks), torch.sort(kd))),
        ("torch.sort x2 stable", lambda: (torch.sort(ks, stable=True),
                                          torch.sort(kd, stable=True)))]


def _exact(ext, a, b, ps: int, pages: tuple, lims: tuple) -> bool:
    """The radix lists equal those of a stable argsort by page (the reference's order)."""
    import torch

    from . import scales

    got = scales.device_page_order(ext, a, b, ps, pages, lims, sort="radix")
    by_src = torch.sort(a // ps, stable=True).indices
    by_dst = torch.sort(b // ps, stable=True).indices
    slot = torch.empty_like(by_src)
    slot[by_src] = torch.arange(a.numel(), device=a.device)
    want = (a[by_src], torch.arange(a.numel(), device=a.device), slot[by_dst], b[by_dst])
    return all(bool(torch.equal(x, y)) for x, y in zip(got[:4], want))


def _with(fn, **values):
    """fn run with kernels.scales' constants set to `values` for the call."""
    from . import scales
    from .check import _patched

    def run():
        with _patched(scales, **values):
            fn()
    return run


def _transfers(p, src, dst, a, b, plan, kw) -> list[tuple[str, object]]:
    from . import build, scales
    from .bench import _new_ids_each_call

    pages = (p.s_shape.num_pages, p.d_shape.num_pages)
    new = _new_ids_each_call(src, dst, a, b, kw)
    order = lambda: build.launch(plan, scales="always")  # noqa: E731

    def in_line():
        ids = scales.device_page_order(p.ext, a, b, p.page_size, pages, (p.s_lim, p.d_lim))
        scales.run_page_order(p.ext, src, dst, a, b, p.args[:13], ids, overlap=False)

    args = p.args[:13]

    def values():
        p.ext.transfer(src, dst, a, b, *args, 1, False, False, True)

    def two_pass(variant):
        # the values (checked, reported), then the scales alone straight between the pools in
        # the ids' order: a layer-major variant keeps one layer's scale blocks (12 MB a side
        # here) in L2 while its pass runs
        def run():
            values()
            p.ext.transfer(src, dst, a, b, *args[:9], variant, *args[10:], 2, False, False,
                           False)
        return run

    rows = [("plan one launch", lambda: build.launch(plan, scales="never")),
            ("plan page order (lists made once)", _with(order, ORDER_OVERLAP=False)),
            ("plan page order, scales beside", _with(order, ORDER_OVERLAP=True)),
            ("new ids, transfer() as it stands", new),
            ("new ids, one launch", _with(new, NEW_ORDER_MIN_BYTES=None)),
            ("values alone (part 1, checked)", values)]
    if p.geo.value_bytes <= 128:        # page order per call is for fp8-like rows only
        rows += [("new ids, count per call, beside", _with(new, NEW_ORDER_MIN_BYTES=0, ORDER_SORT="count",
                                                           ORDER_OVERLAP=False)),
                 ("new ids, count, scales beside too", _with(new, NEW_ORDER_MIN_BYTES=0, ORDER_SORT="count",
                                                             ORDER_OVERLAP=True)),
                 ("new ids, radix, scales beside too", _with(new, NEW_ORDER_MIN_BYTES=0, ORDER_SORT="radix",
                                                             ORDER_OVERLAP=True)),
                 ("new ids, radix per call, in line", in_line),
                 *[(f"values, then scales in pair order v{v}", two_pass(v)) for v in (0, 23)]]
    return rows


def _size(mb: int, raw, gen, geometry: str = "index_k_fp8") -> list[str]:
    from . import api
    from .bench import _bench_ids, _pools_for, _time_ms
    from .geometry import GEOMETRIES

    layers, ps = 4, 64
    src, dst, s_pages, d_pages = _pools_for(geometry, "page_first", "d2d", raw, layers, ps)
    n = (mb << 20) // (GEOMETRIES[geometry].bytes_per_token * layers)
    si, di = _bench_ids("d2d", "token", "rand", n=n, s_pages=s_pages, d_pages=d_pages, ps=ps,
                        gen=gen)
    a, b = si.cuda(), di.cuda()
    kw = dict(geometry=geometry, granularity="token", layout="page_first", page_size=ps)
    plan = api.plan_transfer(src, dst, a, b, impl="cuda", **kw)
    p = api._pools(src, dst, geometry, "token", "page_first", ps, None, "cuda")
    pages, lims = (s_pages, d_pages), (p.s_lim, p.d_lim)
    out = [f"{geometry} {mb} MB: {n} pairs, {s_pages} pages a side"]
    if geometry == "index_k_fp8" and SORTS:
        out[0] += f"; radix lists exact: {_exact(p.ext, a, b, ps, pages, lims)}"
        for name, fn in _sorts(p.ext, a, b, ps, pages, lims):
            queued = 1e3 * _time_ms(fn, reps=9, inner=20)
            dev = _graph_us(fn)
            dev_s = f"{dev:7.1f}" if isinstance(dev, float) else dev
            out.append(f"  {name:36} queued {queued:7.1f} us  graph {dev_s} us  host "
                       f"{_host_us(fn):6.1f} us")
    times = [(name, _time_ms(fn, reps=9, inner=10)) for name, fn in _transfers(
        p, src, dst, a, b, plan, kw)]
    one = times[0][1]
    for name, t in times:
        out.append(f"  {name:36} {t:7.3f} ms  /plan one launch {t / one:5.3f}  "
                   f"plan order/this {times[1][1] / t:5.3f}")
    api.synchronize()
    return out


def _once(mb: int) -> None:
    """Each of the binding's sorts twice at one size on the bench's pool geometry, nothing else
    (the workload Nsight Compute profiles: no pools, no set-up to wait through)."""
    import torch

    from . import build, scales
    from .geometry import GEOMETRIES

    pages, ps = 47662, 64                    # the bench's fp8 pools: 1536 MiB over 4 layers
    n = (mb << 20) // (GEOMETRIES["index_k_fp8"].bytes_per_token * 4)
    gen = torch.Generator().manual_seed(0)
    a = torch.randperm(pages * ps, generator=gen)[:n].cuda()
    b = torch.randperm(pages * ps, generator=gen)[:n].cuda()
    for sort in ("count", "radix"):
        for _ in range(2):
            scales.device_page_order(build.load(), a, b, ps, (pages, pages),
                                     (pages * ps, pages * ps), sort=sort)
    torch.cuda.synchronize()


def main(argv: list[str] | None = None) -> None:
    import sys

    from .bench import parts_buffers

    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--once"]:
        _once(int(argv[1]) if len(argv) > 1 else 512)
        return
    raw, gen = parts_buffers()
    for geometry in ("index_k_fp8", "c4_latent"):
        for mb in SIZES_MB:
            print("\n".join(_size(mb, raw, gen, geometry)), flush=True)
    from .bench import _latency

    print("small transfer (64 tokens of index_k_bf16 x 4 layers), us per call, median:")
    for direction, d in _latency(*raw, 4).items():
        print(f"  {direction}: " + ", ".join(f"{k} {v:.1f}" for k, v in d.items()))


if __name__ == "__main__":
    main()
