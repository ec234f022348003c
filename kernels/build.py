"""JIT build of the CUDA kernel through torch's extension loader, cached, and its launch."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cuda_available", "unavailable_reason", "load", "loaded", "launch", "SOURCES",
           "build_dir"]

HERE = Path(__file__).resolve().parent
SOURCES = [HERE / "cuda" / "transfer.cu", HERE / "cuda" / "order.cu", HERE / "cuda" / "binding.cpp"]
NVCC_FLAGS = ["-O3", "-gencode=arch=compute_90,code=sm_90", "-lineinfo"]

_state: dict = {"ext": None, "error": None}


def build_dir() -> Path:
    base = os.environ.get("WB_KERNEL_BUILD_DIR")
    root = Path(base) if base else Path.home() / ".cache" / "wb" / "kernels"
    return root


def unavailable_reason() -> str:
    import torch

    if torch.version.cuda is None:
        return f"torch {torch.__version__} is a CPU build"
    if not torch.cuda.is_available():
        return "no CUDA device is visible"
    if _state["error"]:
        return f"the build failed: {_state['error']}"
    return "unknown"


def loaded():
    """The extension module if it is loaded already, else None (never builds)."""
    return _state["ext"]


def cuda_available() -> bool:
    import torch

    if torch.version.cuda is None or not torch.cuda.is_available():
        return False
    try:
        load()
    except Exception:  # the reason is kept for unavailable_reason()
        return False
    return True


def load(verbose: bool = False):
    """Build (first call: about a minute) or load the cached extension module."""
    if _state["ext"] is not None:
        return _state["ext"]
    if _state["error"] is not None:
        from workbench.errors import KernelError

        raise KernelError(f"the CUDA kernel failed to build: {_state['error']}",
                          hint="run `wb kernel check` to see the compiler output")
    import hashlib

    from torch.utils.cpp_extension import load as _load

    inputs = [*SOURCES, HERE / "cuda" / "transfer.cuh"]   # the header too: both .cu include it
    digest = hashlib.sha1(b"".join(p.read_bytes() for p in inputs)
                          + " ".join(NVCC_FLAGS).encode()).hexdigest()[:12]
    name = f"wb_transfer_{digest}"
    where = build_dir() / name
    where.mkdir(parents=True, exist_ok=True)
    try:
        ext = _load(name=name, sources=[str(p) for p in SOURCES], extra_cuda_cflags=NVCC_FLAGS,
                    extra_cflags=["-O3"], build_directory=str(where), verbose=verbose)
    except Exception as exc:  # compiler errors come back as RuntimeError/OSError
        _state["error"] = str(exc).strip().splitlines()[-1] if str(exc).strip() else repr(exc)
        from workbench.errors import KernelError

        raise KernelError(f"the CUDA kernel failed to build: {_state['error']}",
                          hint=f"build directory {where}") from exc
    _state["ext"] = ext
    return ext


# Small cpu id sets travel through a ring of pinned slots (allocating pinned memory per call
# cost more than the launch); a slot is rewritten only once its last upload has completed.
RING_IDS = 4096
RING_SLOTS = 8
_RING: dict = {}


def _ring_upload(src_idx, dst_idx, device):
    import torch

    ring = _RING.get(device)
    if ring is None:
        ring = _RING[device] = [torch.empty((RING_SLOTS, 2 * RING_IDS), dtype=torch.int64,
                                            pin_memory=True), [None] * RING_SLOTS, 0]
    k = ring[2]
    ring[2] = (k + 1) % RING_SLOTS
    if ring[1][k] is not None:
        ring[1][k].synchronize()      # RING_SLOTS uploads back: normally long done
    n = src_idx.numel()
    buf = ring[0][k, :2 * n]
    arr = buf.numpy()
    arr[:n] = src_idx.numpy()
    arr[n:] = dst_idx.numpy()
    both = buf.to(device, non_blocking=True)
    ev = torch.cuda.Event()
    ev.record(torch.cuda.current_stream(device))
    ring[1][k] = ev
    return both[:n], both[n:]


def device_indices(src_idx, dst_idx, device):
    """Both index tensors on `device`; cpu ones travel together in one pinned copy."""
    import torch

    if src_idx.device == device and dst_idx.device == device:
        return src_idx, dst_idx
    if src_idx.device.type == "cpu" and dst_idx.device.type == "cpu":
        if src_idx.numel() <= RING_IDS and src_idx.is_contiguous() and dst_idx.is_contiguous():
            return _ring_upload(src_idx, dst_idx, device)
        both = torch.cat([src_idx, dst_idx]).pin_memory().to(device, non_blocking=True)
        n = src_idx.numel()
        return both[:n], both[n:]
    return src_idx.to(device), dst_idx.to(device)


def launch(plan, variant: int = -1, *, staging: str = "auto", dma_mode: int = 1,
           pipelined: bool = True, scales: str = "auto") -> None:
    """Run a validated plan (kernels.api.Plan) on the CUDA kernel.

    variant -1 is the kernel's default for the direction. staging: "auto" moves host rows by
    DMA when the host side covers whole rows in long runs (kernels.staged), "never" always
    uses zero-copy kernel access, "always" stages whenever it is correct to. dma_mode 1 issues
    the runs as one cudaMemcpyBatchAsync, 0 as one cudaMemcpyAsync each; pipelined overlaps
    DMA chunks with the kernel stage on a side stream. scales (token rows with a scale block,
    kernels.scales): "auto" moves them apart where measured faster (host to device when
    `wants_dma`, fp8 device to device, both with the default variant), "always" whenever it
    can, "serial" as always without overlapping the host 2D copy with the values, "blocks"
    (host to device) the scale blocks of the touched host pages only ("blocks-serial": not
    overlapped with the values), "never" not. A plan's cpu ids go to the device on its first
    launch and stay there while unchanged (kernels.build._derived).
    """
    import torch

    ext = load()
    dev = plan.device
    sp = _staged_form(plan, staging)
    if sp is not None:
        from . import staged as _staged

        with torch.cuda.device(dev):
            _staged.run_staged(plan, sp, ext, variant=variant, dma_mode=dma_mode,
                               pipelined=pipelined)
        return
    si, di = _plan_ids(plan, dev)
    args = _launch_args(plan, variant)
    how = _scale_path(plan, variant, scales)
    if how is None or how == "ordered":
        ext.transfer(plan.src, plan.dst, si, di, *_one_launch_args(args, how))
        return
    from . import scales as _scales

    with torch.cuda.device(dev):
        if how == "h2d":
            _scales.run_h2d(ext, plan.src, plan.dst, si, di, args, overlap=scales != "serial")
        elif how == "blocks":
            _scales.run_h2d(ext, plan.src, plan.dst, si, di, args,
                            blocks=_plan_blocks(plan, si, dev)[0],
                            overlap=scales != "blocks-serial")
        else:
            order = _derived(plan, "order",
                             lambda: _scales.page_order_ids(si, di, plan.page_size))
            _scales.run_page_order(ext, plan.src, plan.dst, si, di, args, order)


def one_launch(plan):
    """(src ids, dst ids, the binding's arguments after them) on the device when the plan's
    default path is one launch, else None: what `launch(plan)` would run, for a caller that
    launches the same plan many times and cannot afford its choices per call (kernels.reuse:
    ~13 us of host time per call at 33.6 MB, where the copy takes ~28 us)."""
    if _staged_form(plan, "auto") is not None:
        return None
    how = _scale_path(plan, -1, "auto")
    if how is not None and how != "ordered":
        return None
    si, di = _plan_ids(plan, plan.device)
    return si, di, _one_launch_args(_launch_args(plan, -1), how)


def _staged_form(plan, staging: str):
    """The plan's staged form (kernels.staged) for host transfers that take it, else None."""
    if staging == "never" or plan.src.device.type == plan.dst.device.type:
        return None
    from . import staged as _staged

    return _derived(plan, ("staged", staging),
                    lambda: _staged.plan_staged(plan, force=staging == "always"))


def _launch_args(plan, variant: int) -> tuple:
    """The binding's first 13 arguments after the ids (no device checks: a validated plan).
    The binding sets the pools' device itself (a Python device context costs ~3 us)."""
    g = plan.addr
    return (plan.granularity == "token", plan.layout == "page_first", plan.page_size,
            plan.src_shape.num_pages, plan.dst_shape.num_pages, plan.src_shape.num_layers,
            g.value_bytes, g.scale_bytes, bool(plan.buggy), int(variant), False, 0, 0)


def _one_launch_args(args: tuple, how) -> tuple:
    """All the binding's arguments after the ids for one launch of both parts; "ordered":
    in kernels.scales.ORDERED_VARIANT (host ids page by page)."""
    if how == "ordered":
        from .scales import ORDERED_VARIANT

        args = args[:9] + (ORDERED_VARIANT,) + args[10:]
    return args + (0, False, False, True)


def _derived(plan, name, make):
    """What a plan derives from its ids (their upload, the staged form, sorted or touched
    pages), made on first use and kept under torch's version counters of the ids, so ids
    changed in place are derived again; made every time for inference tensors (no counter)."""
    from .scales import versions

    key = versions(plan.src_idx, plan.dst_idx)
    if key is None:
        return make()
    cache = plan._cache = getattr(plan, "_cache", None) or {}
    hit = cache.get(name)
    if hit is None or hit[0] != key:
        hit = cache[name] = (key, make())
    return hit[1]


def _plan_ids(plan, dev):
    """The plan's ids on the device, uploaded once per plan (cpu ids): a per-launch upload
    cost 0.3-0.7 ms of a 128 MB host transfer (NOTES.md run 8), a pageable one a host wait
    for the stream."""
    si, di = plan.src_idx, plan.dst_idx
    if plan.dev_ids is not None:      # host copies of device ids (kernels.reuse)
        return plan.dev_ids
    if si.device == dev and di.device == dev:
        return si, di
    if si.device.type == "cpu" and di.device.type == "cpu":
        return _derived(plan, "ids", lambda: device_indices(si, di, dev))
    # one side on the device already: the other in one pinned copy
    return _derived(plan, "ids", lambda: tuple(
        t if t.device == dev else t.pin_memory().to(dev, non_blocking=True) for t in (si, di)))


def _plan_blocks(plan, si_dev, dev):
    """(ids of the host pages the plan touches, on the device; pages touched): read from cpu
    ids, marked on the device for device ids (the count an estimate: random)."""
    from . import scales as _scales

    ids, ps, pages = plan.src_idx, plan.page_size, plan.src_shape.num_pages

    def make():
        if ids.device.type == "cpu":
            touched_pages, touched = _scales.block_ids(ids, ps)
            return touched_pages.pin_memory().to(dev, non_blocking=True), touched
        return (_scales.device_block_ids(si_dev, ps, pages, pages * ps, load()),
                _scales.random_pages(ids.numel(), pages))

    return _derived(plan, "blocks", make)


def _h2d_scale_path(plan, scales: str):
    """"h2d" (2D copy of the whole region), "blocks" (the touched pages' blocks), "ordered"
    (cpu ids page by page: one launch, kernels.scales.ORDERED_VARIANT) or None."""
    from . import scales as _scales

    if scales in ("always", "serial"):
        return "h2d"
    if scales in ("blocks", "blocks-serial"):
        return "blocks"
    geo, n, ps, shape = plan.geometry, plan.src_idx.numel(), plan.page_size, plan.src_shape
    if plan.src_idx.device.type != "cpu":
        return _scales.device_ids_path(geo, shape, n, ps)
    touched, runs = _plan_page_stats(plan)
    if _scales.page_grouped(touched, runs):
        return "ordered"
    return _scales.h2d_path(geo, shape, n, ps, touched)


def _plan_page_stats(plan) -> tuple[int, int]:
    """(host pages the plan's cpu ids touch, runs of one page in their order)."""
    from .scales import host_page_stats

    return _derived(plan, "touched", lambda: host_page_stats(plan.src_idx, plan.page_size))


def _scale_path(plan, variant: int, scales: str):
    """"h2d", "blocks", "ordered", "order" (kernels.scales) or None: how the plan's scales
    move."""
    geo = plan.geometry
    if (scales == "never" or plan.buggy or plan.granularity != "token" or geo.scale_bytes == 0
            or plan.src_idx.numel() == 0):
        return None
    forced = scales != "auto"
    if plan.src.device.type == "cpu" and plan.dst.device.type == "cuda":
        if forced or variant < 0:
            return _h2d_scale_path(plan, scales)
        return None
    if plan.src.device.type == "cuda" and plan.dst.device.type == "cuda":
        # fp8 rows gained 9 points of the copy in page order from ~64 MB; c4 rows nothing
        from .scales import wants_page_order

        if forced or (variant < 0 and wants_page_order(geo, plan.src_idx.numel(),
                                                        plan.src_shape.num_layers)):
            return "order"
    return None
