"""The staged host path's plan (DMA runs + id remapping), executed with cpu byte copies.

The GPU runs the same plan with copy engines and the kernel; here the runs are applied by
slicing and the device stage by the reference, which checks the offsets and the remapping.
"""

import pytest

from wb_kernels import GEOMETRIES
from wb_kernels.api import plan_transfer
from wb_kernels.cases import index_set, make_pool, poison
from wb_kernels import staged as staged_mod
from wb_kernels.staged import plan_staged

from kernel_kit import reference_transfer, torch


def _apply_runs(src, dst, runs):
    fs, fd = src.reshape(-1), dst.view(-1)
    for so, do, n in runs.tolist():
        fd[do:do + n] = fs[so:so + n]


@pytest.mark.parametrize("geometry", list(GEOMETRIES))
@pytest.mark.parametrize("layout", ["page_first", "layer_first"])
@pytest.mark.parametrize("h2d", [True, False])
@pytest.mark.parametrize("gran,kind", [("page", "aligned"), ("page", "large"),
                                       ("token", "aligned"), ("token", "partial")])
def test_staged_plan_moves_the_same_bytes(geometry, layout, h2d, gran, kind, monkeypatch):
    monkeypatch.setattr(staged_mod, "CHUNK_BYTES", staged_mod.CHUNK_BYTES)
    gen = torch.Generator().manual_seed(7)
    ps, L, sp_, dp_ = 16, 2, 12, 10
    src = make_pool(geometry, layout, sp_, L, ps, gen=gen)
    si, di = index_set(kind, granularity=gran, src_pages=sp_, dst_pages=dp_, page_size=ps,
                       gen=gen)
    shape = list(src.shape)
    shape[0 if layout == "page_first" else 1] = dp_
    dst0 = poison(tuple(shape), gen)
    geo = GEOMETRIES[geometry]
    want = dst0.clone()
    reference_transfer(src, want, si, di, geometry=geo, granularity=gran, layout=layout,
                       page_size=ps)
    plan = plan_transfer(src, dst0.clone(), si, di, geometry=geometry, granularity=gran,
                         layout=layout, page_size=ps, impl="reference")
    real_dst = plan.dst
    if h2d:
        plan.dst = torch.empty(0, device="meta")       # stands for the device pool
    else:
        plan.src = torch.empty(0, device="meta")
    staged_mod.CHUNK_BYTES = 3 * L * geo.page_bytes(ps)   # several chunks even here
    sp = plan_staged(plan, force=True)
    if sp is None:   # no host page fully written: nothing may be staged
        assert not h2d and kind == "partial"
        return
    staging = torch.zeros(sp.staging_shape, dtype=torch.uint8)
    kw = dict(geometry=geo, granularity=gran, layout=layout, page_size=ps)
    if sp.rest is not None:   # the zero-copy share
        reference_transfer(src, real_dst, sp.rest[0], sp.rest[1], **kw)
    assert sum(b - a for _, a, b in sp.chunks) == sp.host_ids.numel()
    for runs, a, b in sp.chunks:
        if h2d:
            _apply_runs(src, staging, runs)
            reference_transfer(staging, real_dst, sp.host_ids[a:b], sp.other_ids[a:b], **kw)
        else:
            reference_transfer(src, staging, sp.other_ids[a:b], sp.host_ids[a:b], **kw)
            _apply_runs(staging, real_dst, runs)
    assert torch.equal(real_dst, want)
    assert sp.touched >= sp.payload
    if not h2d and kind == "partial":
        assert sp.rest is not None      # partly covered host pages are never staged


def test_half_covered_pages_split_between_dma_and_zero_copy():
    gen = torch.Generator().manual_seed(2)
    src = make_pool("c4_latent", "page_first", 8, 2, 16, gen=gen)
    dst0 = poison(tuple(make_pool("c4_latent", "page_first", 8, 2, 16, gen=gen).shape), gen)
    si = torch.cat([torch.arange(16, 48), torch.tensor([70, 71, 90])])  # 2 full pages + 3
    di = torch.randperm(8 * 16, generator=gen)[:si.numel()]
    # device -> host: destinations are the host side here
    plan = plan_transfer(src, dst0.clone(), di, si, geometry="c4_latent", granularity="token",
                         layout="page_first", page_size=16, impl="reference")
    plan.src = torch.empty(0, device="meta")
    sp = plan_staged(plan, force=True)
    assert sp.staged_pages == 2 and sp.host_ids.numel() == 32
    assert sp.rest is not None and sorted(sp.rest[1].tolist()) == [70, 71, 90]


def test_auto_refuses_small_runs_and_overfetch():
    gen = torch.Generator().manual_seed(1)
    src = make_pool("index_k_bf16", "page_first", 40, 2, 64, gen=gen)
    dst = make_pool("index_k_bf16", "page_first", 40, 2, 64, gen=gen)
    # Partial pages fetch unneeded slots: zero-copy is better.
    si, di = index_set("partial", granularity="token", src_pages=40, dst_pages=40, page_size=64,
                       gen=gen)
    plan = plan_transfer(src, dst, si, di, geometry="index_k_bf16", granularity="token",
                         layout="page_first", impl="reference")
    plan.dst = torch.empty(0, device="meta")
    assert plan_staged(plan) is None
    # 400 consecutive whole pages (25.6 MB): long runs, staged in chunks.
    big_src = make_pool("index_k_bf16", "page_first", 400, 2, 64, gen=gen)
    big_dst = make_pool("index_k_bf16", "page_first", 400, 2, 64, gen=gen)
    ids = torch.arange(400)
    plan = plan_transfer(big_src, big_dst, ids, torch.randperm(400, generator=gen),
                         geometry="index_k_bf16", granularity="page", layout="page_first",
                         impl="reference")
    plan.dst = torch.empty(0, device="meta")
    sp = plan_staged(plan)
    assert sp is not None and sp.rest is None
    runs = torch.cat([r for r, _, _ in sp.chunks])
    assert int(runs[:, 2].sum()) == 400 * 2 * 64 * 256
    assert runs.shape[0] == len(sp.chunks)     # consecutive pages: one run per chunk
    # The same pages in random order: 32 KiB runs, below MIN_DMA_BYTES.
    plan = plan_transfer(big_src, big_dst, torch.randperm(400, generator=gen)[:50],
                         torch.arange(50), geometry="index_k_bf16", granularity="page",
                         layout="page_first", impl="reference")
    plan.dst = torch.empty(0, device="meta")
    assert plan_staged(plan) is None
