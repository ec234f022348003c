"""The CUDA kernel against the reference, on a GPU (skipped elsewhere)."""

import pytest

from wb_kernels import GEOMETRIES, transfer
from wb_kernels.cases import index_set, make_pool, poison
from workbench.errors import KernelError

from kernel_kit import reference_transfer, torch

pytestmark = pytest.mark.gpu


def _place(t, where):
    return t.cuda() if where == "dev" else t.clone().pin_memory()


@pytest.mark.parametrize("geometry", list(GEOMETRIES))
@pytest.mark.parametrize("layout", ["page_first", "layer_first"])
@pytest.mark.parametrize("direction", ["d2d", "d2h", "h2d"])
@pytest.mark.parametrize("gran,kind,stride", [("token", "partial", None),
                                              ("token", "scattered", None),
                                              ("page", "aligned", None),
                                              ("token", "partial", "c4_latent"),
                                              ("token", "scattered", "index_k_bf16")])
def test_cuda_matches_reference(geometry, layout, direction, gran, kind, stride):
    if stride == geometry:
        pytest.skip("same geometry")
    gen = torch.Generator().manual_seed(hash((geometry, layout, direction, kind)) % 1000)
    src = make_pool(geometry, layout, 20, 2, 64, gen=gen)
    si, di = index_set(kind, granularity=gran, src_pages=20, dst_pages=16, page_size=64, gen=gen)
    shape = list(src.shape)
    shape[0 if layout == "page_first" else 1] = 16
    dst0 = poison(tuple(shape), gen)
    kw = dict(geometry=geometry, granularity=gran, layout=layout, page_size=64)
    want = dst0.clone()
    reference_transfer(src, want, si, di, geometry=GEOMETRIES[geometry], granularity=gran,
                       layout=layout, page_size=64,
                       stride_geometry=GEOMETRIES[stride] if stride else None)
    s_where, d_where = {"d2d": ("dev", "dev"), "d2h": ("dev", "host"),
                        "h2d": ("host", "dev")}[direction]
    s, d = _place(src, s_where), _place(dst0, d_where)
    transfer(s, d, si.cuda(), di, impl="cuda", stride_geometry=stride, **kw)
    torch.cuda.synchronize()
    assert torch.equal(d.cpu(), want)


def test_unpinned_host_pool_is_rejected():
    gen = torch.Generator().manual_seed(0)
    src = make_pool("index_k_bf16", "page_first", 4, 2, 64, gen=gen).cuda()
    dst = make_pool("index_k_bf16", "page_first", 4, 2, 64, gen=gen)
    before = dst.clone()
    with pytest.raises(KernelError, match="not pinned"):
        transfer(src, dst, torch.tensor([1]), torch.tensor([2]), geometry="index_k_bf16",
                 granularity="token", layout="page_first", impl="cuda")
    assert torch.equal(dst, before)


def test_buggy_mode_stays_inside_dst_on_the_device():
    gen = torch.Generator().manual_seed(1)
    src = make_pool("index_k_bf16", "page_first", 6, 2, 64, gen=gen).cuda()
    row, guard = 64 * 256, 4096
    big = poison((guard + 5 * 2 * row + guard,), gen).cuda()
    before = big.clone()
    dst = big[guard:guard + 5 * 2 * row].view(5, 2, row)
    si = torch.arange(6 * 64 - 100, 6 * 64)
    di = torch.randperm(5 * 64, generator=gen)[:100]
    want = before[guard:guard + 5 * 2 * row].view(5, 2, row).cpu().clone()
    reference_transfer(src.cpu(), want, si, di, geometry=GEOMETRIES["index_k_bf16"],
                       granularity="token", layout="page_first", page_size=64,
                       stride_geometry=GEOMETRIES["c4_latent"])
    transfer(src, dst, si, di, geometry="index_k_bf16", granularity="token",
             layout="page_first", stride_geometry="c4_latent", impl="cuda")
    torch.cuda.synchronize()
    assert torch.equal(big[:guard], before[:guard]) and torch.equal(big[-guard:], before[-guard:])
    assert torch.equal(dst.cpu(), want)


def test_geometry_arms_on_the_kernel():
    from wb_kernels.experiment import run_geometry_arm

    off = run_geometry_arm(geometry_fix=False, seed=4, tokens=4096)
    on = run_geometry_arm(geometry_fix=True, seed=4, tokens=4096)
    assert off["impl"] == on["impl"] == "cuda"
    assert off["corrupted_tokens"] > 0 and off["mismatch_bytes"] > 0
    assert on["corrupted_tokens"] == 0 and on["mismatch_bytes"] == 0
    ref = run_geometry_arm(geometry_fix=False, seed=4, tokens=4096, impl="reference")
    assert {k: off[k] for k in ("corrupted_tokens", "mismatch_bytes")} == \
        {k: ref[k] for k in ("corrupted_tokens", "mismatch_bytes")}


