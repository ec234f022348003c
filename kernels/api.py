"""`transfer`: the one entry point. It validates the pools (cached per pair of pools) and the
index tensors, then dispatches to the CUDA kernel or the torch reference.

Where the data checks of the ids run (range, duplicate destinations):
- index tensors on the pools' CUDA device: in the copy kernel itself (`transfer()` never
  synchronises with the device). An id outside its pool is skipped, so no byte outside the
  pools is read or written; the rows of the other ids are copied. A destination named twice is
  detected by a byte stamp per destination id (both copies land inside dst). The first such
  error of a launch is written to pinned host memory and raised as `KernelError` by the next
  `transfer()` on that device (which then moves nothing) or by `synchronize()`.
- host-to-device token rows with a scale block: the path is chosen on the device from the
  pages the ids touch and their runs of one page (`kernels.scales.device_path`, one launch
  marking the pages), every alternative enqueued and gated on it: the touched pages' scale
  blocks (`wants_blocks`, `wants_dma`: the values, which check and report, a block pass that
  skips the pages no valid id names, then the scales from the staged blocks, which skip the
  same bad ids without reporting them again), one launch for ids page by page, or the default
  launch. Device to host, rows with scales: one launch for ids page by page, else the
  default, chosen the same way.
- token rows with scales device to device (fp8 from 64 MB, c4 from 256 MB) when the same index
  tensors come again unchanged: as above, the scales in page order (three launches, the two
  scale passes beside the value pass on a high-priority side stream; they skip the bad ids),
  sorted by page on the device once. New tensors go in one launch (a sort per call costs more
  than it saves, or on random ids saves 7% at 256-512 MB but costs ids already in page order
  14%; two unsorted passes always cost more; kernels.scales NEW_ORDER_MIN_BYTES,
  SPLIT_MIN_BYTES, NOTES.md runs 12-14).
- the same device id tensors handed again unchanged (the same objects, torch's version
  counters unchanged): copied to pinned memory once, on their second call, behind an event (no
  synchronisation), and checked on the host once that copy has landed, as `plan_transfer`
  checks cpu ids; valid ids then run unchecked as that plan, on its default path (kernels.reuse;
  for host rows in long runs the staged DMA path, which needs the host ids on the host). Until
  the copy has landed, for bad ids, and after an in-place change (a new version, read again),
  the calls stay checked on the device as above. The host check, not the absence of a report,
  is what lets a call skip the device checks: the record keeps only the first error of any
  launch until it is read, so a launch's own error can go unreported while another's is pending.
- index tensors on the cpu, one pool used as both src and dst, the reference
  implementation, and `plan_transfer`: on the host before any byte moves (device ids are
  read back then: one synchronisation per plan). `run_plan` launches a validated plan again
  with no checks, for callers that repeat one transfer.
"""

from __future__ import annotations

import weakref

from .geometry import GRANULARITIES, LAYOUTS, Geometry, PoolShape, get_geometry
from .reuse import ReusedIds, host_valid
from .scales import (ORDERED_VARIANT, PATH_DEFAULT, PATH_ORDERED, device_path,
                     device_page_order, run_h2d, run_page_order, run_split, versions,
                     wants_dma, wants_page_order, wants_split)

__all__ = ["transfer", "Plan", "plan_transfer", "run_plan", "synchronize", "IMPLS"]

IMPLS = ("auto", "cuda", "reference")
ERROR_CODES = {1: "src_idx", 2: "dst_idx", 3: "dst_idx"}


class Plan:
    """A validated transfer: everything the implementations need, nothing left to check."""

    __slots__ = ("src", "dst", "src_idx", "dst_idx", "geometry", "addr", "granularity", "layout",
                 "page_size", "src_shape", "dst_shape", "impl", "device", "dev_ids", "_cache")

    def __init__(self, **kw):
        self._cache = None      # derived launch data (the staged form), filled on first launch
        self.dev_ids = None     # the ids on the device already, when src_idx/dst_idx are their
                                # host copies (kernels.reuse)
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


class _Pools:
    """What a transfer between two pools needs that does not depend on the ids: validated
    once per (src, dst, options) and kept while both tensors live unchanged."""

    __slots__ = ("refs", "ptrs", "shapes", "geo", "addr", "granularity", "layout", "page_size",
                 "s_shape", "d_shape", "device", "impl", "unit", "s_lim", "d_lim", "same_pool",
                 "dev_index", "ext", "args", "scale_dma", "page_order", "order", "known",
                 "d2h_choice", "__weakref__")

    def holds(self, src, dst) -> bool:
        return (self.refs[0]() is src and self.refs[1]() is dst
                and src.data_ptr() == self.ptrs[0] and dst.data_ptr() == self.ptrs[1]
                and src.shape == self.shapes[0] and dst.shape == self.shapes[1])

    def fast(self, si, di) -> bool:
        """True when the ids can be checked by the kernel: int64 1-D tensors of one length on
        the pools' device (anything else takes the host path, which names what is wrong)."""
        import torch

        return (self.ext is not None and type(si) is torch.Tensor and type(di) is torch.Tensor
                and si.is_cuda and di.is_cuda and si.dtype == torch.int64
                and di.dtype == torch.int64 and si.dim() == 1 and di.dim() == 1
                and si.get_device() == self.dev_index and di.get_device() == self.dev_index
                and si.numel() == di.numel())


