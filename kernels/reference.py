"""The CPU reference of the transfer: vectorised torch ops, no per-token Python loops.

It also runs on CUDA tensors (then it is the torch baseline the benchmark compares against:
advanced indexing, i.e. index_select / index_put_, plus one copy across devices). Inputs are
assumed validated by `kernels.api`.
"""

from __future__ import annotations

import math

import torch

from .geometry import Geometry, PoolShape

__all__ = ["reference_transfer", "unit_copies"]

_WIDE = {8: torch.int64, 4: torch.int32, 2: torch.int16, 1: torch.uint8}


def _width(*numbers: int) -> int:
    g = 0
    for x in numbers:
        g = math.gcd(g, int(x))
    for w in (8, 4, 2):
        if g % w == 0:
            return w
    return 1


def _wide(t: torch.Tensor, w: int) -> torch.Tensor:
    # Moving 8-byte elements instead of bytes makes torch's index kernels ~8x faster.
    return t if w == 1 else t.view(_WIDE[w])


def reference_transfer(src: torch.Tensor, dst: torch.Tensor, src_idx: torch.Tensor,
                       dst_idx: torch.Tensor, *, geometry: Geometry, granularity: str,
                       layout: str, page_size: int,
                       stride_geometry: Geometry | None = None) -> None:
    if src_idx.numel() == 0:
        return
    addr = stride_geometry if stride_geometry is not None else geometry
    if granularity == "page" and addr.name == geometry.name:
        si, di = src_idx.to(src.device), dst_idx.to(dst.device)
        w = _width(src.shape[-1], src.storage_offset(), dst.storage_offset())
        dim = 0 if layout == "page_first" else 1
        rows = _wide(src, w).index_select(dim, si).to(dst.device)
        _wide(dst, w).index_copy_(dim, di, rows)
        return
    s_shape = PoolShape.of(tuple(src.shape), layout)
    d_shape = PoolShape.of(tuple(dst.shape), layout)
    for unit, s_units, d_units in unit_copies(s_shape, d_shape, src_idx, dst_idx, addr=addr,
                                              granularity=granularity, page_size=page_size):
        if s_units.numel() == 0:
            continue
        s_rows = _as_units(src, unit)
        d_rows = _as_units(dst, unit)
        vals = s_rows.index_select(0, s_units.to(src.device)).to(dst.device)
        d_rows.index_copy_(0, d_units.to(dst.device), vals)


def _as_units(t: torch.Tensor, unit: int) -> torch.Tensor:
    """The pool as a 2-D [num_units, unit bytes] tensor of the widest integer type that fits."""
    w = _width(unit, t.storage_offset())
    return t.view(-1).view(_WIDE[w]).view(-1, unit // w)


def unit_copies(src_shape: PoolShape, dst_shape: PoolShape, src_idx: torch.Tensor,
                dst_idx: torch.Tensor, *, addr: Geometry, granularity: str, page_size: int):
    """Per segment kind: (unit bytes, src unit ids, dst unit ids) of a copy addressed with `addr`.

    With the pool's own geometry this is the exact copy. With another geometry (the buggy
    mode) the buffers are viewed as pools of `addr` (same page and layer counts, rows of
    page_size * addr.bytes_per_token bytes), as a kernel that hard-codes `addr` would, and
    every unit outside either buffer is dropped: nothing outside src and dst is touched, and
    since distinct destinations never overlap in that view the result is order-independent.
    A unit is the largest byte count dividing every offset and length involved, so the copy is
    a row gather + row scatter (index_select / index_copy_), never a per-byte index.
    """
    ps = page_size
    row = ps * addr.bytes_per_token
    s_view = PoolShape(src_shape.layout, src_shape.num_pages, src_shape.num_layers, row)
    d_view = PoolShape(dst_shape.layout, dst_shape.num_pages, dst_shape.num_layers, row)
    L = src_shape.num_layers
    layers = torch.arange(L, dtype=torch.int64)
    si, di = src_idx.cpu(), dst_idx.cpu()
    if granularity == "page":
        sp, ss, dp, ds = si, torch.zeros_like(si), di, torch.zeros_like(di)
        segs = [(0, 0, row)]
    else:
        sp, ss, dp, ds = si // ps, si % ps, di // ps, di % ps
        segs = addr.segments(ps)
    clip = row != src_shape.row_bytes
    # Layer-major order: consecutive tokens of one layer end up next to each other.
    s_rows = s_view.row_index(sp[None, :], layers[:, None])
    d_rows = d_view.row_index(dp[None, :], layers[:, None])
    out = []
    for base, stride, length in segs:
        unit = math.gcd(math.gcd(length, stride), math.gcd(base, row))
        unit = math.gcd(unit, math.gcd(src_shape.row_bytes, dst_shape.row_bytes))
        k = length // unit
        parts = torch.arange(k, dtype=torch.int64)
        so = ((s_rows * row + base + ss[None, :] * stride) // unit)[..., None] + parts
        do = ((d_rows * row + base + ds[None, :] * stride) // unit)[..., None] + parts
        so, do = so.reshape(-1), do.reshape(-1)
        if clip:
            keep = (so < src_shape.total_bytes // unit) & (do < dst_shape.total_bytes // unit)
            so, do = so[keep], do[keep]
        out.append((unit, so, do))
    return out