def _fp8_pools(gen):
    src = make_pool("index_k_fp8", "page_first", 8, 2, 64, gen=gen)
    dst = make_pool("index_k_fp8", "page_first", 6, 2, 64, gen=gen)
    return src, dst


KW = dict(geometry="index_k_fp8", granularity="token", layout="page_first", impl="cuda")


def test_device_ids_take_no_host_synchronisation():
    from wb_kernels import api

    gen = torch.Generator().manual_seed(5)
    src, dst = (t.cuda() for t in _fp8_pools(gen))
    si, di = torch.tensor([1, 2, 3]).cuda(), torch.tensor([4, 5, 6]).cuda()
    si2, di2 = torch.tensor([7, 8]).cuda(), torch.tensor([9, 10]).cuda()
    transfer(src, dst, si, di, **KW)      # first call: pools validated, stamps allocated
    api.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(3):
            transfer(src, dst, si, di, **KW)
            transfer(src, dst, si2, di2, **KW)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    api.synchronize()


@pytest.mark.parametrize("s_ids,d_ids,fragment,moved", [
    ([1, 2, 8 * 64, 9], [4, 5, 6, 7], "src_idx[2] = 512, outside [0, 512)", [0, 1, 3]),
    ([1, 2, 3], [4, -1, 6], "dst_idx[1] = -1", [0, 2]),
    ([1, 2, 3], [4, 6 * 64, 6], "outside [0, 384)", [0, 2]),
])
def test_bad_device_ids_are_reported_after_and_only_valid_rows_move(s_ids, d_ids, fragment, moved):
    from wb_kernels import api

    gen = torch.Generator().manual_seed(6)
    src, dst0 = _fp8_pools(gen)
    si, di = torch.tensor(s_ids), torch.tensor(d_ids)
    want = dst0.clone()
    reference_transfer(src, want, si[moved], di[moved], geometry=GEOMETRIES["index_k_fp8"],
                       granularity="token", layout="page_first", page_size=64)
    for where in ("dev", "host"):
        d = _place(dst0, where)
        transfer(src.cuda(), d, si.cuda(), di.cuda(), **KW)
        with pytest.raises(KernelError) as err:
            api.synchronize()
        assert fragment in err.value.message
        assert torch.equal(d.cpu(), want)
        api.synchronize()                 # reported once: nothing pending now


def test_duplicate_device_destinations_are_reported():
    from wb_kernels import api

    gen = torch.Generator().manual_seed(7)
    src, dst = (t.cuda() for t in _fp8_pools(gen))
    transfer(src, dst, torch.tensor([1, 2, 3]).cuda(), torch.tensor([4, 5, 4]).cuda(), **KW)
    with pytest.raises(KernelError, match=r"dst_idx\[[02]\] = 4 names a destination already"):
        api.synchronize()
    for _ in range(300):                  # generations wrap at 255: no false duplicates
        transfer(src, dst, torch.tensor([1, 2]).cuda(), torch.tensor([4, 5]).cuda(), **KW)
    api.synchronize()


def test_a_pending_error_stops_the_next_call():
    from wb_kernels import api

    gen = torch.Generator().manual_seed(8)
    src, dst = (t.cuda() for t in _fp8_pools(gen))
    transfer(src, dst, torch.tensor([1]).cuda(), torch.tensor([-5]).cuda(), **KW)
    torch.cuda.synchronize()
    before = dst.clone()
    with pytest.raises(KernelError, match="dst_idx"):
        transfer(src, dst, torch.tensor([1]).cuda(), torch.tensor([2]).cuda(), **KW)
    torch.cuda.synchronize()
    assert torch.equal(dst, before)
    transfer(src, dst, torch.tensor([1]).cuda(), torch.tensor([2]).cuda(), **KW)
    api.synchronize()


@pytest.mark.parametrize("n", [1, 31, 33, 95])
@pytest.mark.parametrize("direction", ["d2d", "d2h", "h2d"])
def test_tiled_variant_copies_a_partial_last_tile(n, direction):
    """Variant 23 pads the item space to tiles of 32 pairs: the padding must move nothing."""
    from wb_kernels import api, build

    gen = torch.Generator().manual_seed(n)
    geometry = "index_k_fp8"
    src = make_pool(geometry, "page_first", 8, 3, 64, gen=gen)
    si, di = index_set("scattered", granularity="token", src_pages=8, dst_pages=6, page_size=64,
                       gen=gen, count=n)
    dst0 = poison((6, 3, src.shape[2]), gen)
    want = dst0.clone()
    reference_transfer(src, want, si, di, geometry=GEOMETRIES[geometry], granularity="token",
                       layout="page_first", page_size=64)
    s_where, d_where = {"d2d": ("dev", "dev"), "d2h": ("dev", "host"),
                        "h2d": ("host", "dev")}[direction]
    s, d = _place(src, s_where), _place(dst0, d_where)
    plan = api.plan_transfer(s, d, si, di, geometry=geometry, granularity="token",
                             layout="page_first", impl="cuda")
    build.launch(plan, 23, staging="never")
    torch.cuda.synchronize()
    assert torch.equal(d.cpu(), want)