_POOLS: dict = {}
_POOLS_MAX = 64
_CALLS: list = [None] * 256     # what each checked launch was, by sequence number (mod 256)


def _pools(src, dst, geometry, granularity, layout, page_size, stride_geometry, impl) -> _Pools:
    key = (id(src), id(dst), geometry, granularity, layout, page_size, stride_geometry, impl)
    p = _POOLS.get(key)
    if p is not None and p.holds(src, dst):
        return p
    p = _validate_pools(src, dst, geometry=geometry, granularity=granularity, layout=layout,
                        page_size=page_size, stride_geometry=stride_geometry, impl=impl)
    if len(_POOLS) >= _POOLS_MAX:
        _POOLS.clear()
    _POOLS[key] = p
    return p


def _validate_pools(src, dst, *, geometry, granularity, layout, page_size, stride_geometry,
                    impl) -> _Pools:
    """Every check that needs no id; raises KernelError."""
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
    p = _Pools()
    p.device = next(iter(cuda_devs)) if cuda_devs else torch.device("cpu")
    p.same_pool = False
    if _aliases(src, dst):
        if addr is not geo:
            _fail("src and dst share memory; the stride_geometry mode needs separate buffers")
        if src.data_ptr() != dst.data_ptr() or src.shape != dst.shape:
            _fail("src and dst overlap partially", hint="pass the same pool, or separate pools")
        p.same_pool = True
    p.impl = _choose_impl(impl, p.device, src, dst)
    token = granularity == "token"
    p.unit = "token" if token else "page"
    p.s_lim = s_shape.num_pages * (page_size if token else 1)
    p.d_lim = d_shape.num_pages * (page_size if token else 1)
    p.refs = (weakref.ref(src), weakref.ref(dst))
    p.ptrs = (src.data_ptr(), dst.data_ptr())
    p.shapes = (src.shape, dst.shape)
    p.geo, p.addr, p.granularity, p.layout, p.page_size = geo, addr, granularity, layout, page_size
    p.s_shape, p.d_shape = s_shape, d_shape
    p.dev_index = p.device.index if p.device.type == "cuda" else -1
    p.ext, p.args, p.scale_dma, p.page_order, p.order = None, None, False, False, None
    p.known, p.d2h_choice = None, False
    if p.impl == "cuda" and not p.same_pool:
        from . import build

        p.ext = build.load()
        # The binding's arguments after the ids; the last four: both parts, no compact pool,
        # checks that report (kernels/scales.py moves scales apart).
        p.args = (token, layout == "page_first", page_size, s_shape.num_pages, d_shape.num_pages,
                  s_shape.num_layers, addr.value_bytes, addr.scale_bytes, addr is not geo, -1,
                  True, p.s_lim, p.d_lim, 0, False, False, True)
        p.scale_dma = (token and addr is geo and geo.scale_bytes > 0
                       and src.device.type == "cpu" and dst.device.type == "cuda")
        p.d2h_choice = (token and addr is geo and geo.scale_bytes > 0
                        and src.device.type == "cuda" and dst.device.type == "cpu")
        # fp8 rows gained 9 points of the copy with their scales in page order (run 7); which
        # rows and sizes take it is asked per call (scales.wants_page_order)
        p.page_order = token and addr is geo and 0 < geo.scale_bytes and src.is_cuda and dst.is_cuda
    return p


def _choose_impl(impl: str, device, src, dst) -> str:
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
                      "host pools directly", hint="allocate it with pin_memory=True")
    return chosen


