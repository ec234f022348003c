"""Token rows with a scale block (c4_latent, index_k_fp8), moved in two parts: the values by
the kernel as before, the 4-8 B scales apart, so that neither pays for the other's worst case.

- Host to device (`h2d`): every scale block of the host pool goes to a compact device pool
  in one 2D copy-engine transfer, on a side stream while the kernel moves the values by zero
  copy; then a device-to-device pass scatters the scales from that staging pool. Zero copy
  pays one PCIe request per 4-8 B scale, as much as for a 128 B line of values (NOTES.md run
  6: the link serves ~430 M requests/s whatever their size), so fp8 rows ran at half the link.
  The 2D copy moves the whole scale region of the pool (~30-37 GB/s, run 7), so it pays only
  when the transfer names enough rows per pool page: `wants_dma`.
- Host to device, the blocks of the touched pages only (`wants_blocks`, `run_h2d(blocks=)`):
  when a call names several rows in each page it touches but few pages of the pool, a zero-copy
  pass copies the whole scale blocks of those pages (256 B fp8, 512 B c4 per layer, in 128 B
  requests) into the staging pool instead of the 2D copy of all of them. The touched pages are
  read on the host for plans with cpu ids (`block_ids`); for plans with device ids they are
  marked on the device (`device_block_ids`, no synchronisation) and their number estimated as
  for random ids, which touch the most pages for a given count; `transfer()` with device ids
  counts them on the device and chooses its path there (`device_path`, below). Device id
  tensors handed again unchanged are read on the host once and run as a plan with cpu ids
  (kernels.reuse).
- Host to device, ids that come page by page (`page_grouped`): one launch in ORDERED_VARIANT,
  the scales of a page on neighbouring threads already coalesce.
- Device ids of host rows with scales, not read on the host (`device_path`): the path is chosen
  on the device, from the pages the ids touch and their runs of one page, counted as the pages
  are marked (one launch); every alternative is enqueued gated on that choice, and the ones
  not chosen return at once (`PATH_*`, the binding's `transfer_gated`).
- Device to device, fp8 rows from 64 MB and c4 rows from 256 MB (`page_order_ids`,
  `run_page_order`): the scales gathered in source order into a compact scratch pool, then
  scattered from it in destination order, so each pass reads or writes neighbouring 4-8 B slots
  together instead of one 32 B sector per slot (+9 points of the copy for fp8, run 8), the two
  passes on a high-priority side stream beside the value pass (ORDER_OVERLAP, run 14). Plans
  sort once (torch argsorts, kept on the plan). Device ids not read on the host are put in page
  order on the device (`device_page_order`: a counting sort by page in the binding, or cub
  radix sorts of int32 page keys, no argsort; the order inside a page does not matter): once
  for id tensors handed again, kept on the pools (kernels/api.py); per call for new id tensors
  only from NEW_ORDER_MIN_BYTES (off: after the values either sort costs more than page order
  saves, NOTES.md runs 12-13; beside them the radix sort pays on random ids from 256 MB but
  costs sequential ones 14%, run 14). New ids may instead move the values, then the scales
  alone in their own order (`run_split`, from SPLIT_MIN_BYTES; off: slower than one launch,
  run 13).
Device to host is not done this way: the host scale blocks would have to be read, merged and
written back whole, overwriting slots the transfer does not name.
"""

from __future__ import annotations

__all__ = ["wants_dma", "wants_blocks", "wants_page_order", "h2d_path", "device_ids_path",
           "page_grouped",
           "host_page_stats", "run_h2d", "block_ids", "device_block_ids",
           "random_pages", "versions", "page_order_ids", "device_page_order", "run_page_order",
           "wants_split", "run_split", "SPLIT_MIN_BYTES", "SPLIT_VARIANT",
           "SCALE_DMA_BYTES_PER_ROW", "ORDER_OVERLAP", "ORDER_MAX_VALUE_BYTES", "orders",
           "PAGE_ORDER_MIN_BYTES", "WIDE_ORDER_MIN_BYTES", "NEW_ORDER_MIN_BYTES", "ORDER_SORT",
           "BLOCK_MARGIN", "BLOCK_FRACTION",
           "ORDER_SLACK", "ORDERED_VARIANT", "device_path", "PATH_DEFAULT", "PATH_ORDERED",
           "PATH_BLOCKS"]