def _force_scale_dma(monkeypatch):
    """Every transfer() takes the scale paths: the 2D copy and (same ids again) page order."""
    from wb_kernels import scales

    monkeypatch.setattr(scales, "SCALE_DMA_BYTES_PER_ROW", 1 << 40)
    monkeypatch.setattr(scales, "PAGE_ORDER_MIN_BYTES", 0)
    monkeypatch.setattr(scales, "WIDE_ORDER_MIN_BYTES", 0)


def _force_blocks(monkeypatch):
    """Every host-to-device transfer() with scales takes the touched pages' blocks."""
    from wb_kernels import scales

    monkeypatch.setattr(scales, "BLOCK_MARGIN", 0)
    monkeypatch.setattr(scales, "BLOCK_FRACTION", 2)


@pytest.mark.parametrize("geometry", ["c4_latent", "index_k_fp8"])
@pytest.mark.parametrize("layout", ["page_first", "layer_first"])
@pytest.mark.parametrize("path", ["always", "serial", "transfer", "blocks", "blocks-device-ids",
                                  "transfer-blocks"])
def test_host_scales_through_a_2d_copy_match_the_reference(geometry, layout, path, monkeypatch):
    """Host to device, the scales apart: the host pool's scale blocks go to a device staging
    pool in one 2D copy (on a side stream, or in line), or only the blocks of the pages the
    ids touch by zero copy (cpu ids read on the host, device ids marked on the device); the
    values by zero copy."""
    from wb_kernels import api, build

    gen = torch.Generator().manual_seed(11)
    src = make_pool(geometry, layout, 12, 3, 64, gen=gen)
    si, di = index_set("scattered", granularity="token", src_pages=12, dst_pages=10,
                       page_size=64, gen=gen)
    shape = list(src.shape)
    shape[0 if layout == "page_first" else 1] = 10
    dst0 = poison(tuple(shape), gen)
    want = dst0.clone()
    kw = dict(geometry=geometry, granularity="token", layout=layout, page_size=64)
    reference_transfer(src, want, si, di, geometry=GEOMETRIES[geometry], granularity="token",
                       layout=layout, page_size=64)
    s, d = src.clone().pin_memory(), dst0.cuda()
    if path.startswith("transfer"):
        if path == "transfer":
            _force_scale_dma(monkeypatch)
        else:
            _force_blocks(monkeypatch)
        transfer(s, d, si.cuda(), di.cuda(), impl="cuda", **kw)
        api.synchronize()
    else:
        on_dev = path == "blocks-device-ids"
        plan = api.plan_transfer(s, d, si.cuda() if on_dev else si, di, impl="cuda", **kw)
        build.launch(plan, staging="never", scales="blocks" if on_dev else path)
        torch.cuda.synchronize()
    assert torch.equal(d.cpu(), want)


@pytest.mark.parametrize("geometry", ["c4_latent", "index_k_fp8"])
@pytest.mark.parametrize("layout", ["page_first", "layer_first"])
@pytest.mark.parametrize("beside", [False, True])
def test_scales_in_page_order_match_the_reference(geometry, layout, beside, monkeypatch):
    """Device to device, the scales through a scratch pool in source then destination order:
    on a plan, and through transfer() handed the same id tensors again (second call on); the
    scale passes beside the values (the default) or after them."""
    from wb_kernels import api, build, scales

    _force_scale_dma(monkeypatch)
    monkeypatch.setattr(scales, "ORDER_OVERLAP", beside)

    gen = torch.Generator().manual_seed(12)
    src = make_pool(geometry, layout, 12, 3, 64, gen=gen).cuda()
    si, di = index_set("large", granularity="token", src_pages=12, dst_pages=10, page_size=64,
                       gen=gen)
    shape = list(src.shape)
    shape[0 if layout == "page_first" else 1] = 10
    kw = dict(geometry=geometry, granularity="token", layout=layout, page_size=64)
    d = poison(tuple(shape), gen).cuda()
    a, b = si.cuda(), di.cuda()
    plan = api.plan_transfer(src, d, a, b, impl="cuda", **kw)
    for call in range(3):
        dst0 = poison(tuple(shape), gen)
        want = dst0.clone()
        reference_transfer(src.cpu(), want, si, di, geometry=GEOMETRIES[geometry],
                           granularity="token", layout=layout, page_size=64)
        d.copy_(dst0)
        if call == 0:
            build.launch(plan, scales="always")
        else:
            transfer(src, d, a, b, impl="cuda", **kw)
        api.synchronize()
        assert torch.equal(d.cpu(), want), call


