"""Host transfers through the copy engines: whole host rows move by DMA into (or out of) a
compact device staging pool, and the kernel does the device side at device bandwidth.

Used when the host side of a transfer covers whole rows in long runs (page granularity, or
token copies of whole pages): the copy engines then reach the pinned-copy ceiling, which
zero-copy kernel access to host memory does not (see NOTES.md). A device-to-host transfer
qualifies only when every byte of each touched host row is written, so no staging byte can
overwrite host data that the transfer must leave alone.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["StagedPlan", "plan_staged", "run_staged", "MIN_DMA_BYTES", "MAX_OVERFETCH"]

# A copy-engine transfer pays a fixed cost per run; below this average run size the
# zero-copy kernel wins (measured on the H200, see NOTES.md).
MIN_DMA_BYTES = 64 << 10
# Host-to-device may fetch whole rows of which a few slots are not needed.
MAX_OVERFETCH = 1.04


@dataclass
class StagedPlan:
    h2d: bool
    runs: object            # cpu int64 [k, 3]: src offset, dst offset, length (bytes)
    staging_shape: tuple
    staged_pages: int
    host_side_ids: object   # cpu int64: host ids remapped into the staging pool
    payload: int
    touched: int


def plan_staged(plan, *, force: bool = False) -> StagedPlan | None:
    """The staged form of a validated cuda plan, or None when zero-copy is the better path."""
    import torch

    h2d = plan.src.device.type == "cpu"
    if plan.buggy or (plan.src.device.type == "cpu") == (plan.dst.device.type == "cpu"):
        return None
    host = plan.src if h2d else plan.dst
    shape = plan.src_shape if h2d else plan.dst_shape
    ids = (plan.src_idx if h2d else plan.dst_idx).cpu()
    ps, L, R = plan.page_size, shape.num_layers, shape.row_bytes
    token = plan.granularity == "token"
    pages = torch.div(ids, ps, rounding_mode="floor") if token else ids
    counts = torch.bincount(pages, minlength=shape.num_pages)
    touched_mask = counts > 0
    upages = touched_mask.nonzero().squeeze(1)
    k = int(upages.numel())
    payload = ids.numel() * L * (plan.geometry.bytes_per_token if token else R)
    touched = k * L * R
    if token and not h2d and not bool((counts[upages] == ps).all()):
        return None     # a host row would be partly overwritten with stale staging bytes
    if touched > payload * MAX_OVERFETCH and not force:
        return None
    # Runs of consecutive host pages map to consecutive staging pages.
    breaks = torch.ones(k, dtype=torch.bool)
    breaks[1:] = upages[1:] != upages[:-1] + 1
    starts = breaks.nonzero().squeeze(1)
    lengths = torch.diff(torch.cat([starts, torch.tensor([k])]))
    first_page = upages[starts]
    if shape.layout == "page_first":
        host_off = first_page * (L * R)
        stage_off = starts * (L * R)
        size = lengths * (L * R)
    else:
        layers = torch.arange(L)[:, None]
        host_off = ((layers * shape.num_pages + first_page[None, :]) * R).reshape(-1)
        stage_off = ((layers * k + starts[None, :]) * R).reshape(-1)
        size = (lengths * R).repeat(L)
    if not force and touched / max(int(size.numel()), 1) < MIN_DMA_BYTES:
        return None
    runs = torch.stack([host_off, stage_off, size], 1) if h2d else torch.stack(
        [stage_off, host_off, size], 1)
    rank = torch.cumsum(touched_mask, 0) - 1
    remapped = rank[pages] * ps + (ids - pages * ps) if token else rank[pages]
    staging_shape = (k, L, R) if shape.layout == "page_first" else (L, k, R)
    del host
    return StagedPlan(h2d, runs.contiguous(), staging_shape, k, remapped, payload, touched)


def run_staged(plan, sp: StagedPlan, ext, *, variant: int, dma_mode: int) -> None:
    """DMA + kernel on the current stream; the staging buffer is stream-ordered scratch."""
    import torch

    from kernels.build import device_indices

    dev = plan.device
    staging = torch.empty(sp.staging_shape, dtype=torch.uint8, device=dev)
    g = plan.addr
    if sp.h2d:
        si, di = device_indices(sp.host_side_ids, plan.dst_idx, dev)
        ext.copy_runs(plan.src, staging, sp.runs, dma_mode)
        ext.transfer(staging, plan.dst, si, di, plan.granularity == "token",
                     plan.layout == "page_first", plan.page_size, sp.staged_pages,
                     plan.dst_shape.num_pages, plan.src_shape.num_layers, g.value_bytes,
                     g.scale_bytes, False, int(variant))
    else:
        si, di = device_indices(plan.src_idx, sp.host_side_ids, dev)
        ext.transfer(plan.src, staging, si, di, plan.granularity == "token",
                     plan.layout == "page_first", plan.page_size, plan.src_shape.num_pages,
                     sp.staged_pages, plan.src_shape.num_layers, g.value_bytes, g.scale_bytes,
                     False, int(variant))
        ext.copy_runs(staging, plan.dst, sp.runs, dma_mode)
