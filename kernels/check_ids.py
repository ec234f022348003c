"""`wb kernel check` on the device ids that `transfer()` checks in the kernel: bad ids reported
after the call with only the valid rows moved, and ids handed again, which run unchecked from a
host copy once it has landed and passed the host checks (kernels.reuse). GPU only; the cases
land in the report of kernels.check.
"""

from __future__ import annotations

from .cases import index_set, make_pool
from .check import CaseResult, CheckReport, _patched, _Runner, _same_ids
from .geometry import GEOMETRIES, LAYOUTS

__all__ = ["reuse_cases", "device_checked_cases"]


def reuse_cases(r: _Runner, report: CheckReport, progress):
    """transfer() handed the same device ids four times, synchronised between calls: from the
    third call they run as a plan made from their host copy (kernels.reuse), unchecked, on the
    plan's default path; host pages in runs take the staged DMA path there (forced at this
    size). A case passes when every call is byte-exact and the last ones took that path."""
    from . import api, staged

    for geometry in GEOMETRIES:
        for layout in LAYOUTS:
            for direction, kind in (("d2d", "large"), ("d2h", "aligned"), ("d2h", "large"),
                                    ("h2d", "aligned"), ("h2d", "large")):
                if progress:
                    progress(f"reused ids {geometry} {layout} {direction} {kind}")
                src = make_pool(geometry, layout, 40, 3, 64, gen=r.gen)
                si, di = index_set(kind, granularity="token", src_pages=40, dst_pages=32,
                                   page_size=64, gen=r.gen)
                kw = dict(geometry=geometry, granularity="token", layout=layout, page_size=64)
                d0 = make_pool(geometry, layout, 32, 3, 64, gen=r.gen)
                s_t = src.cuda() if direction != "h2d" else src.clone().pin_memory()
                d_t = d0.clone().pin_memory() if direction == "d2h" else d0.cuda()
                with _patched(staged, MIN_DMA_BYTES=0):
                    bad, compared = _same_ids(r, src, s_t, d_t, si, di, si.cuda(), di.cuda(), kw,
                                              (d0, d0 ^ 0x5A, d0 ^ 0xFF, d0))
                p = api._pools(s_t, d_t, geometry, "token", layout, 64, None, "cuda")
                took = _reused_state(p) == "valid"
                report.cases.append(CaseResult(
                    "transfer", f"{geometry} {layout} token {direction} {kind} n={si.numel()} "
                    f"transfer() same ids x4 (host copy, unchecked)", bad == 0 and took, bad,
                    compared, "" if took else f"reused ids: {_reused_state(p)}"))


def _reused_state(p) -> str:
    """Where the pools' reused-ids record stands: none, copying, valid or bad."""
    rec = p.known[2] if p.known is not None else None
    return "none" if rec is None else rec.state