def _plan(p: _Pools, src, dst, src_idx, dst_idx) -> Plan:
    """The host-side checks of the ids (they read the ids: device ids are synchronised)."""
    import torch

    if not isinstance(src_idx, torch.Tensor) or not isinstance(dst_idx, torch.Tensor):
        _fail("src_idx and dst_idx must be torch.Tensor")
    if src_idx.dim() == 1 and dst_idx.dim() == 1 and src_idx.numel() != dst_idx.numel():
        _fail(f"src_idx has {src_idx.numel()} entries but dst_idx has {dst_idx.numel()}")
    _check_index("src_idx", src_idx, p.s_lim, p.unit, p.device)
    _check_index("dst_idx", dst_idx, p.d_lim, p.unit, p.device)
    if dst_idx.numel() > 1 and _has_duplicates(dst_idx):
        _fail(f"dst_idx names some destination {p.unit} more than once",
              hint="each destination may be written once per transfer")
    if p.same_pool and torch.isin(src_idx.to(dst_idx.device), dst_idx).any():
        _fail(f"src and dst are one pool and some {p.unit} is both read and written")
    return Plan(src=src, dst=dst, src_idx=src_idx, dst_idx=dst_idx, geometry=p.geo, addr=p.addr,
                granularity=p.granularity, layout=p.layout, page_size=p.page_size,
                src_shape=p.s_shape, dst_shape=p.d_shape, impl=p.impl, device=p.device)


def plan_transfer(src, dst, src_idx, dst_idx, *, geometry: str, granularity: str, layout: str,
                  page_size: int = 64, stride_geometry: str | None = None,
                  impl: str = "auto") -> Plan:
    """Validate a transfer on the host and choose its implementation; raises KernelError,
    moves nothing. Device ids are read back (one synchronisation)."""
    p = _pools(src, dst, geometry, granularity, layout, page_size, stride_geometry, impl)
    return _plan(p, src, dst, src_idx, dst_idx)