def test_scales_apart_take_no_host_synchronisation(monkeypatch):
    from wb_kernels import api, scales

    _force_scale_dma(monkeypatch)
    gen = torch.Generator().manual_seed(13)
    src, dst = _fp8_pools(gen)
    host, dev_a, dev_b = src.pin_memory(), dst.cuda(), dst.cuda().clone()
    si, di = torch.tensor([1, 2, 3, 70]).cuda(), torch.tensor([4, 5, 6, 90]).cuda()
    d2d_src = src.cuda()
    transfer(host, dev_a, si, di, **KW)     # first calls: pools validated, streams made
    transfer(d2d_src, dev_b, si, di, **KW)
    api.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(3):
            transfer(host, dev_a, si, di, **KW)          # 2D copy of the host scales
        for _ in range(3):
            transfer(d2d_src, dev_b, si, di, **KW)       # page order from the second call
        monkeypatch.setattr(scales, "NEW_ORDER_MIN_BYTES", 0)
        for _ in range(3):                               # new ids: sorted on the device per call
            transfer(d2d_src, dev_b, si.clone(), di.clone(), **KW)
        _force_blocks(monkeypatch)
        for _ in range(3):
            transfer(host, dev_a, si, di, **KW)          # the touched pages' blocks
    finally:
        torch.cuda.set_sync_debug_mode("default")
    api.synchronize()


@pytest.mark.parametrize("path", ["h2d", "d2d-again", "h2d-blocks", "d2d-new", "d2d-split",
                                  "h2d-grouped", "h2d-default", "d2d-again-after", "d2d-new-after"])
def test_scale_passes_skip_the_bad_ids_the_value_pass_reports(path, monkeypatch):
    from wb_kernels import api, scales

    _force_scale_dma(monkeypatch)
    if path == "h2d-blocks":
        _force_blocks(monkeypatch)
    if path.startswith("d2d-new"):  # new id tensors: page order sorted on the device per call
        monkeypatch.setattr(scales, "NEW_ORDER_MIN_BYTES", 0)
    if path.endswith("after"):      # the scale passes after the value pass, not beside it
        monkeypatch.setattr(scales, "ORDER_OVERLAP", False)
    path = path.removesuffix("-after")
    if path == "d2d-split":    # new id tensors: values, then the scales in the ids' order
        monkeypatch.setattr(scales, "SPLIT_MIN_BYTES", 0)
    # the path chosen on the device: one launch (ids page by page) or the default launch
    monkeypatch.setattr(scales, "ORDER_SLACK", 1e9 if path == "h2d-grouped" else 0)
    if path == "h2d-default":
        monkeypatch.setattr(scales, "BLOCK_MARGIN", 1e9)
        monkeypatch.setattr(scales, "SCALE_DMA_BYTES_PER_ROW", 0)
    gen = torch.Generator().manual_seed(14)
    src, dst0 = _fp8_pools(gen)
    si, di = torch.tensor([1, 2, 8 * 64, 9, 3]), torch.tensor([4, 5, 6, 7, -2])
    want = dst0.clone()
    reference_transfer(src, want, si[[0, 1, 3]], di[[0, 1, 3]],
                       geometry=GEOMETRIES["index_k_fp8"], granularity="token",
                       layout="page_first", page_size=64)
    s = src.clone().pin_memory() if path.startswith("h2d") else src.cuda()
    d = dst0.cuda()
    a, b = si.cuda(), di.cuda()
    for _ in range(2 if path in ("d2d-again", "d2d-new") else 1):
        d.copy_(dst0)
        if path == "d2d-new":
            a, b = a.clone(), b.clone()
        transfer(s, d, a, b, **KW)
        with pytest.raises(KernelError, match=r"src_idx\[2\] = 512"):
            api.synchronize()
        assert torch.equal(d.cpu(), want)