# A scale request saved per (token, layer) pays for this many bytes of the 2D copy: the link
# serves ~430 M requests/s, the 2D copy of 256-512 B blocks ~33 GB/s (NOTES.md runs 6-7).
SCALE_DMA_BYTES_PER_ROW = 77

# Page order adds two launches: fp8 rows measured 15% slower at 33.6 MB, 12% faster at 134 MB
# and 21% at 537 MB (NOTES.md run 8); the times cross near 64 MB.
PAGE_ORDER_MIN_BYTES = 64 << 20
# Rows of more values than an fp8 row (c4's 576 B) take page order from this size: with the
# scale passes beside the values 4-5% faster than one launch at 256-512 MB, slower below 128
# MB (NOTES.md run 14, H100).
WIDE_ORDER_MIN_BYTES = 256 << 20
# New device id tensors each call of fp8 rows put in page order per call (a sort on the device,
# beside the value pass with the scale passes) from this size; None: never. After the values
# the sort lost at every size (run 13). Beside them the radix sort gained 7% on random ids at
# 256-512 MB, but cost sequential ids 14% (already in page order, they gain nothing from it),
# and the ids' order is not known on the host without a sync (NOTES.md run 14): new ids go in
# one launch.
NEW_ORDER_MIN_BYTES = None
# New device id tensors of fp8 rows device to device from this size (None: never): the values
# alone, then the scales alone between the pools in the ids' order, in SPLIT_VARIANT (no sort;
# a layer-major variant keeps one layer's scale blocks in L2 while they move; NOTES.md run 13).
SPLIT_MIN_BYTES = None
SPLIT_VARIANT = 0
# How the device puts ids in page order: "count" (a counting sort by page: 109 us of device
# time at 1.02 M pairs on the H200, 14-31 us up to 254 K) or "radix" (cub radix sorts of int32
# page keys: 150 us; ~66 us before it sorts anything; NOTES.md run 13). Beside the value pass the
# radix sort's small kernels cost the values less than the counting sort's atomics (run 14).
ORDER_SORT = "count"
# The page-order scale passes beside the value pass, on the high-priority side stream, rather
# than after it (they touch other bytes of dst): fp8 2.6-5.5% faster from 64 MB, c4 from 256 MB
# (NOTES.md run 14).
ORDER_OVERLAP = True
# Page order is for rows with a scale block and at most this many value bytes (fp8 128, c4 576).
ORDER_MAX_VALUE_BYTES = 1024

# The blocks of the touched pages replace one scale request per (row, layer) by one 128 B
# request per 128 B of block (the link counts requests, not bytes: NOTES.md run 6); they pay
# when the rows' requests outnumber the blocks' by this margin (two more launches).
BLOCK_MARGIN = 1.25
# Where the 2D copy of the whole region would do too, the blocks are taken when the pages
# touched are at most this share of the pool (their bytes then clearly fewer).
BLOCK_FRACTION = 0.5
REQUEST_BYTES = 128
# Host ids that come page by page (each touched page's ids together: at most ORDER_SLACK runs
# of one page per page touched) keep the one-launch zero copy in this variant: the 4-8 B scales
# of a page sit on neighbouring threads and coalesce, and it beat the touched blocks by 3-6%
# (48-49 against 46-47 GB/s, NOTES.md run 9, sparseP rows).
ORDER_SLACK = 1.25
ORDERED_VARIANT = 0
# The paths `device_path` chooses between on the device: the direction's default launch, one
# launch in ORDERED_VARIANT (ids page by page), the touched pages' scale blocks (host to device).
PATH_DEFAULT, PATH_ORDERED, PATH_BLOCKS = 0, 1, 2


