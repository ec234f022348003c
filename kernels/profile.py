"""Workload for Nsight Compute: one launch per configuration, in a fixed order, so that the
profiler's rows (one per kernel launch, in launch order) line up with `CONFIGS`.

    ncu --clock-control none --metrics ... -k regex:"transfer_kernel|fused_kernel|split_kernel" \\
        python3 -m kernels.profile --names names.txt

Random ids on both sides, device to device, 256 MB moved out of 768 MB pools (density 1/3,
as in the bench), except where a name says otherwise.
"""

from __future__ import annotations

import argparse

# (name, geometry, granularity, page_size, layout, order, variant or -1 for the default,
#  checked: through transfer() with device ids, i.e. with the kernel's id checks)
CONFIGS = [
    ("bf16 token rand default (v23)", "index_k_bf16", "token", 64, "page_first", "rand", -1, False),
    ("bf16 token rand default, checked", "index_k_bf16", "token", 64, "page_first", "rand", -1, True),
    ("bf16 token rand v16", "index_k_bf16", "token", 64, "page_first", "rand", 16, False),
    ("bf16 token rand v24", "index_k_bf16", "token", 64, "page_first", "rand", 24, False),
    ("bf16 token seq-dst default", "index_k_bf16", "token", 64, "page_first", "seq", -1, False),
    ("c4 token rand default (v18)", "c4_latent", "token", 64, "page_first", "rand", -1, False),
    ("c4 token rand v1", "c4_latent", "token", 64, "page_first", "rand", 1, False),
    ("c4 token seq-dst default", "c4_latent", "token", 64, "page_first", "seq", -1, False),
    ("fp8 token rand default (v0)", "index_k_fp8", "token", 64, "page_first", "rand", -1, False),
    ("fp8 token rand v17", "index_k_fp8", "token", 64, "page_first", "rand", 17, False),
    ("fp8 token seq-dst default", "index_k_fp8", "token", 64, "page_first", "seq", -1, False),
    ("random 256 B rows (bf16 pages ps=1, v18)", "index_k_bf16", "page", 1, "layer_first", "rand", 18, False),
    ("random 1 KiB rows (bf16 pages ps=4, v18)", "index_k_bf16", "page", 4, "layer_first", "rand", 18, False),
    ("random 16 KiB rows (bf16 pages ps=64, v18)", "index_k_bf16", "page", 64, "layer_first", "rand", 18, False),
    ("random 16 KiB rows (bf16 pages ps=64, v13)", "index_k_bf16", "page", 64, "layer_first", "rand", 13, False),
]


def main(argv=None) -> None:
    import torch

    from . import api, build, transfer
    from .bench import _bench_ids, _pools_for

    ap = argparse.ArgumentParser()
    ap.add_argument("--names", help="write the configuration names here, one a line")
    ap.add_argument("--pool-mb", type=int, default=768)
    ap.add_argument("--moved-mb", type=int, default=256)
    args = ap.parse_args(argv)
    layers = 4
    raw = (torch.empty(args.pool_mb << 20, dtype=torch.uint8, device="cuda").random_(0, 256),
           torch.empty(args.pool_mb << 20, dtype=torch.uint8, device="cuda"),
           torch.empty(1, dtype=torch.uint8))
    gen = torch.Generator().manual_seed(0)
    build.load()
    names = []
    for name, g, gran, ps, layout, order, variant, checked in CONFIGS:
        src, dst, s_pages, d_pages = _pools_for(g, layout, "d2d", raw, layers, ps)
        from .geometry import GEOMETRIES

        geo = GEOMETRIES[g]
        unit = geo.bytes_per_token if gran == "token" else geo.page_bytes(ps)
        si, di = _bench_ids("d2d", gran, order, n=(args.moved_mb << 20) // (unit * layers),
                            s_pages=s_pages, d_pages=d_pages, ps=ps, gen=gen)
        si, di = si.cuda(), di.cuda()
        kw = dict(geometry=g, granularity=gran, layout=layout, page_size=ps)
        if checked:
            transfer(src, dst, si, di, impl="cuda", **kw)
        else:
            build.launch(api.plan_transfer(src, dst, si, di, impl="cuda", **kw), variant,
                         staging="never")
        api.synchronize()
        names.append(f"{name}: {si.numel() * layers * unit / 1e6:.1f} MB payload")
    if args.names:
        with open(args.names, "w") as f:
            f.write("\n".join(names) + "\n")
    print("\n".join(names))


if __name__ == "__main__":
    main()