def run_plan(plan: Plan) -> None:
    """Launch a validated plan (no checks: `plan_transfer` made them)."""
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

    See the package docstring for shapes and this module's for when the ids are checked.
    Raises `KernelError` on bad input (nothing moved), or for an earlier call whose device
    ids the kernel found bad (this call then moves nothing).
    """
    p = _pools(src, dst, geometry, granularity, layout, page_size, stride_geometry, impl)
    if p.ext is not None:
        _raise_pending(p.ext, p.dev_index)
        if p.fast(src_idx, dst_idx):
            n = src_idx.numel()
            if n:
                known = _known(p, src_idx, dst_idx)
                if known is not None and known.plan() is not None:
                    known.launch(src, dst)      # read on the host and valid: unchecked
                    return
                if p.scale_dma:
                    seq = _h2d(p, src, dst, src_idx, dst_idx, n)
                elif p.d2h_choice:
                    seq = _d2h(p, src, dst, src_idx, dst_idx, n)
                elif p.page_order and (wants_page_order(p.geo, n, p.s_shape.num_layers)
                                       or wants_page_order(p.geo, n, p.s_shape.num_layers,
                                                           per_call=True)
                                       or wants_split(p.geo, n, p.s_shape.num_layers)):
                    seq = _ordered(p, src, dst, src_idx, dst_idx, n)
                else:
                    seq = p.ext.transfer(src, dst, src_idx, dst_idx, *p.args)
                for one in seq if type(seq) is list else (seq,):
                    _CALLS[one & 255] = (one, p, n)
            return
    run_plan(_plan(p, src, dst, src_idx, dst_idx))


def _h2d(p: _Pools, src, dst, si, di, n: int) -> list:
    """Host-to-device token rows with scales, device ids (not read on the host): the path is
    chosen on the device (kernels.scales.device_path, from the pages the ids touch and their
    runs) and every alternative enqueued, gated on it: one launch in ORDERED_VARIANT for ids page
    by page (first, right after the choice: behind the blocks path it waited for that path's
    side stream, NOTES.md run 12), the touched pages' blocks (value pass, block pass on the side
    stream, scale pass), and the default launch where the blocks would not always pay. Returns the
    checked launches' sequence numbers (the
    one that runs reports). Ids handed again run as their plan once read (`_known`), which
    also sees runs of whole pages (the staged DMA path)."""
    marks, path, _ = device_path(p.ext, si, p.geo, p.s_shape, n, p.page_size, p.s_lim,
                                 blocks=True)
    a = p.args
    seqs = [p.ext.transfer_gated(path, PATH_ORDERED, src, dst, si, di, *a[:9], ORDERED_VARIANT,
                                 *a[10:]),
            run_h2d(p.ext, src, dst, si, di, a[:13], blocks=marks, gate=path)]
    if not wants_dma(p.geo, p.s_shape, n, p.page_size):
        seqs.append(p.ext.transfer_gated(path, PATH_DEFAULT, src, dst, si, di, *a))
    return seqs


def _d2h(p: _Pools, src, dst, si, di, n: int) -> list:
    """Device-to-host token rows with scales, device ids: one launch in ORDERED_VARIANT where
    the host ids come page by page (chosen on the device, as `_h2d`), else the default."""
    _, path, _ = device_path(p.ext, di, p.geo, p.d_shape, n, p.page_size, p.d_lim, blocks=False)
    a = p.args
    return [p.ext.transfer_gated(path, PATH_ORDERED, src, dst, si, di, *a[:9], ORDERED_VARIANT,
                                 *a[10:]),
            p.ext.transfer_gated(path, PATH_DEFAULT, src, dst, si, di, *a)]


def _reused(p: _Pools, slot: str, ids: tuple, make):
    """What `make()` derives from index tensors handed again unchanged (the same tensor objects,
    torch's in-place version counters unchanged), kept on the pools in `slot`: None the first
    time, and for inference tensors, which keep no version counter."""
    c, key = getattr(p, slot), versions(*ids)
    if (key is not None and c is not None and c[1] == key
            and all(a is b for a, b in zip(c[0], ids))):
        if c[2] is None:
            c[2] = make()
        return c[2]
    setattr(p, slot, None if key is None else [ids, key, None])
    return None


def _known(p: _Pools, si, di):
    """The ReusedIds of id tensors handed again unchanged (None the first time): from the
    second call their host copy, from the first call after it landed their validated plan."""
    return _reused(p, "known", (si, di), lambda: ReusedIds(
        si, di, lambda s, d: _host_plan(p, s, d, si, di)))


def _host_plan(p: _Pools, s, d, si, di):
    """The plan of device ids si, di from their host copies s, d (None when they are bad)."""
    if not host_valid(s, d, p.s_lim, p.d_lim):
        return None
    plan = Plan(src=None, dst=None, src_idx=s, dst_idx=d, geometry=p.geo, addr=p.addr,
                granularity=p.granularity, layout=p.layout, page_size=p.page_size,
                src_shape=p.s_shape, dst_shape=p.d_shape, impl=p.impl, device=p.device)
    plan.dev_ids = (si, di)
    return plan


def _ordered(p: _Pools, src, dst, si, di, n: int) -> int:
    """Rows with scales device to device, scales in page order (kernels.scales; the sort is made
    on the device, ORDER_SORT, with the id checks folded in as -1 entries, no sync). Index
    tensors handed again unchanged keep theirs from the second call on; new ids (and inference
    tensors, which keep no version counter) go in one launch, or are sorted for the call where
    NEW_ORDER_MIN_BYTES is set (fp8 rows), or move in two unsorted passes where SPLIT_MIN_BYTES
    is (both off by default, NOTES.md runs 12-14)."""
    layers = p.s_shape.num_layers
    make = lambda: device_page_order(  # noqa: E731
        p.ext, si, di, p.page_size, (p.s_shape.num_pages, p.d_shape.num_pages),
        (p.s_lim, p.d_lim))
    order = _reused(p, "order", (si, di), make) if wants_page_order(p.geo, n, layers) else None
    if order is None and wants_page_order(p.geo, n, layers, per_call=True):
        order = make                    # this call's own sort, overlapped with the values
    if order is not None:
        return run_page_order(p.ext, src, dst, si, di, p.args[:13], order)
    if wants_split(p.geo, n, layers):
        return run_split(p.ext, src, dst, si, di, p.args[:13])
    return p.ext.transfer(src, dst, si, di, *p.args)


def _raise_pending(ext, dev_index: int) -> None:
    err = ext.pending_error(dev_index)
    if err is None:
        return
    code, seq, index, value = err
    call = _CALLS[seq & 255]
    what = "an earlier transfer()"
    limit = None
    if call is not None and call[0] == seq:
        p, n = call[1], call[2]
        what = (f"transfer() #{seq} ({p.geo.name} {p.granularity}s, {n} ids, "
                f"{p.s_shape.num_pages} -> {p.d_shape.num_pages} pages)")
        limit = p.s_lim if code == 1 else p.d_lim
    name = ERROR_CODES.get(code, "an index tensor")
    if code == 3:
        problem = f"{name}[{index}] = {value} names a destination already written in that call"
        done = "both copies landed in dst; which one is there is undefined"
    else:
        bound = f", outside [0, {limit})" if limit is not None else ", out of range"
        problem = f"{name}[{index}] = {value}{bound}"
        done = "rows of the bad ids were not copied (nothing outside the pools was touched); " \
               "the others were"
    _fail(f"{what} failed on the device: {problem}; {done}",
          hint="the device checks report the first bad id of a call; validate with "
               "kernels.api.plan_transfer to find them all before any byte moves")


def synchronize(device=None) -> None:
    """Wait for the device, then raise the first error its checked transfers reported."""
    import torch

    from . import build

    torch.cuda.synchronize(device)
    if build.loaded() is not None:
        dev = torch.device("cuda", torch.cuda.current_device()) if device is None \
            else torch.device(device)
        _raise_pending(build.loaded(), dev.index if dev.index is not None
                       else torch.cuda.current_device())