def wants_page_order(geo, n: int, layers: int, *, per_call: bool = False) -> bool:
    """True for rows with a scale block moving enough bytes to repay the two extra launches of
    the page-order scale passes (device to device): fp8-like rows (values <= 128 B) from
    PAGE_ORDER_MIN_BYTES, wider ones (c4) from WIDE_ORDER_MIN_BYTES; per_call: and the sort
    made for this call alone (new id tensors; fp8-like rows from NEW_ORDER_MIN_BYTES)."""
    if not orders(geo):
        return False
    if geo.value_bytes > 128:           # c4-like rows: plans and ids handed again only
        least = None if per_call else WIDE_ORDER_MIN_BYTES
    else:
        least = NEW_ORDER_MIN_BYTES if per_call else PAGE_ORDER_MIN_BYTES
    return least is not None and n * layers * geo.bytes_per_token >= least


def orders(geo) -> bool:
    """True for rows whose scales may move in page order: a scale block, values of at most
    ORDER_MAX_VALUE_BYTES."""
    return 0 < geo.scale_bytes and geo.value_bytes <= ORDER_MAX_VALUE_BYTES


def wants_split(geo, n: int, layers: int) -> bool:
    """True for fp8-like rows (a scale block, values <= 128 B) moving at least SPLIT_MIN_BYTES:
    new device ids then move the values and the scales in two passes, unsorted (`run_split`)."""
    return (SPLIT_MIN_BYTES is not None and 0 < geo.scale_bytes and geo.value_bytes <= 128
            and n * layers * geo.bytes_per_token >= SPLIT_MIN_BYTES)


def wants_dma(geo, host_shape, n: int, page_size: int) -> bool:
    """True when staging the host pool's scale region costs less than n rows' scale requests."""
    if geo.scale_bytes == 0 or n == 0:
        return False
    region = host_shape.num_pages * host_shape.num_layers * page_size * geo.scale_bytes
    return region <= SCALE_DMA_BYTES_PER_ROW * n * host_shape.num_layers


def wants_blocks(geo, touched: float, n: int, page_size: int) -> bool:
    """True when copying the whole scale blocks of `touched` host pages (by zero copy, 128 B
    requests) takes fewer link requests than the n rows' own scales, by BLOCK_MARGIN."""
    if geo.scale_bytes == 0 or n == 0:
        return False
    return n >= BLOCK_MARGIN * touched * (page_size * geo.scale_bytes / REQUEST_BYTES)


def page_grouped(touched: int, runs: int) -> bool:
    """True when host ids touching `touched` pages come in at most ORDER_SLACK runs per page."""
    return touched > 0 and runs <= ORDER_SLACK * touched


def h2d_path(geo, host_shape, n: int, page_size: int, touched: float):
    """How the scales of n host-to-device token rows touching `touched` host pages move:
    "blocks" (the touched pages' blocks), "h2d" (2D copy of the whole region) or None (with
    the values)."""
    blocks = wants_blocks(geo, touched, n, page_size)
    if blocks and touched <= BLOCK_FRACTION * host_shape.num_pages:
        return "blocks"
    if wants_dma(geo, host_shape, n, page_size):
        return "h2d"
    return "blocks" if blocks else None


def device_ids_path(geo, host_shape, n: int, page_size: int):
    """`h2d_path` for device ids, which are not read: their pages estimated as for random ids,
    and where that estimate says the whole region ("h2d"), the blocks of the pages they touch
    (marked on the device) instead: never more blocks than the region, as fast at full density
    (sK = sD within 1 GB/s on dense random rows in runs 9-11, once 36 against 40 on an unsteady
    link), faster where the ids touch fewer pages (seq rows: sK 48-51 against sD 42-47)."""
    how = h2d_path(geo, host_shape, n, page_size, random_pages(n, host_shape.num_pages))
    return "blocks" if how == "h2d" else how


