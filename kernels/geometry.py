"""Byte geometries of the cached rows the transfer kernel moves, and the address arithmetic they imply.

A pool is a uint8 tensor of rows; one row holds one page of one layer: `page_size` value slots
followed by `page_size` scale slots (scale bytes 0 for contiguous geometries).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Geometry", "GEOMETRIES", "LAYOUTS", "GRANULARITIES", "get_geometry", "PoolShape"]

LAYOUTS = ("page_first", "layer_first")
GRANULARITIES = ("token", "page")


@dataclass(frozen=True)
class Geometry:
    """Bytes per token of one geometry: `value_bytes` in the value block, `scale_bytes` in the scale block."""

    name: str
    value_bytes: int
    scale_bytes: int
    description: str

    @property
    def bytes_per_token(self) -> int:
        return self.value_bytes + self.scale_bytes

    def page_bytes(self, page_size: int) -> int:
        return page_size * self.bytes_per_token

    def scale_base(self, page_size: int) -> int:
        """Offset of the scale block inside a row (values first, then scales)."""
        return page_size * self.value_bytes

    def segments(self, page_size: int) -> list[tuple[int, int, int]]:
        """(base, stride, length) of each per-token segment inside a row: slot s lives at base + s*stride."""
        segs = [(0, self.value_bytes, self.value_bytes)]
        if self.scale_bytes:
            segs.append((self.scale_base(page_size), self.scale_bytes, self.scale_bytes))
        return segs


GEOMETRIES: dict[str, Geometry] = {
    g.name: g
    for g in (
        Geometry("c4_latent", 576, 8, "DeepSeek C4 latent: 576 value + 8 scale bytes per token"),
        Geometry("index_k_fp8", 128, 4, "fp8 index-K: 128 value + 4 scale bytes per token"),
        Geometry("index_k_bf16", 256, 0, "bf16 index-K: 256 contiguous bytes per token"),
    )
}


def get_geometry(name: str) -> Geometry:
    from workbench.errors import KernelError

    try:
        return GEOMETRIES[name]
    except KeyError:
        raise KernelError(f"unknown geometry {name!r}",
                          hint=f"one of: {', '.join(GEOMETRIES)}") from None


@dataclass(frozen=True)
class PoolShape:
    """How a pool tensor of `num_pages` x `num_layers` rows of `row_bytes` is laid out in memory."""

    layout: str
    num_pages: int
    num_layers: int
    row_bytes: int

    @classmethod
    def of(cls, tensor_shape: tuple[int, ...], layout: str) -> "PoolShape":
        a, b, row = tensor_shape
        if layout == "page_first":
            return cls(layout, a, b, row)
        return cls(layout, b, a, row)

    @property
    def total_bytes(self) -> int:
        return self.num_pages * self.num_layers * self.row_bytes

    def shape(self) -> tuple[int, int, int]:
        if self.layout == "page_first":
            return (self.num_pages, self.num_layers, self.row_bytes)
        return (self.num_layers, self.num_pages, self.row_bytes)

    def row_index(self, page, layer):
        """Row number of (page, layer); works on ints and on broadcasting tensors."""
        if self.layout == "page_first":
            return page * self.num_layers + layer
        return layer * self.num_pages + page