def device_checked_cases(r: _Runner, report: CheckReport):
    """Device ids with bad data: transfer() returns without a sync, the kernel copies only the
    valid pairs (nothing outside the pools), `synchronize()` raises a KernelError naming the
    id, and the next call then runs normally."""
    import torch

    import itertools

    from . import api, scales, transfer
    from .reference import reference_transfer
    from workbench.errors import KernelError

    g, lay, ps = "index_k_fp8", "page_first", 64
    src = make_pool(g, lay, 8, 2, ps, gen=r.gen)
    dst0 = make_pool(g, lay, 6, 2, ps, gen=r.gen)
    kw = dict(geometry=g, layout=lay, page_size=ps)
    cases = [  # name, granularity, src ids, dst ids, fragment of the error, pairs that move
        ("src id out of range", "token", [1, 2, 8 * ps, 9], [4, 5, 6, 7], "outside [0, 512)", [0, 1, 3]),
        ("negative dst id", "token", [1, 2, 3], [4, -1, 6], "= -1", [0, 2]),
        ("page id out of range", "page", [0, 1], [6, 2], "outside [0, 6)", [1]),
        ("duplicate destinations", "token", [1, 2, 3], [4, 5, 4], "already written", None),
    ]
    # d2d: one checked launch; h2d-dma: values checked, scales from a staging pool (for device
    # ids the blocks of the marked pages, where a plan would copy the whole region)
    # (h2d-blocks: from the touched pages' blocks, which skip the pages of bad ids)
    # skipping the same ids; d2d-order: the same id tensors a second time (scales in page order)
    # h2d-again: the same host ids three times (copied to the host on the second call, found
    # bad there on the third: checked again)
    # *-reuse: the same tensors with valid ids three times (the third unchecked, from their host
    # copy), then changed in place to the bad ids: checked again, twice
    # d2d-sort, d2d-count: new id tensors, page order sorted on the device for the call by the
    # radix sort or the counting sort (bad pairs -1); d2d-split: the values, then the scales
    # in the ids' order (the scale pass skips the bad ids); d2d-order-after, d2d-count-after: as
    # d2d-order and d2d-count with the scale passes after the value pass, not beside it
    # h2d-grouped, d2h-grouped, h2d-default, d2h-default: the path chosen on the device forced
    # to one launch as for ids page by page, or to the default launch
    modes = ("d2d", "h2d-dma", "d2d-order", "d2d-sort", "d2d-count", "d2d-split", "d2d-order-after",
             "d2d-count-after", "h2d-blocks",
             "h2d-again",
             "d2d-reuse", "d2h-reuse", "h2d-reuse", "h2d-grouped", "d2h-grouped", "h2d-default",
             "d2h-default")
    for (name, gran, s_ids, d_ids, fragment, keep), mode in itertools.product(cases, modes):
        si, di = torch.tensor(s_ids), torch.tensor(d_ids)
        d = dst0.clone().pin_memory() if mode.startswith("d2h") else dst0.cuda()
        src_d = src.clone().pin_memory() if mode.startswith("h2d") else src.cuda()
        a, b = si.cuda(), di.cuda()
        notes, oks = [], []
        if mode.endswith("reuse"):
            unchecked = _valid_then_changed(src_d, d, a, b, dict(granularity=gran, **kw))
            oks.append(unchecked)
            notes.append("" if unchecked else "valid ids were not run unchecked")
        forced = dict(SCALE_DMA_BYTES_PER_ROW=1 << 40, PAGE_ORDER_MIN_BYTES=0, WIDE_ORDER_MIN_BYTES=0,
                      ORDER_SLACK=0)
        if mode == "h2d-blocks":
            forced.update(BLOCK_MARGIN=0, BLOCK_FRACTION=2)
        if mode.endswith("grouped"):
            forced.update(ORDER_SLACK=1e9)
        if mode.endswith("default"):
            forced.update(BLOCK_MARGIN=1e9, SCALE_DMA_BYTES_PER_ROW=0)
        if mode in ("d2d-sort", "d2d-count", "d2d-count-after"):
            forced.update(NEW_ORDER_MIN_BYTES=0,
                          ORDER_SORT="radix" if mode == "d2d-sort" else "count")
        if mode.endswith("after"):
            forced.update(ORDER_OVERLAP=False)
        if mode == "d2d-split":
            forced.update(SPLIT_MIN_BYTES=0)
        with _patched(scales, **forced):
            again = {"d2d-order": 2, "d2d-order-after": 2, "h2d-again": 3}
            for _ in range(again.get(mode, 2 if "reuse" in mode else 1)):
                d.copy_(dst0)
                try:
                    transfer(src_d, d, a, b, granularity=gran, impl="cuda", **kw)
                    api.synchronize()
                    notes.append("no error raised")
                    oks.append(False)
                except KernelError as exc:
                    notes.append(f"KernelError: {exc.message}")
                    oks.append(fragment in exc.message)
        ok, note = all(oks), "; ".join(notes)
        got = d.cpu()
        wants = []
        for pairs in ([keep] if keep is not None else [[0, 1], [1, 2]]):
            want = dst0.clone()
            reference_transfer(src, want, si[pairs], di[pairs], geometry=GEOMETRIES[g],
                               granularity=gran, layout=lay, page_size=ps)
            wants.append(want)
        # A duplicated destination holds bytes of either source (the copies race chunk by chunk).
        ok = ok and bool(torch.stack([got == w for w in wants]).any(0).all())
        # The next call is not blamed for the last one's error.
        transfer(src_d, d, torch.tensor([7]).cuda(), torch.tensor([8]).cuda(), granularity="token",
                 impl="cuda", **kw)
        api.synchronize()
        report.cases.append(CaseResult("device-checked", f"{name} ({mode})", ok, 0, 0, note))


def _valid_then_changed(src_d, d, a, b, kw) -> bool:
    """Device id tensors a, b given valid ids of their length, handed to transfer() three
    times (synchronised: the third runs from their host copy, unchecked), then given their
    bad ids back in place. True when the third call ran unchecked."""
    import torch

    from . import api, transfer

    bad_a, bad_b = a.clone(), b.clone()
    n = a.numel()
    a.copy_(torch.arange(n, device=a.device))
    b.copy_(torch.arange(n, 2 * n, device=b.device))
    for _ in range(3):
        transfer(src_d, d, a, b, impl="cuda", **kw)
        api.synchronize()
    p = api._pools(src_d, d, kw["geometry"], kw["granularity"], kw["layout"], kw["page_size"],
                   None, "cuda")
    unchecked = _reused_state(p) == "valid"
    a.copy_(bad_a)
    b.copy_(bad_b)
    return unchecked
