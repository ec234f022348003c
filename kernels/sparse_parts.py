"""Where `transfer()` with device ids spends its time on sparse host rows (GPU only): the
bench's sparse rows (32 slots in each of 1 host page in 11-12, random pair order or page by
page), each part of the call timed alone against the plan's default and forced paths.
`python -m kernels.sparse_parts`.
"""

from __future__ import annotations


def _rows(geometry: str, order: str, raw, gen, layers: int = 4) -> list[tuple[str, float]]:
    import torch

    from . import api, build, scales
    from .bench import _bench_ids, _copy_gbs, _new_ids_each_call, _pools_for, _time_ms
    from .geometry import GEOMETRIES

    geo, ps = GEOMETRIES[geometry], 64
    src, dst, s_pages, d_pages = _pools_for(geometry, "page_first", "h2d", raw, layers)
    n = (32 << 20) // (geo.bytes_per_token * layers)
    si, di = _bench_ids("h2d", "token", order, n=n, s_pages=s_pages, d_pages=d_pages, ps=ps,
                        gen=gen)
    a, b = si.cuda(), di.cuda()
    kw = dict(geometry=geometry, granularity="token", layout="page_first", page_size=ps)
    plan = api.plan_transfer(src, dst, si, b, impl="cuda", **kw)
    p = api._pools(src, dst, geometry, "token", "page_first", ps, None, "cuda")
    ext, moved = p.ext, si.numel() * layers * geo.bytes_per_token
    lim = s_pages * ps
    full = scales.device_block_ids(a, ps, s_pages, lim, ext)
    compact = scales.block_ids(si, ps)[0].cuda()
    width = ps * geo.scale_bytes
    staging = torch.empty((s_pages, layers, width), dtype=torch.uint8, device="cuda")

    def block_pass(ids):
        return lambda: ext.transfer(src, staging, ids, ids, True, True, 1, s_pages, s_pages,
                                    layers, ps * geo.value_bytes, width, False, -1, True,
                                    s_pages, s_pages, 2, False, True, False)

    def values(check):
        args = p.args[:10] + (check, p.s_lim if check else 0, p.d_lim if check else 0)
        return lambda: ext.transfer(src, dst, a, b, *args, 1, False, False, check)

    def ms(fn):
        return _time_ms(fn, reps=9, inner=3)

    real = scales.device_block_ids
    out = [("pinned copy of the payload", moved / (_copy_gbs("h2d", moved, *raw) * 1e6)),
           ("plan default (cpu host ids)", ms(lambda: build.launch(plan))),
           ("plan blocks (sK)", ms(lambda: build.launch(plan, staging="never", scales="blocks"))),
           ("plan v0 one launch", ms(lambda: build.launch(plan, 0, staging="never"))),
           ("plan v23 one launch", ms(lambda: build.launch(plan, 23, staging="never"))),
           ("transfer() new ids (path chosen on the device)",
            ms(_new_ids_each_call(src, dst, a, b, kw)))]
    out.append(("transfer() reused ids (host copy: plan)", ms(lambda: api.transfer(
        src, dst, a, b, impl="cuda", **kw))))
    api.synchronize()
    out += [("  per-call page list, torch ops", ms(lambda: real(a, ps, s_pages, lim))),
            ("  per-call page list, mark_pages", ms(lambda: real(a, ps, s_pages, lim, ext))),
            ("  per-call path choice, choose_path", ms(lambda: scales.device_path(
                ext, a, geo, p.s_shape, a.numel(), ps, lim, blocks=True))),
            (f"  block pass, pool-wide list ({full.numel()})", ms(block_pass(full))),
            (f"  block pass, touched pages ({compact.numel()})", ms(block_pass(compact))),
            ("  values alone, checked", ms(values(True))),
            ("  values alone, unchecked", ms(values(False)))]
    api.synchronize()
    return [(name, t, moved / t / 1e6) for name, t in out], scales.host_page_stats(si, ps)


def main() -> None:
    from .bench import parts_buffers

    raw, gen = parts_buffers()
    for geometry in ("index_k_fp8", "c4_latent"):
        for order in ("sparse", "sparseP"):
            rows, stats = _rows(geometry, order, raw, gen)
            print(f"{geometry} h2d {order}, 32 MB payload (ms; payload GB/s); "
                  f"(touched pages, runs) = {stats}:")
            for name, t, gbs in rows:
                print(f"  {name:44} {t:7.3f} ms  {gbs:6.1f} GB/s")


if __name__ == "__main__":
    main()