def device_path(ext, host_ids, geo, host_shape, n: int, page_size: int, limit: int, *,
                blocks: bool):
    """(marks, path, stats) of device ids on the host side of a transfer, made on the device
    with no synchronisation (the binding's `choose_path`): marks as `device_block_ids`; path a
    one-element int32 device tensor: PATH_ORDERED when the ids come page by page
    (`page_grouped` on the pages they touch and their runs), else with `blocks` (host to
    device) PATH_BLOCKS where `wants_blocks` on the pages they touch, or `wants_dma` (the
    whole region would pay: the touched blocks are never more), else PATH_DEFAULT; stats
    (touched, runs, -, path) for tests."""
    need = BLOCK_MARGIN * page_size * geo.scale_bytes / REQUEST_BYTES if blocks else float("inf")
    always = blocks and wants_dma(geo, host_shape, n, page_size)
    return ext.choose_path(host_ids, page_size, host_shape.num_pages, limit, ORDER_SLACK, need,
                           always)


def host_page_stats(host_ids, page_size: int) -> tuple[int, int]:
    """(pages touched, runs of one page) of cpu ids, in their order."""
    import numpy as np

    pages = host_ids.numpy() // page_size
    if pages.size == 0:
        return 0, 0
    return int(np.unique(pages).size), 1 + int(np.count_nonzero(pages[1:] != pages[:-1]))


def random_pages(n: int, pages: int) -> float:
    """Pages touched, on average, by n distinct random ids of a pool of `pages` pages (ids of
    any other order touch no more): what device ids, which are not read, are assumed to do."""
    import math

    return pages * -math.expm1(n * math.log1p(-1 / pages)) if pages > 1 else float(pages)


def block_ids(host_ids, page_size: int):
    """(the pages the cpu ids touch, sorted, and their number)."""
    import torch

    pages = torch.unique(torch.div(host_ids, page_size, rounding_mode="floor"))
    return pages, int(pages.numel())


def device_block_ids(host_ids, page_size: int, pages: int, limit: int, ext=None):
    """Every page id of the pool, -1 for the pages the device ids do not touch (the block
    pass skips them, as it skips bad ids); made on the device with no synchronisation. With
    the extension `ext`: one fill and one launch (`mark_pages`); the ~10 small torch ops
    below cost ~0.15 ms of host time per call (NOTES.md run 10) and stay as its reference."""
    import torch

    if ext is not None:
        return ext.mark_pages(host_ids, page_size, pages, limit)

    ok = (host_ids >= 0) & (host_ids < limit)
    page = torch.where(ok, torch.div(host_ids, page_size, rounding_mode="floor"), pages)
    flags = torch.zeros(pages + 1, dtype=torch.bool, device=host_ids.device)
    flags.index_fill_(0, page, True)      # a scalar fill: no value tensor to upload
    ids = torch.arange(pages, device=host_ids.device)
    return torch.where(flags[:pages], ids, torch.full_like(ids, -1))


def versions(*tensors):
    """torch's in-place version counters of the tensors, the key under which what is derived
    from their values may be kept; None when one is an inference tensor (inference mode
    keeps no counter: nothing derived from it is kept)."""
    if any(t.is_inference() for t in tensors):
        return None
    return tuple(t._version for t in tensors)


def _compact_shape(layout: str, pages: int, layers: int, width: int) -> tuple:
    return (pages, layers, width) if layout == "page_first" else (layers, pages, width)


_SIDE: dict = {}


def _side_stream(dev, priority: bool = False):
    """A side stream of the device; with priority, one of the highest priority, whose blocks
    the hardware dispatches ahead of the ones waiting on the current stream (a short chain of
    small kernels then runs beside a long copy instead of after its last block)."""
    import torch

    key = (dev, priority)
    if key not in _SIDE:
        _SIDE[key] = torch.cuda.Stream(device=dev, priority=-1 if priority else 0)
    return _SIDE[key]


