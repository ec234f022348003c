"""Host transfers through the copy engines: whole host rows move by DMA into (or out of) a
compact device staging pool, and the kernel does the device side at device bandwidth.

Zero-copy kernel access to pinned memory tops out a few percent under the pinned-copy
ceiling; the copy engines reach it, but pay a fixed cost per run. So host pages whose rows
the transfer (nearly) covers and that form long runs go through DMA, in chunks pipelined
against the kernel on a side stream; the other ids go zero-copy in the same call. A
device-to-host page is staged only when the transfer writes every byte of its rows, so no
staging byte can overwrite host data the transfer must leave alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["StagedPlan", "plan_staged", "run_staged", "MIN_DMA_BYTES", "MIN_COVERAGE",
           "CHUNK_BYTES"]

# Average DMA run size below which zero-copy wins: the H200 measured ~0.4 us per run in a
# batch against 94-95% for zero-copy (NOTES.md, run 2).
MIN_DMA_BYTES = 512 << 10
# Host-to-device may fetch a page whose rows the transfer covers this much (the rest of the
# row is fetched for nothing).
MIN_COVERAGE = 0.95
# Pipeline granularity: DMA of chunk j overlaps the kernel stage of chunk j-1 (or j+1).
CHUNK_BYTES = 8 << 20


@dataclass
class StagedPlan:
    h2d: bool
    staging_shape: tuple
    staged_pages: int
    host_ids: object          # cpu int64, staged ids remapped into the staging pool
    other_ids: object         # cpu int64, their partners on the device side (same order)
    chunks: list              # (runs cpu int64 [k, 3] (src off, dst off, len), id from, id to)
    rest: tuple | None        # (src ids, dst ids) that go zero-copy, or None
    payload: int
    touched: int
    _dev: dict = field(default_factory=dict)


def _runs(upages, first_rank: int, *, layout: str, L: int, R: int, host_pages: int,
          staged_pages: int, h2d: bool):
    """DMA runs for consecutive host pages `upages` (sorted) whose staging ranks start at
    first_rank: (src offset, dst offset, length) rows."""
    import torch

    k = upages.numel()
    breaks = torch.ones(k, dtype=torch.bool)
    breaks[1:] = upages[1:] != upages[:-1] + 1
    starts = breaks.nonzero().squeeze(1)
    lengths = torch.diff(torch.cat([starts, torch.tensor([k])]))
    first_page = upages[starts]
    ranks = starts + first_rank
    if layout == "page_first":
        host_off, stage_off, size = first_page * (L * R), ranks * (L * R), lengths * (L * R)
    else:
        layers = torch.arange(L)[:, None]
        host_off = ((layers * host_pages + first_page[None, :]) * R).reshape(-1)
        stage_off = ((layers * staged_pages + ranks[None, :]) * R).reshape(-1)
        size = (lengths * R).repeat(L)
    cols = [host_off, stage_off, size] if h2d else [stage_off, host_off, size]
    return torch.stack(cols, 1).contiguous()


def plan_staged(plan, *, force: bool = False) -> StagedPlan | None:
    """The staged form of a validated cuda plan, or None when zero-copy is the better path.

    force: stage every page it is correct to stage, whatever the coverage and run length.
    """
    import torch

    h2d = plan.src.device.type == "cpu"
    if plan.buggy or (plan.src.device.type == "cpu") == (plan.dst.device.type == "cpu"):
        return None
    shape = plan.src_shape if h2d else plan.dst_shape
    unit = plan.geometry.bytes_per_token if plan.granularity == "token" else shape.row_bytes
    if not force and plan.src_idx.numel() * shape.num_layers * unit < MIN_DMA_BYTES:
        return None     # too small for even one run worth a DMA: skip the analysis
    host_ids = (plan.src_idx if h2d else plan.dst_idx).cpu()
    other_ids = (plan.dst_idx if h2d else plan.src_idx).cpu()
    ps, L, R = plan.page_size, shape.num_layers, shape.row_bytes
    token = plan.granularity == "token"
    pages = torch.div(host_ids, ps, rounding_mode="floor") if token else host_ids
    counts = torch.bincount(pages, minlength=shape.num_pages)
    if not token:
        full = counts > 0
    elif h2d:
        full = counts >= (1 if force else max(1, int(MIN_COVERAGE * ps)))
    else:
        full = counts == ps       # every slot of the host page is written
    take = full[pages]            # per id: staged or zero-copy
    upages = full.nonzero().squeeze(1)
    k = int(upages.numel())
    if k == 0:
        return None
    n_staged = int(take.sum())
    payload = n_staged * L * unit
    touched = k * L * R
    runs_all = _runs(upages, 0, layout=shape.layout, L=L, R=R, host_pages=shape.num_pages,
                     staged_pages=k, h2d=h2d)
    if not force and (touched / runs_all.shape[0] < MIN_DMA_BYTES
                      or n_staged < 0.5 * host_ids.numel()):
        return None
    # Staged ids in staging order, so that each chunk's ids are one contiguous slice.
    rank = torch.cumsum(full, 0) - 1
    s_host, s_other, s_pages = host_ids[take], other_ids[take], pages[take]
    s_rank = rank[s_pages]
    if s_rank.numel() > 1 and not bool((s_rank[1:] >= s_rank[:-1]).all()):  # often sorted
        order = torch.argsort(s_rank, stable=True)
        s_rank, s_host, s_other, s_pages = (s_rank[order], s_host[order], s_other[order],
                                            s_pages[order])
    remapped = s_rank * ps + (s_host - s_pages * ps) if token else s_rank
    per_chunk = max(1, CHUNK_BYTES // (L * R))
    chunks = []
    for r0 in range(0, k, per_chunk):
        r1 = min(k, r0 + per_chunk)
        runs = _runs(upages[r0:r1], r0, layout=shape.layout, L=L, R=R,
                     host_pages=shape.num_pages, staged_pages=k, h2d=h2d)
        a, b = torch.searchsorted(s_rank, torch.tensor([r0, r1])).tolist()
        chunks.append((runs, a, b))
    rest = None
    if n_staged < host_ids.numel():
        r_host, r_other = host_ids[~take], other_ids[~take]
        rest = (r_host, r_other) if h2d else (r_other, r_host)
    staging_shape = (k, L, R) if shape.layout == "page_first" else (L, k, R)
    return StagedPlan(h2d, staging_shape, k, remapped, s_other, chunks, rest, payload, touched)


_SIDE: dict = {}


def _side_stream(dev):
    import torch

    if dev not in _SIDE:
        _SIDE[dev] = torch.cuda.Stream(device=dev)
    return _SIDE[dev]


def _device_ids(sp: StagedPlan, dev):
    """All ids of the plan on the device, uploaded once in one pinned copy."""
    import torch

    if "ids" not in sp._dev:
        parts = [sp.host_ids, sp.other_ids] + (list(sp.rest) if sp.rest else [])
        flat = torch.cat(parts).pin_memory().to(dev, non_blocking=True)
        out, at = [], 0
        for p in parts:
            out.append(flat[at:at + p.numel()])
            at += p.numel()
        sp._dev["ids"] = out
    return sp._dev["ids"]


def run_staged(plan, sp: StagedPlan, ext, *, variant: int, dma_mode: int,
               pipelined: bool = True) -> None:
    """DMA chunks on a side stream, kernel stages on the current one, ordered by events; the
    call is complete in the current stream's order, like the zero-copy path."""
    import torch

    dev = plan.device
    cur = torch.cuda.current_stream(dev)
    side = _side_stream(dev) if pipelined else cur
    ids = _device_ids(sp, dev)
    host_ids, other_ids = ids[0], ids[1]
    staging = torch.empty(sp.staging_shape, dtype=torch.uint8, device=dev)
    g = plan.addr
    token, pf = plan.granularity == "token", plan.layout == "page_first"
    L = plan.src_shape.num_layers

    def kernel(src, dst, si, di, s_pages, d_pages):
        ext.transfer(src, dst, si, di, token, pf, plan.page_size, s_pages, d_pages, L,
                     g.value_bytes, g.scale_bytes, False, int(variant), False, 0, 0,
                     0, False, False, True)

    side.wait_stream(cur)      # the staging allocation and earlier work come first
    if sp.rest is not None:   # zero-copy share on `cur`: the first DMA chunk need not wait
        # for it (it touches other host pages and other device rows than the staged ones)
        kernel(plan.src, plan.dst, ids[2], ids[3], plan.src_shape.num_pages,
               plan.dst_shape.num_pages)
    for runs, a, b in sp.chunks:
        if sp.h2d:
            with torch.cuda.stream(side):
                ext.copy_runs(plan.src, staging, runs, dma_mode)
            cur.wait_stream(side)
            kernel(staging, plan.dst, host_ids[a:b], other_ids[a:b], sp.staged_pages,
                   plan.dst_shape.num_pages)
        else:
            kernel(plan.src, staging, other_ids[a:b], host_ids[a:b],
                   plan.src_shape.num_pages, sp.staged_pages)
            side.wait_stream(cur)
            with torch.cuda.stream(side):
                ext.copy_runs(staging, plan.dst, runs, dma_mode)
    cur.wait_stream(side)
    # The staging buffer is freed on `cur`, which now waits for every use of it on `side`.