@pytest.mark.parametrize("direction", ["h2d", "d2h", "d2d"])
def test_a_plan_uploads_its_cpu_ids_once(direction):
    """run_plan on a plan with cpu ids: the first launch uploads them, the next ones take no
    host synchronisation (a pageable upload per launch waited for the stream); ids changed in
    place go again."""
    from wb_kernels import api

    gen = torch.Generator().manual_seed(21)
    src, dst0 = _fp8_pools(gen)
    s_where, d_where = {"h2d": ("host", "dev"), "d2h": ("dev", "host"),
                        "d2d": ("dev", "dev")}[direction]
    s, d = _place(src, s_where), _place(dst0, d_where)
    si = torch.randperm(8 * 64, generator=gen)[:300]
    di = torch.randperm(6 * 64, generator=gen)[:300]
    # the device side's ids on the device, the host side's on the cpu (as the bench's plans)
    a = si if s_where == "host" else si.cuda()
    b = di.cuda() if direction == "h2d" else di
    plan = api.plan_transfer(s, d, a, b, **KW)
    api.run_plan(plan)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for _ in range(3):
            api.run_plan(plan)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    torch.cuda.synchronize()
    if b.device.type == "cpu":
        b.copy_(torch.randperm(6 * 64, generator=gen)[:300])   # in place: a new version
        d.copy_(_place(dst0, d_where))
        api.run_plan(plan)
        torch.cuda.synchronize()
        want = dst0.clone()
        reference_transfer(src, want, si, b, geometry=GEOMETRIES["index_k_fp8"],
                           granularity="token", layout="page_first", page_size=64)
        assert torch.equal(d.cpu(), want)


def test_inference_mode_ids_are_not_kept_across_calls(monkeypatch):
    """Inference tensors keep no version counter: a plan built from them uploads its cpu ids
    each launch, and transfer() gives them no page order (nothing derived is kept); both copy
    right, also after the ids change in place."""
    from wb_kernels import api, scales

    monkeypatch.setattr(scales, "PAGE_ORDER_MIN_BYTES", 0)
    gen = torch.Generator().manual_seed(22)
    src, dst0 = _fp8_pools(gen)
    with torch.inference_mode():
        si = torch.randperm(8 * 64, generator=gen)[:200]
        di = torch.randperm(6 * 64, generator=gen)[:200]
        s_dev, di_dev = src.cuda(), di.cuda()
        for step in range(2):
            want = dst0.clone()
            reference_transfer(src, want, si, di, geometry=GEOMETRIES["index_k_fp8"],
                               granularity="token", layout="page_first", page_size=64)
            d = dst0.cuda()
            plan = api.plan_transfer(src.clone().pin_memory(), d, si, di_dev, **KW)
            api.run_plan(plan)
            api.run_plan(plan)
            torch.cuda.synchronize()
            assert torch.equal(d.cpu(), want), step
            d.copy_(dst0)
            si_dev = si.cuda()
            for _ in range(2):
                transfer(s_dev, d, si_dev, di_dev, **KW)
            api.synchronize()
            assert torch.equal(d.cpu(), want), step
            si[:] = torch.randperm(8 * 64, generator=gen)[:200]     # in place


@pytest.mark.parametrize("geometry", ["c4_latent", "index_k_fp8"])
@pytest.mark.parametrize("order", ["by-page", "shuffled"])
def test_reused_host_ids_choose_their_path_from_their_pages(geometry, order, monkeypatch):
    """transfer() handed the same device ids of host rows again: once read on the host
    (kernels.reuse) their exact pages and order choose the path as a plan's cpu ids do: page by
    page one launch, shuffled the touched pages' blocks (forced at this size). Every call
    byte-exact; ids changed in place are read again."""
    from wb_kernels import api, build

    _force_blocks(monkeypatch)
    gen = torch.Generator().manual_seed(21)
    src = make_pool(geometry, "page_first", 12, 3, 64, gen=gen)
    pages = torch.tensor([1, 4, 5, 9])
    si = (pages[:, None] * 64 + torch.rand(4, 64, generator=gen).argsort(1)[:, :20]).reshape(-1)
    if order == "shuffled":
        si = si[torch.randperm(si.numel(), generator=gen)]
    di = torch.randperm(10 * 64, generator=gen)[:si.numel()]
    dst0 = poison((10, 3, src.shape[2]), gen)
    kw = dict(geometry=geometry, granularity="token", layout="page_first", page_size=64)
    host, d = src.clone().pin_memory(), dst0.cuda()
    a, b = si.cuda(), di.cuda()
    for call in range(6):
        if call == 3:       # in place: a new version, checked and read again
            a[:2] = a[:2].flip(0).clone()
            si[:2] = si[:2].flip(0).clone()
        want = dst0.clone()
        reference_transfer(src, want, si, di, geometry=GEOMETRIES[geometry],
                           granularity="token", layout="page_first", page_size=64)
        d.copy_(dst0)
        transfer(host, d, a, b, impl="cuda", **kw)
        api.synchronize()
        assert torch.equal(d.cpu(), want), f"call {call}"
    rec = _reused_record(api, host, d, geometry)
    assert rec.state == "valid" and torch.equal(rec.plan().src_idx, si)
    assert build._h2d_scale_path(rec.plan(), "auto") == (
        "ordered" if order == "by-page" else "blocks")