def run_h2d(ext, src, dst, si, di, args: tuple, *, overlap: bool = True, blocks=None,
            gate=None) -> int:
    """A host-to-device token transfer in parts. args: the binding's 13 arguments after the
    ids (kernels.api._Pools.args; variant and checks included). blocks: page ids of the host
    pool (-1 to skip), or a function making them, whose scale blocks a zero-copy pass stages
    instead of the 2D copy of all. overlap: the staging (and the making of its ids) on a side
    stream while the values move, so no kernel boundary leaves the link idle. gate: the path
    tensor of `device_path`; every launch then runs only where it says PATH_BLOCKS (blocks
    given as a tensor). Returns the value pass's sequence number (its checks report for the
    call; the scale passes only skip bad ids)."""
    import functools

    import torch

    if gate is not None:
        ext = _Gated(ext, functools.partial(ext.transfer_gated, gate, PATH_BLOCKS))

    token, pf, ps, s_pages, d_pages, layers, vb, sb = args[:8]
    width, row = ps * sb, ps * (vb + sb)
    dev = dst.device
    cur = torch.cuda.current_stream(dev)
    staging = torch.empty(_compact_shape("page_first" if pf else "layer_first", s_pages, layers,
                                         width), dtype=torch.uint8, device=dev)
    stage = lambda: _stage(ext, src, staging, blocks, args, (width, row))  # noqa: E731
    if overlap:
        # The values are enqueued first: a device list made per call (`device_block_ids`,
        # ~0.17 ms of host time for ~10 small ops, NOTES.md run 10) then delays only the
        # scale side, not the link's first request.
        ready = cur.record_event()    # earlier writes of the host pool, the ids, the staging
        seq = ext.transfer(src, dst, si, di, *args, 1, False, False, True)
        side = _side_stream(dev)
        side.wait_event(ready)
        with torch.cuda.stream(side):
            stage()
        cur.wait_stream(side)         # the staging pool is freed on `cur` after this point
    else:
        stage()
        seq = ext.transfer(src, dst, si, di, *args, 1, False, False, True)
    ext.transfer(staging, dst, si, di, *args[:9], -1, *args[10:], 2, True, False, False)
    return seq


class _Gated:
    """The extension with `transfer` replaced by its gated form (run_h2d's `gate`)."""

    def __init__(self, ext, transfer):
        self.transfer, self.copy_2d = transfer, ext.copy_2d


def _stage(ext, src, staging, blocks, args: tuple, sizes: tuple) -> None:
    """The host scale blocks into the staging pool, on the current stream: all of them by one
    2D copy (blocks None), or those of the listed pages by zero copy."""
    token, pf, ps, s_pages, d_pages, layers, vb, sb = args[:8]
    width, row = sizes
    if blocks is None:
        # Host pools of both layouts keep their P * L rows `row` bytes apart in storage
        # order, and the compact pool keeps the same order: one 2D copy takes every block.
        ext.copy_2d(src, ps * vb, row, staging, 0, width, width, s_pages * layers)
        return
    # Each (page, layer) block as the one token of a page of size 1 whose scale segment is
    # the whole block: 16 B accesses, a block's chunks on neighbouring threads, one 128 B
    # request per 128 B.
    ids = blocks() if callable(blocks) else blocks
    ext.transfer(src, staging, ids, ids, token, pf, 1, s_pages, s_pages, layers, ps * vb, width,
                 False, -1, True, s_pages, s_pages, 2, False, True, False)


