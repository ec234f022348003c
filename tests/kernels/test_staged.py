"""The staged host path's plan (DMA runs + id remapping), executed with cpu byte copies.

The GPU runs the same plan with copy engines and the kernel; here the runs are applied by
slicing and the device stage by the reference, which checks the offsets and the remapping.
"""

import pytest
import torch

from kernels import GEOMETRIES
from kernels.api import plan_transfer
from kernels.cases import index_set, make_pool, poison
from kernels.reference import reference_transfer
from kernels.staged import plan_staged


def _apply_runs(src, dst, runs):
    fs, fd = src.reshape(-1), dst.view(-1)
    for so, do, n in runs.tolist():
        fd[do:do + n] = fs[so:so + n]


@pytest.mark.parametrize("geometry", list(GEOMETRIES))
@pytest.mark.parametrize("layout", ["page_first", "layer_first"])
@pytest.mark.parametrize("h2d", [True, False])
@pytest.mark.parametrize("gran,kind", [("page", "aligned"), ("page", "large"),
                                       ("token", "aligned"), ("token", "partial")])
def test_staged_plan_moves_the_same_bytes(geometry, layout, h2d, gran, kind):
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
    sp = plan_staged(plan, force=True)
    if sp is None:   # only refused when a host row would be partly overwritten
        assert not h2d and kind == "partial"
        return
    staging = torch.zeros(sp.staging_shape, dtype=torch.uint8)
    if h2d:
        _apply_runs(src, staging, sp.runs)
        reference_transfer(staging, real_dst, sp.host_side_ids, di, geometry=geo,
                           granularity=gran, layout=layout, page_size=ps)
    else:
        reference_transfer(src, staging, si, sp.host_side_ids, geometry=geo, granularity=gran,
                           layout=layout, page_size=ps)
        _apply_runs(staging, real_dst, sp.runs)
    assert torch.equal(real_dst, want)
    assert sp.touched >= sp.payload


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
    # 40 consecutive whole pages: one long run, staged.
    ids = torch.arange(40)
    plan = plan_transfer(src, dst, ids, torch.randperm(40, generator=gen), geometry="index_k_bf16",
                         granularity="page", layout="page_first", impl="reference")
    plan.dst = torch.empty(0, device="meta")
    sp = plan_staged(plan)
    assert sp is not None and sp.runs.shape[0] == 1 and sp.runs[0, 2] == 40 * 2 * 64 * 256