def _reused_record(api, s, d, geometry, gran="token"):
    p = api._pools(s, d, geometry, gran, "page_first", 64, None, "cuda")
    return p.known[2] if p.known is not None else None


@pytest.mark.parametrize("geometry", ["index_k_fp8", "c4_latent", "index_k_bf16"])
@pytest.mark.parametrize("direction", ["d2h", "h2d", "d2d"])
def test_reused_device_ids_run_as_a_plan_from_their_host_copy(geometry, direction, monkeypatch):
    """The same device id tensors handed again: from the second call copied to the host (no
    synchronisation), from the first call after that landed launched as the validated plan,
    unchecked; host pages in runs then take the staged DMA path (forced at this size). Every
    call byte-exact, none after the first synchronises."""
    from wb_kernels import api, staged

    monkeypatch.setattr(staged, "MIN_DMA_BYTES", 0)
    runs = []
    real = staged.run_staged
    monkeypatch.setattr(staged, "run_staged", lambda *a, **k: (runs.append(1), real(*a, **k)))
    gen = torch.Generator().manual_seed(31)
    src = make_pool(geometry, "page_first", 12, 3, 64, gen=gen)
    host_ids = torch.arange(2 * 64, 6 * 64)           # four whole host pages in a run
    dev_ids = torch.randperm(10 * 64, generator=gen)[:host_ids.numel()]
    si, di = (dev_ids, host_ids) if direction == "d2h" else (host_ids, dev_ids)
    dst0 = poison((10, 3, src.shape[2]), gen)
    kw = dict(geometry=geometry, granularity="token", layout="page_first", page_size=64)
    s = src.clone().pin_memory() if direction == "h2d" else src.cuda()
    d = dst0.clone().pin_memory() if direction == "d2h" else dst0.cuda()
    a, b = si.cuda(), di.cuda()
    want = dst0.clone()
    reference_transfer(src, want, si, di, geometry=GEOMETRIES[geometry], granularity="token",
                       layout="page_first", page_size=64)
    for call in range(5):
        d.copy_(dst0)
        torch.cuda.synchronize()
        if call >= 1:
            torch.cuda.set_sync_debug_mode("error")
        try:
            transfer(s, d, a, b, impl="cuda", **kw)
        finally:
            torch.cuda.set_sync_debug_mode("default")
        api.synchronize()
        assert torch.equal(d.cpu(), want), f"call {call}"
    rec = _reused_record(api, s, d, geometry)
    assert rec is not None and rec.state == "valid"
    assert (len(runs) >= 3) == (direction != "d2d")


@pytest.mark.parametrize("direction", ["d2d", "d2h"])
def test_reused_ids_changed_in_place_are_checked_again(direction):
    """Valid ids reused until they run unchecked, then changed in place to a bad id: the next
    calls are checked on the device again, report it, and move only the valid rows."""
    from wb_kernels import api

    gen = torch.Generator().manual_seed(32)
    src, dst0 = _fp8_pools(gen)
    s = src.cuda()
    d = dst0.clone().pin_memory() if direction == "d2h" else dst0.cuda()
    a, b = torch.tensor([1, 2, 3, 9]).cuda(), torch.tensor([4, 5, 6, 7]).cuda()
    for _ in range(3):
        transfer(s, d, a, b, **KW)
        api.synchronize()
    assert _reused_record(api, s, d, "index_k_fp8").state == "valid"
    a[2] = 8 * 64 + 1                                  # in place: a new version
    want = dst0.clone()
    keep = [0, 1, 3]
    reference_transfer(src, want, torch.tensor([1, 2, 3, 9])[keep], torch.tensor([4, 5, 6, 7])[keep],
                       geometry=GEOMETRIES["index_k_fp8"], granularity="token",
                       layout="page_first", page_size=64)
    for _ in range(3):                                 # checked, copied to the host, found bad
        d.copy_(dst0)
        transfer(s, d, a, b, **KW)
        with pytest.raises(KernelError, match=r"src_idx\[2\] = 513"):
            api.synchronize()
        assert torch.equal(d.cpu(), want)
    assert _reused_record(api, s, d, "index_k_fp8").state == "bad"


def test_marked_pages_match_the_torch_list():
    """The binding's one-launch page marks (new device ids of host rows) equal the torch ops
    they replace, bad ids marking nothing."""
    from wb_kernels import build, scales

    gen = torch.Generator().manual_seed(33)
    ids = torch.cat([torch.randperm(40 * 64, generator=gen)[:500],
                     torch.tensor([-1, -64, 40 * 64, 40 * 64 + 70])]).cuda()
    for pages in (40, 41):
        want = scales.device_block_ids(ids, 64, pages, 40 * 64)
        got = scales.device_block_ids(ids, 64, pages, 40 * 64, build.load())
        assert torch.equal(got, want)
    assert build.load().mark_pages(ids[:0], 64, 3, 3 * 64).tolist() == [-1, -1, -1]


