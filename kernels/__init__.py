"""The index-K transfer kernel: one API over a CUDA kernel and a vectorised torch reference.

    from wb_kernels import transfer, GEOMETRIES
    transfer(src, dst, src_idx, dst_idx, geometry="index_k_bf16", granularity="token",
             layout="page_first", page_size=64, stride_geometry=None, impl="auto")

Pools are contiguous torch.uint8 tensors, `page_first` [num_pages, num_layers, page_bytes] or
`layer_first` [num_layers, num_pages, page_bytes], page_bytes = page_size * bytes_per_token.
One row (a page of one layer) holds page_size value slots, then page_size scale slots: token t
is in page t // page_size, slot t % page_size (c4_latent 576 + 8, index_k_fp8 128 + 4,
index_k_bf16 256 + 0 bytes). src_idx / dst_idx are int64 token ids (granularity "token") or
page ids ("page"), on the cpu or the pools' CUDA device; every layer is copied.

`stride_geometry` names another geometry whose addressing is applied to these buffers: the
deliberately buggy mode (the seed's hard-coded C4 geometry). The buffers are then viewed as
pools of that geometry with the same page and layer counts, each segment clipped to the
buffers, so it is deterministic and never touches memory outside src and dst.

impl "auto" takes the CUDA kernel when a pool is on a GPU and the kernel builds, otherwise the
reference. On the GPU, host pages that a transfer covers in long runs move by DMA through a
device staging pool (kernels/staged.py), the rest zero-copy; token rows with scales can move
their scales apart from the values (host to device through a 2D copy of the host pool's scale
blocks, or a zero-copy pass over the blocks of only the pages a call touches; fp8 device to
device in page order: kernels/scales.py).

Index tensors on the pools' device are checked by the kernel itself, with no host
synchronisation: a bad id (out of range, a destination named twice) is raised as KernelError
by the next transfer() on that device or by `kernels.api.synchronize()`; the rows of the other
ids of that call were copied (kernels/api.py says exactly what moved). The same id tensors
handed again unchanged are copied to the host once, checked there, and then run unchecked as a
validated plan (kernels/reuse.py). cpu ids are checked on the host before any byte moves. A caller
that repeats one transfer can validate once with
`kernels.api.plan_transfer` and launch with `kernels.api.run_plan`. Torch is imported only
when a function runs.
"""

from .geometry import GEOMETRIES, GRANULARITIES, LAYOUTS, Geometry

__all__ = ["transfer", "GEOMETRIES", "GRANULARITIES", "LAYOUTS", "Geometry"]


def transfer(src, dst, src_idx, dst_idx, *, geometry, granularity, layout, page_size=64,
             stride_geometry=None, impl="auto"):
    from .api import transfer as _transfer

    return _transfer(src, dst, src_idx, dst_idx, geometry=geometry, granularity=granularity,
                     layout=layout, page_size=page_size, stride_geometry=stride_geometry,
                     impl=impl)


transfer.__doc__ = __doc__
