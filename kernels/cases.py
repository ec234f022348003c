"""Pools and index sets for checks, tests and experiments: fresh random data, poisoned outputs."""

from __future__ import annotations

from .geometry import GEOMETRIES

__all__ = ["make_pool", "index_set", "SET_KINDS", "poison"]

SET_KINDS = ("aligned", "partial", "scattered", "one", "empty", "large")


def pool_shape(geometry: str, layout: str, num_pages: int, num_layers: int, page_size: int):
    row = GEOMETRIES[geometry].page_bytes(page_size)
    if layout == "page_first":
        return (num_pages, num_layers, row)
    return (num_layers, num_pages, row)


def make_pool(geometry: str, layout: str, num_pages: int, num_layers: int, page_size: int, *,
              gen, device="cpu", pinned: bool = False, fill: str = "random"):
    """A pool tensor; `fill` random (from `gen`, a cpu torch.Generator) or poison."""
    import torch

    shape = pool_shape(geometry, layout, num_pages, num_layers, page_size)
    if fill == "random":
        t = torch.randint(0, 256, shape, dtype=torch.uint8, generator=gen)
    else:
        t = poison(shape, gen)
    if pinned:
        t = t.pin_memory()
    return t.to(device) if str(device) != "cpu" else t


def poison(shape, gen):
    """A random-looking but recognisable fill: never all zeros, so unwritten bytes show."""
    import torch

    t = torch.randint(0, 256, shape, dtype=torch.uint8, generator=gen)
    return t | 0x01  # odd bytes only: a second poison (t ^ 0xFF) is even everywhere


def index_set(kind: str, *, granularity: str, src_pages: int, dst_pages: int, page_size: int,
              gen, count: int | None = None):
    """(src_idx, dst_idx) int64 cpu tensors of one kind; destinations are always distinct."""
    import torch

    def perm(n):
        return torch.randperm(n, generator=gen)

    if granularity == "page":
        k = {"empty": 0, "one": 1, "large": min(src_pages, dst_pages) // 2}.get(
            kind, max(1, min(src_pages, dst_pages) // 8))
        if count is not None:
            k = count
        return perm(src_pages)[:k].clone(), perm(dst_pages)[:k].clone()
    ps = page_size
    if kind == "empty":
        return torch.empty(0, dtype=torch.int64), torch.empty(0, dtype=torch.int64)
    if kind == "one":
        s = torch.randint(0, src_pages * ps, (1,), generator=gen)
        d = torch.randint(0, dst_pages * ps, (1,), generator=gen)
        return s, d
    if kind in ("scattered", "large"):
        n = count or (min(src_pages, dst_pages) * ps // (2 if kind == "large" else 16))
        n = min(n, src_pages * ps, dst_pages * ps)
        return perm(src_pages * ps)[:n].clone(), perm(dst_pages * ps)[:n].clone()
    # aligned: whole pages, slot for slot; partial: a prefix of each page (1..page_size-1
    # tokens, at least one page partial), slot for slot, as a HiCache partial-page load does.
    k = max(1, min(src_pages, dst_pages) // 8) if count is None else count
    sp, dp = perm(src_pages)[:k], perm(dst_pages)[:k]
    if kind == "aligned":
        lengths = torch.full((k,), ps, dtype=torch.int64)
    else:
        lengths = torch.randint(1, max(ps, 2), (k,), generator=gen)
        if ps == 1:
            lengths = torch.ones(k, dtype=torch.int64)
    slots = torch.arange(ps, dtype=torch.int64)
    keep = slots[None, :] < lengths[:, None]
    s = (sp[:, None] * ps + slots[None, :])[keep]
    d = (dp[:, None] * ps + slots[None, :])[keep]
    return s, d