@pytest.mark.parametrize("sort", ["radix", "count"])
def test_device_page_order_groups_pages_and_keeps_every_pair(sort):
    """The binding's sorts (new device ids, fp8 rows d2d): the gather list by source page, the
    scatter list by destination page, each pair once through the scratch slots, and pairs with
    a bad id last with -1 on both sides."""
    from wb_kernels import build, scales

    gen = torch.Generator().manual_seed(34)
    n, ps = 3000, 64
    si = torch.randperm(80 * ps, generator=gen)[:n]
    di = torch.randperm(60 * ps, generator=gen)[:n]
    si[[5, 17]] = torch.tensor([80 * ps, -3])
    di[[17, 40]] = torch.tensor([-1, 60 * ps + 2])
    g_src, g_slot, s_slot, s_dst, pages = scales.device_page_order(
        build.load(), si.cuda(), di.cuda(), ps, (80, 60), (80 * ps, 60 * ps), sort=sort)
    g_src, g_slot, s_slot, s_dst = (t.cpu() for t in (g_src, g_slot, s_slot, s_dst))
    assert pages == (n + ps - 1) // ps and torch.equal(g_slot, torch.arange(n))
    bad = 3                                            # pairs 5, 17 and 40
    assert (g_src[-bad:] == -1).all() and (s_dst[-bad:] == -1).all()
    for ids in (g_src[:-bad], s_dst[:-bad]):
        pg = torch.div(ids, ps, rounding_mode="floor")
        assert (pg[1:] >= pg[:-1]).all()               # grouped by page, pages ascending
    ok = torch.ones(n, dtype=torch.bool)
    ok[[5, 17, 40]] = False
    got = sorted(zip(g_src[s_slot].tolist(), s_dst.tolist()))
    want = sorted(zip(torch.where(ok, si, -1).tolist(), torch.where(ok, di, -1).tolist()))
    assert got == want
    assert sorted(s_slot.tolist()) == list(range(n))


@pytest.mark.parametrize("pages", [(80, 60), (1 << 16, 3), (5, (1 << 17) + 9)])
def test_radix_page_order_is_a_stable_sort_by_page(pages):
    """The radix sort's lists are those of a stable argsort of the pages on each side (pairs
    with a bad id last, in their order): its key bits follow each pool's page count, 16 and 17
    bits included."""
    from wb_kernels import build, scales

    gen = torch.Generator().manual_seed(37)
    n, ps = 5000, 4
    si = torch.randint(0, pages[0] * ps, (n,), generator=gen)
    di = torch.randint(0, pages[1] * ps, (n,), generator=gen)
    si[[3, 9]] = torch.tensor([-5, pages[0] * ps])
    di[[9, 11]] = torch.tensor([pages[1] * ps + 1, -1])
    got = scales.device_page_order(build.load(), si.cuda(), di.cuda(), ps, pages,
                                   (pages[0] * ps, pages[1] * ps), sort="radix")
    ok = torch.ones(n, dtype=torch.bool)
    ok[[3, 9, 11]] = False
    ks = torch.where(ok, torch.div(si, ps, rounding_mode="floor"), pages[0])
    kd = torch.where(ok, torch.div(di, ps, rounding_mode="floor"), pages[1])
    by_src, by_dst = torch.sort(ks, stable=True).indices, torch.sort(kd, stable=True).indices
    slot = torch.empty_like(by_src)
    slot[by_src] = torch.arange(n)
    want = (torch.where(ok, si, -1)[by_src], torch.arange(n), slot[by_dst],
            torch.where(ok, di, -1)[by_dst])
    for x, y in zip(got[:4], want):
        assert torch.equal(x.cpu(), y)