def page_order_ids(si, di, page_size: int, limits: tuple | None = None):
    """(gather src ids, gather scratch ids, scatter scratch ids, scatter dst ids, scratch
    pages): scratch slot k holds the scales of the k-th pair in source order. With limits
    (src, dst: ids unchecked so far), a pair with either id out of range gets -1 in both
    scale passes, which then skip it as the value pass does; no synchronisation."""
    import torch

    n = si.numel()
    by_src = torch.argsort(si)
    slot = torch.empty_like(by_src)
    slot[by_src] = torch.arange(n, device=si.device)
    by_dst = torch.argsort(di)
    g_src, s_dst = si[by_src], di[by_dst]
    if limits is not None:
        ok = (si >= 0) & (si < limits[0]) & (di >= 0) & (di < limits[1])
        g_src = torch.where(ok[by_src], g_src, -1)
        s_dst = torch.where(ok[by_dst], s_dst, -1)
    return (g_src.contiguous(), torch.arange(n, device=si.device), slot[by_dst].contiguous(),
            s_dst.contiguous(), (n + page_size - 1) // page_size)


def device_page_order(ext, si, di, page_size: int, pages: tuple, limits: tuple, *,
                      sort: str | None = None):
    """`page_order_ids` made by the binding, no synchronisation, for device ids si, di of pools
    of `pages` (src, dst) pages; pairs with an id outside `limits` get -1 in both scale passes.
    sort (ORDER_SORT by default): "radix", two cub radix sorts of int32 page keys over the
    bits the page count needs (stable: inside a page, the ids' order); "count", a counting sort
    by page (atomics: any order inside a page, which groups a page's scales as well). The
    lists are rows of one tensor."""
    make = ext.page_order_radix if (sort or ORDER_SORT) == "radix" else ext.page_order
    _, g_src, g_slot, s_slot, s_dst = make(si, di, page_size, pages[0], pages[1], limits[0],
                                           limits[1])
    return g_src, g_slot, s_slot, s_dst, (si.numel() + page_size - 1) // page_size


def run_page_order(ext, src, dst, si, di, args: tuple, ids, *, overlap: bool | None = None) -> int:
    """A device-to-device token transfer in parts: values as they come, scales through a
    compact scratch pool in source order, then destination order (ids: `page_order_ids`, or
    a function making them, called on a side stream while the values move). args: the
    binding's 13 arguments after the ids. overlap (ORDER_OVERLAP by default): the two scale
    passes on the high-priority side stream beside the value pass (they touch other bytes of
    dst), not after it. Returns the value pass's sequence number; with checks on, the scale
    passes skip the ids out of range (the value pass reports them)."""
    import torch

    overlap = ORDER_OVERLAP if overlap is None else overlap
    if not (overlap or callable(ids)):
        seq = ext.transfer(src, dst, si, di, *args, 1, False, False, True)
        _scale_passes(ext, src, dst, args, ids)
        return seq
    # The side stream's work first: with high priority its small kernels are dispatched beside
    # the value pass's blocks, not after the last of them.
    cur = torch.cuda.current_stream(dst.device)
    ready = cur.record_event()    # the ids written, earlier users of the side stream's lists
    side = _side_stream(dst.device, priority=True)
    side.wait_event(ready)
    with torch.cuda.stream(side):
        if callable(ids):
            ids = ids()
        if overlap:
            _scale_passes(ext, src, dst, args, ids)   # its scratch is allocated on `side`
    seq = ext.transfer(src, dst, si, di, *args, 1, False, False, True)
    if not overlap:
        ids[0].record_stream(cur)     # the lists are read on `cur`: not reused before that
    cur.wait_stream(side)
    if not overlap:
        _scale_passes(ext, src, dst, args, ids)
    return seq


def _scale_passes(ext, src, dst, args: tuple, ids) -> None:
    """The scales of a page-order transfer, on the current stream: gathered into a compact
    scratch pool in source-page order, then scattered in destination-page order."""
    import torch

    token, pf, ps, s_pages, d_pages, layers, vb, sb = args[:8]
    check, s_lim, d_lim = args[10:13]
    g_src, g_slot, s_slot, s_dst, pages = ids
    scratch = torch.empty(_compact_shape("page_first" if pf else "layer_first", pages, layers,
                                         ps * sb), dtype=torch.uint8, device=dst.device)
    head, mid = (token, pf, ps), (layers, vb, sb, False, -1, check)
    slots = pages * ps
    ext.transfer(src, scratch, g_src, g_slot, *head, s_pages, pages, *mid,
                 s_lim if check else 0, slots if check else 0, 2, False, True, False)
    ext.transfer(scratch, dst, s_slot, s_dst, *head, pages, d_pages, *mid,
                 slots if check else 0, d_lim if check else 0, 2, True, False, False)


def run_split(ext, src, dst, si, di, args: tuple) -> int:
    """A device-to-device token transfer in two passes, no sort: the values (checked, reported),
    then the scales alone straight between the pools in the ids' order, in SPLIT_VARIANT. args:
    the binding's 13 arguments after the ids. Returns the value pass's sequence number; with
    checks on, the scale pass skips the ids it reports."""
    seq = ext.transfer(src, dst, si, di, *args, 1, False, False, True)
    ext.transfer(src, dst, si, di, *args[:9], SPLIT_VARIANT, *args[10:], 2, False, False, False)
    return seq
