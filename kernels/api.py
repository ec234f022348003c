"""`transfer`: the one entry point, which validates every input before any byte moves and then
dispatches to the CUDA kernel or the torch reference."""

from __future__ import annotations

from .geometry import GRANULARITIES, LAYOUTS, Geometry, PoolShape, get_geometry

__all__ = ["transfer", "Plan", "plan_transfer", "IMPLS"]

IMPLS = ("auto", "cuda", "reference")


class Plan:
    """A validated transfer: everything the implementations need, nothing left to check."""

    __slots__ = ("src", "dst", "src_idx", "dst_idx", "geometry", "addr", "granularity", "layout",
                 "page_size", "src_shape", "dst_shape", "impl", "device", "_cache")

    def __init__(self, **kw):
        self._cache = None      # derived launch data (the staged form), filled on first launch
        for k, v in kw.items():
            setattr(self, k, v)

    @property
    def buggy(self) -> bool:
        return self.addr.name != self.geometry.name


def _fail(message: str, hint: str | None = None):
    from workbench.errors import KernelError

    raise KernelError(message, hint=hint)


def _check_pool(name: str, t, geometry: Geometry, layout: str, page_size: int) -> PoolShape:
    import torch

    if not isinstance(t, torch.Tensor):
        _fail(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype != torch.uint8:
        _fail(f"{name} has dtype {t.dtype}; pools are torch.uint8 byte tensors",
              hint=f"pass {name}.view(torch.uint8) of a contiguous buffer")
    if t.dim() != 3:
        _fail(f"{name} has shape {tuple(t.shape)}; a {layout} pool is 3-D "
              + ("[num_pages, num_layers, page_bytes]" if layout == "page_first"
                 else "[num_layers, num_pages, page_bytes]"))
    if not t.is_contiguous():
        _fail(f"{name} is not contiguous", hint="pools are whole contiguous buffers")
    if t.device.type not in ("cpu", "cuda"):
        _fail(f"{name} is on device {t.device}; only cpu and cuda pools are supported")
    want = geometry.page_bytes(page_size)
    if t.shape[2] != want:
        _fail(f"{name} rows are {t.shape[2]} bytes but {geometry.name} with page_size={page_size} "
              f"needs {want} ({page_size} x {geometry.bytes_per_token} bytes per token)",
              hint="size the pool for its geometry (kernels.GEOMETRIES[...].page_bytes(page_size))")
    return PoolShape.of(tuple(t.shape), layout)


def _check_index(name: str, t, limit: int, unit: str, device):
    import torch

    if not isinstance(t, torch.Tensor):
        _fail(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype != torch.int64:
        _fail(f"{name} has dtype {t.dtype}; index tensors are torch.int64",
              hint=f"{name}.to(torch.int64)")
    if t.dim() != 1:
        _fail(f"{name} has shape {tuple(t.shape)}; index tensors are 1-D")
    if t.device.type != "cpu" and t.device != device:
        _fail(f"{name} is on {t.device} but the copy runs on {device}",
              hint="pass index tensors on the cpu or on the device of the pools")
    if t.numel():
        if t.device.type == "cpu":
            arr = t.numpy()        # numpy reductions cost ~1 us, torch ops ~5 us each
            lo, hi = int(arr.min()), int(arr.max())
        else:                      # one reduction, one sync
            lo, hi = (int(v) for v in torch.aminmax(t))
        if lo < 0 or hi >= limit:
            bad = lo if lo < 0 else hi
            _fail(f"{name} holds {unit} {bad}, outside [0, {limit})")


def _has_duplicates(t) -> bool:
    import torch

    if t.device.type == "cpu":
        import numpy as np

        arr = np.sort(t.numpy())
        return bool((arr[1:] == arr[:-1]).any())
    return torch.unique(t).numel() != t.numel()


def _aliases(a, b) -> bool:
    a0, b0 = a.data_ptr(), b.data_ptr()
    return a.device == b.device and a0 < b0 + b.numel() and b0 < a0 + a.numel()


def plan_transfer(src, dst, src_idx, dst_idx, *, geometry: str, granularity: str, layout: str,
                  page_size: int = 64, stride_geometry: str | None = None,
                  impl: str = "auto") -> Plan:
    """Validate a transfer and choose its implementation; raises KernelError, moves nothing."""
    import torch

    geo = get_geometry(geometry)
    addr = geo if stride_geometry is None else get_geometry(stride_geometry)
    if granularity not in GRANULARITIES:
        _fail(f"unknown granularity {granularity!r}", hint="token or page")
    if layout not in LAYOUTS:
        _fail(f"unknown layout {layout!r}", hint="page_first or layer_first")
    if impl not in IMPLS:
        _fail(f"unknown impl {impl!r}", hint="auto, cuda or reference")
    if isinstance(page_size, bool) or not isinstance(page_size, int) or page_size <= 0:
        _fail(f"page_size must be a positive int, got {page_size!r}")
    s_shape = _check_pool("src", src, geo, layout, page_size)
    d_shape = _check_pool("dst", dst, geo, layout, page_size)
    if s_shape.num_layers != d_shape.num_layers:
        _fail(f"src has {s_shape.num_layers} layers but dst has {d_shape.num_layers}",
              hint="all layers are copied: both pools need the same layer count")
    cuda_devs = {t.device for t in (src, dst) if t.device.type == "cuda"}
    if len(cuda_devs) > 1:
        _fail(f"src is on {src.device} and dst on {dst.device}; peer copies are not supported")
    device = next(iter(cuda_devs)) if cuda_devs else torch.device("cpu")

    if not isinstance(src_idx, torch.Tensor) or not isinstance(dst_idx, torch.Tensor):
        _fail("src_idx and dst_idx must be torch.Tensor")
    if src_idx.dim() == 1 and dst_idx.dim() == 1 and src_idx.numel() != dst_idx.numel():
        _fail(f"src_idx has {src_idx.numel()} entries but dst_idx has {dst_idx.numel()}")
    if granularity == "token":
        s_lim, d_lim, unit = s_shape.num_pages * page_size, d_shape.num_pages * page_size, "token"
    else:
        s_lim, d_lim, unit = s_shape.num_pages, d_shape.num_pages, "page"
    _check_index("src_idx", src_idx, s_lim, unit, device)
    _check_index("dst_idx", dst_idx, d_lim, unit, device)
    if dst_idx.numel() > 1 and _has_duplicates(dst_idx):
        _fail(f"dst_idx names some destination {unit} more than once",
              hint="each destination may be written once per transfer")
    if _aliases(src, dst):
        if addr is not geo:
            _fail("src and dst share memory; the stride_geometry mode needs separate buffers")
        if src.data_ptr() != dst.data_ptr() or src.shape != dst.shape:
            _fail("src and dst overlap partially", hint="pass the same pool, or separate pools")
        if torch.isin(src_idx.to(dst_idx.device), dst_idx).any():
            _fail(f"src and dst are one pool and some {unit} is both read and written")

    chosen = impl
    if impl in ("auto", "cuda"):
        from . import build

        if device.type == "cuda" and build.cuda_available():
            chosen = "cuda"
        elif impl == "cuda":
            if device.type != "cuda":
                _fail("impl='cuda' needs at least one pool on a CUDA device",
                      hint="use impl='reference' for host-only copies")
            _fail("the CUDA kernel is not available: " + build.unavailable_reason(),
                  hint="run `wb kernel check` to build it and see the compiler output")
        else:
            chosen = "reference"
    if chosen == "cuda":
        for name, t in (("src", src), ("dst", dst)):
            if t.device.type == "cpu" and not t.is_pinned():
                _fail(f"{name} is a host buffer that is not pinned; the CUDA kernel reads and writes "
                      "host pools directly", hint=f"allocate it with pin_memory=True")
    return Plan(src=src, dst=dst, src_idx=src_idx, dst_idx=dst_idx, geometry=geo, addr=addr,
                granularity=granularity, layout=layout, page_size=page_size, src_shape=s_shape,
                dst_shape=d_shape, impl=chosen, device=device)


def run_plan(plan: Plan) -> None:
    if plan.src_idx.numel() == 0:
        return
    if plan.impl == "cuda":
        from . import build

        build.launch(plan)
        return
    from .reference import reference_transfer

    reference_transfer(plan.src, plan.dst, plan.src_idx, plan.dst_idx, geometry=plan.geometry,
                       granularity=plan.granularity, layout=plan.layout,
                       page_size=plan.page_size,
                       stride_geometry=plan.addr if plan.buggy else None)


def transfer(src, dst, src_idx, dst_idx, *, geometry: str, granularity: str, layout: str,
             page_size: int = 64, stride_geometry: str | None = None,
             impl: str = "auto") -> None:
    """Copy every layer of the rows named by src_idx into the rows named by dst_idx.

    See the package docstring for shapes. Raises `KernelError` (nothing moved) on bad input.
    """
    plan = plan_transfer(src, dst, src_idx, dst_idx, geometry=geometry,
                         granularity=granularity, layout=layout, page_size=page_size,
                         stride_geometry=stride_geometry, impl=impl)
    run_plan(plan)