@pytest.mark.parametrize("sort", ["radix", "count", "split"])
@pytest.mark.parametrize("layout", ["page_first", "layer_first"])
def test_new_ids_each_call_match_the_reference(layout, sort, monkeypatch):
    """transfer() with new device id tensors each call, fp8 rows d2d: page order sorted on the
    device per call by either sort, or the values then the scales in the ids' order (the gates
    forced open at this size)."""
    from wb_kernels import scales

    if sort == "split":         # no sort: the values, then the scales in the ids' order
        monkeypatch.setattr(scales, "SPLIT_MIN_BYTES", 0)
    else:
        monkeypatch.setattr(scales, "NEW_ORDER_MIN_BYTES", 0)
        monkeypatch.setattr(scales, "ORDER_SORT", sort)
    gen = torch.Generator().manual_seed(35)
    kw = dict(geometry="index_k_fp8", granularity="token", layout=layout, page_size=64)
    src = make_pool("index_k_fp8", layout, 12, 3, 64, gen=gen)
    shape = list(src.shape)
    shape[0 if layout == "page_first" else 1] = 10
    s_dev = src.cuda()
    for call in range(3):
        si, di = index_set("large", granularity="token", src_pages=12, dst_pages=10,
                           page_size=64, gen=gen)
        dst0 = poison(tuple(shape), gen)
        want = dst0.clone()
        reference_transfer(src, want, si, di, geometry=GEOMETRIES["index_k_fp8"],
                           granularity="token", layout=layout, page_size=64)
        d = dst0.cuda()
        transfer(s_dev, d, si.cuda(), di.cuda(), impl="cuda", **kw)
        torch.cuda.synchronize()
        assert torch.equal(d.cpu(), want), call


@pytest.mark.parametrize("geometry", ["c4_latent", "index_k_fp8"])
def test_the_device_chooses_the_path_of_new_host_ids(geometry):
    """device_path counts the touched pages and runs as host_page_stats does on the host (bad
    ids left out) and chooses: page by page -> one launch; shuffled, several rows per touched
    page -> the touched blocks; shuffled, two rows per page -> the default launch;
    device to host (no blocks) the default."""
    from wb_kernels import build, scales
    from wb_kernels.geometry import PoolShape

    geo, ps, pages = GEOMETRIES[geometry], 64, 400
    shape = PoolShape.of((pages, 4, geo.page_bytes(ps)), "page_first")
    gen = torch.Generator().manual_seed(36)
    by_page = (torch.randperm(pages, generator=gen)[:20, None] * ps
               + torch.arange(32)[None, :]).reshape(-1)
    dense = by_page[torch.randperm(by_page.numel(), generator=gen)]
    thin = (torch.arange(100)[:, None] * ps + torch.arange(2)[None, :]).reshape(-1)
    thin = thin[torch.randperm(thin.numel(), generator=gen)]     # 2 rows a page, shuffled
    cases = [(by_page, True, scales.PATH_ORDERED), (dense, True, scales.PATH_BLOCKS),
             (thin, True, scales.PATH_DEFAULT), (dense, False, scales.PATH_DEFAULT)]
    for ids, blocks, want in cases:
        ids = torch.cat([ids, torch.tensor([-1, pages * ps])])    # bad ids count nothing
        _, path, stats = scales.device_path(build.load(), ids.cuda(), geo, shape, ids.numel(),
                                            ps, pages * ps, blocks=blocks)
        touched, runs = scales.host_page_stats(ids[:-2], ps)
        assert stats.cpu().tolist()[:2] == [touched, runs]
        assert int(path.item()) == want, (blocks, stats.cpu().tolist())


@pytest.mark.parametrize("geometry", ["c4_latent", "index_k_fp8"])
@pytest.mark.parametrize("direction", ["h2d", "d2h"])
@pytest.mark.parametrize("path", ["grouped", "blocks", "default"])
def test_new_host_ids_on_each_device_chosen_path_match_the_reference(geometry, direction, path,
                                                                     monkeypatch):
    """transfer() with new device ids of host rows with scales, each path the device can
    choose forced by the constants (device to host has no blocks path)."""
    from wb_kernels import scales

    if direction == "d2h" and path == "blocks":
        pytest.skip("no blocks path device to host")
    monkeypatch.setattr(scales, "ORDER_SLACK", 1e9 if path == "grouped" else 0)
    monkeypatch.setattr(scales, "BLOCK_MARGIN", 0 if path == "blocks" else 1e9)
    monkeypatch.setattr(scales, "SCALE_DMA_BYTES_PER_ROW", 0)
    gen = torch.Generator().manual_seed(37)
    src = make_pool(geometry, "page_first", 12, 3, 64, gen=gen)
    dst0 = poison((10, 3, src.shape[2]), gen)
    si, di = index_set("scattered", granularity="token", src_pages=12, dst_pages=10,
                       page_size=64, gen=gen)
    want = dst0.clone()
    reference_transfer(src, want, si, di, geometry=GEOMETRIES[geometry], granularity="token",
                       layout="page_first", page_size=64)
    s = src.clone().pin_memory() if direction == "h2d" else src.cuda()
    d = dst0.clone().pin_memory() if direction == "d2h" else dst0.cuda()
    transfer(s, d, si.cuda(), di.cuda(), impl="cuda", geometry=geometry, granularity="token",
             layout="page_first", page_size=64)
    torch.cuda.synchronize()
    assert torch.equal(d.cpu(), want)
