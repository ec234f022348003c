"""Where the time of a host-to-device token transfer with the scales apart goes (GPU only):
each part of kernels.scales.run_h2d timed alone on the bench's pools and random ids, then
the parts together, in line and overlapped, against the one-launch zero copy and the pinned
copy of the same payload. `python -m kernels.scale_parts`.
"""

from __future__ import annotations


def _parts(geometry: str, raw, gen, layers: int = 4) -> list[tuple[str, float]]:
    import torch

    from . import api, build
    from .bench import _bench_ids, _copy_gbs, _pools_for, _time_ms
    from .geometry import GEOMETRIES

    geo, ps = GEOMETRIES[geometry], 64
    src, dst, s_pages, d_pages = _pools_for(geometry, "page_first", "h2d", raw, layers)
    n = (128 << 20) // (geo.bytes_per_token * layers)
    si, di = _bench_ids("h2d", "token", "rand", n=n, s_pages=s_pages, d_pages=d_pages, ps=ps,
                        gen=gen)
    a, b = si.cuda(), di.cuda()
    kw = dict(geometry=geometry, granularity="token", layout="page_first", page_size=ps)
    plan = api.plan_transfer(src, dst, si, b, impl="cuda", **kw)
    ext = build.load()
    vb, sb = geo.value_bytes, geo.scale_bytes
    base = (True, True, ps, s_pages, d_pages, layers, vb, sb, False)
    tail = (False, 0, 0)
    staging = torch.empty((s_pages, layers, ps * sb), dtype=torch.uint8, device="cuda")
    row = ps * (vb + sb)
    moved = si.numel() * layers * geo.bytes_per_token
    region = s_pages * layers * ps * sb

    def ms(fn):
        return _time_ms(fn, reps=9, inner=3)

    out = [("pinned copy of the payload", moved / (_copy_gbs("h2d", moved, *raw) * 1e6))]
    out.append(("one launch, zero copy (v23)", ms(lambda: ext.transfer(
        src, dst, a, b, *base, 23, *tail, 0, False, False, True))))
    out.append(("values alone, zero copy (part 1)", ms(lambda: ext.transfer(
        src, dst, a, b, *base, -1, *tail, 1, False, False, True))))
    for v in (16, 24):
        out.append((f"values alone, zero copy, v{v}", ms(lambda: ext.transfer(
            src, dst, a, b, *base, v, *tail, 1, False, False, True))))
    out.append((f"2D copy of the scale region ({region / 1e6:.1f} MB)", ms(lambda: ext.copy_2d(
        src, ps * vb, row, staging, 0, ps * sb, ps * sb, s_pages * layers))))
    out.append(("scales from the staging pool (part 2)", ms(lambda: ext.transfer(
        staging, dst, a, b, *base, -1, *tail, 2, True, False, True))))
    side = torch.cuda.Stream()

    def both_no_scatter():
        cur = torch.cuda.current_stream()
        side.wait_stream(cur)
        with torch.cuda.stream(side):
            ext.copy_2d(src, ps * vb, row, staging, 0, ps * sb, ps * sb, s_pages * layers)
        ext.transfer(src, dst, a, b, *base, -1, *tail, 1, False, False, True)
        cur.wait_stream(side)

    out.append(("values + 2D copy overlapped, no scale pass", ms(both_no_scatter)))
    out.append(("in line (sS)", ms(lambda: build.launch(plan, staging="never",
                                                         scales="serial"))))
    out.append(("overlapped (sD)", ms(lambda: build.launch(plan, staging="never",
                                                            scales="always"))))
    out.append(("transfer() device ids", ms(lambda: api.transfer(src, dst, a, b, impl="cuda",
                                                                  **kw))))
    api.synchronize()
    return [(name, t, moved / t / 1e6) for name, t in out]


def main() -> None:
    from .bench import parts_buffers

    raw, gen = parts_buffers()
    for geometry in ("index_k_fp8", "c4_latent"):
        print(f"{geometry} h2d, random token rows, 128 MB payload (ms; payload GB/s):")
        for name, t, gbs in _parts(geometry, raw, gen):
            print(f"  {name:44} {t:7.3f} ms  {gbs:6.1f} GB/s")


if __name__ == "__main__":
    main()
