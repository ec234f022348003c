"""`wb kernel check`: byte-exact comparison of an implementation against an independent one.

With a CUDA device: the CUDA kernel against the torch reference (on cpu copies), for every
geometry x layout x granularity x direction x index-set kind, plus the buggy stride mode and
bad inputs. Without one: the torch reference against a per-segment slicing oracle.
Each case runs twice, on two complementary poisons, so an unwritten byte cannot hide.
"""

from __future__ import annotations

from contextlib import contextmanager

import time
from dataclasses import dataclass, field

from .cases import SET_KINDS, index_set, make_pool, poison
from .geometry import GEOMETRIES, LAYOUTS, PoolShape

__all__ = ["run_check", "CheckReport", "CaseResult", "oracle_transfer", "not_checked"]


@dataclass
class CaseResult:
    group: str          # transfer | buggy | bad-input
    name: str
    ok: bool
    mismatch_bytes: int = 0
    bytes: int = 0
    note: str = ""


@dataclass
class CheckReport:
    impl: str
    against: str
    device: str
    seed: int
    cases: list[CaseResult] = field(default_factory=list)
    seconds: float = 0.0
    bug_reproduced: tuple[int, int] = (0, 0)   # (cases with mismatches > 0, cases)
    quick: bool = False
    not_checked: tuple[str, ...] = ()          # what this PASS does not cover, each with its reason

    @property
    def ok(self) -> bool:
        hits, total = self.bug_reproduced
        return all(c.ok for c in self.cases) and hits == total

    def summary(self) -> list[str]:
        lines = [f"wb kernel check: {self.impl} against {self.against} on {self.device} "
                 f"(seed {self.seed}, {self.seconds:.1f} s)"]
        for group, label in (("transfer", "transfer cases byte-exact"),
                             ("buggy", "buggy-mode cases byte-exact"),
                             ("bad-input", "bad inputs rejected, nothing moved"),
                             ("device-checked", "bad device ids reported afterwards, "
                              "only valid rows moved")):
            cs = [c for c in self.cases if c.group == group]
            if not cs:
                continue
            good = sum(c.ok for c in cs)
            mb = sum(c.bytes for c in cs) / 1e6
            extra = f" ({mb:.1f} MB compared)" if group != "bad-input" else ""
            lines.append(f"  {label}: {good}/{len(cs)}{extra}")
        hits, total = self.bug_reproduced
        lines.append(f"  index_k_bf16 rows with c4_latent strides, token granularity: "
                     f"mismatches > 0 in {hits}/{total} cases; 0 with the right geometry")
        if self.quick:
            lines.append("  --quick: the large cases were made smaller (leave --quick out for the full check)")
        lines.extend(f"  not checked: {what}" for what in self.not_checked)
        for c in self.cases:
            if not c.ok:
                lines.append(f"  FAIL {c.group} {c.name}: {c.mismatch_bytes} bytes differ {c.note}")
        lines.append("PASS" if self.ok else "FAIL")
        return lines

    def as_dict(self) -> dict:
        return {"impl": self.impl, "against": self.against, "device": self.device,
                "seed": self.seed, "ok": self.ok, "seconds": round(self.seconds, 2),
                "bug_reproduced": list(self.bug_reproduced), "quick": self.quick,
                "not_checked": list(self.not_checked),
                "groups": {g: {"cases": sum(c.group == g for c in self.cases),
                               "ok": sum(c.ok for c in self.cases if c.group == g)}
                           for g in ("transfer", "buggy", "bad-input", "device-checked")},
                "failures": [c.__dict__ for c in self.cases if not c.ok]}


def mismatched_bytes(got, want) -> int:
    """How many bytes of `got` differ from `want` (tensors of one shape and dtype). Nearly every case matches:
    torch.equal compares them at memory speed, and only a mismatch is counted element by element (a `!=` tensor
    and its sum took a quarter of `check --quick`'s CPU)."""
    import torch

    if got.shape == want.shape and got.dtype == want.dtype and torch.equal(got, want):
        return 0
    return int((got != want).sum())


def oracle_transfer(src, dst, src_idx, dst_idx, *, geometry: str, granularity: str,
                    layout: str, page_size: int, stride_geometry: str | None = None) -> None:
    """Slow, obviously-correct copy: one slice assignment per pair, layer and segment."""
    addr = GEOMETRIES[stride_geometry or geometry]
    fs, fd = src.reshape(-1), dst.view(-1)
    s_shape = PoolShape.of(tuple(src.shape), layout)
    d_shape = PoolShape.of(tuple(dst.shape), layout)
    row = addr.page_bytes(page_size)
    sv = PoolShape(layout, s_shape.num_pages, s_shape.num_layers, row)
    dv = PoolShape(layout, d_shape.num_pages, d_shape.num_layers, row)
    for a, b in zip(src_idx.tolist(), dst_idx.tolist()):
        for layer in range(s_shape.num_layers):
            if granularity == "page":
                segs, (sp, ss), (dp, ds) = [(0, 0, row)], (a, 0), (b, 0)
            else:
                segs, (sp, ss), (dp, ds) = addr.segments(page_size), divmod(a, page_size), divmod(b, page_size)
            for base, stride, length in segs:
                so = sv.row_index(sp, layer) * row + base + ss * stride
                do = dv.row_index(dp, layer) * row + base + ds * stride
                n = max(0, min(length, fs.numel() - so, fd.numel() - do))
                if n:
                    fd[do:do + n] = fs[so:so + n]


def _resolve(impl: str):
    """(implementation under test, what it is compared with, device string)."""
    import torch

    from . import build

    if impl in ("auto", "cuda"):
        if torch.version.cuda is not None and torch.cuda.is_available():
            build.load(verbose=False)   # raises KernelError with the compiler's message
            return "cuda", "reference", torch.cuda.get_device_name(0)
        if impl == "cuda":
            from workbench.errors import KernelError

            raise KernelError("no CUDA device here: " + build.unavailable_reason(),
                              hint="run without --impl cuda to check the reference", where="--impl")
    return "reference", "oracle", "cpu"


def not_checked(impl: str, under: str) -> list[str]:
    """What a check of `under` (asked for as `impl`) leaves out: the CUDA kernel, unless it is what ran."""
    if under == "cuda":
        return []
    if impl == "reference":
        return ["the CUDA kernel: --impl reference checks the torch reference against the slicing oracle "
                "(leave --impl out to check the kernel on this machine's GPU)"]
    from . import build

    return [f"the CUDA kernel: no CUDA device here: {build.unavailable_reason()} (the torch reference was "
            "checked against the slicing oracle; on a GPU machine: OUT=dir bash kernels/gpu_check.sh)"]


class _Runner:
    def __init__(self, impl: str, against: str, gen):
        self.impl, self.against, self.gen = impl, against, gen
        self.cuda = impl == "cuda"

    def place(self, t, where: str):
        """where: 'dev' or 'host' (pinned when the CUDA kernel is under test)."""
        if not self.cuda:
            return t.clone()
        if where == "dev":
            return t.to("cuda")
        return t.clone().pin_memory()

    def expected(self, src, dst0, si, di, kw):
        from .reference import reference_transfer

        out = dst0.clone()
        if self.against == "reference":
            reference_transfer(src, out, si, di, geometry=GEOMETRIES[kw["geometry"]],
                               granularity=kw["granularity"], layout=kw["layout"],
                               page_size=kw["page_size"],
                               stride_geometry=GEOMETRIES[kw["stride_geometry"]]
                               if kw.get("stride_geometry") else None)
        else:
            oracle_transfer(src, out, si, di, **kw)
        return out

    def one(self, direction: str, src, si, di, dst_pages: int, kw, idx_on_device: bool,
            staging: str = "auto", variant: int = -1, scales: str = "auto"):
        """Run one case on two complementary poisons.

        Returns (mismatching bytes, bytes compared, output on the first poison, that poison).
        """
        import torch

        from . import transfer

        d_shape = list(src.shape)
        d_shape[0 if kw["layout"] == "page_first" else 1] = dst_pages
        p_a = poison(tuple(d_shape), self.gen)
        s_where, d_where = {"d2d": ("dev", "dev"), "d2h": ("dev", "host"),
                            "h2d": ("host", "dev"), "h2h": ("host", "host")}[direction]
        src_t = self.place(src, s_where)
        mismatch, compared, got_a = 0, 0, None
        for p in (p_a, p_a ^ 0xFF):
            dst_t = self.place(p, d_where)
            a, b = si, di
            if self.cuda and idx_on_device:
                a, b = si.to("cuda"), di.to("cuda")
            if staging == "auto" and variant < 0 and scales == "auto":
                transfer(src_t, dst_t, a, b, impl=self.impl, **kw)
            else:   # force a path: staged (DMA) host pages, zero copy, scales apart or not
                from . import api, build

                plan = api.plan_transfer(src_t, dst_t, a, b, impl=self.impl, **kw)
                build.launch(plan, variant, staging=staging, scales=scales)
            if self.cuda:
                torch.cuda.synchronize()
            got = dst_t.cpu()
            want = self.expected(src, p, si, di, kw)
            mismatch += mismatched_bytes(got, want)
            compared += got.numel()
            got_a = got if got_a is None else got_a
        return mismatch, compared, got_a, p_a


def _transfer_cases(r: _Runner, report: CheckReport, directions, quick: bool, progress):
    gen = r.gen
    big = r.cuda and not quick
    layers = 3
    cases = []
    for geometry in GEOMETRIES:
        for layout in LAYOUTS:
            for gran in ("token", "page"):
                for direction in directions:
                    for kind in SET_KINDS:
                        if gran == "page" and kind in ("partial", "scattered"):
                            continue
                        cases.append((geometry, layout, gran, direction, kind, 64))
                # odd page sizes: vector widths fall back to 8, 4 or 1 bytes
                for ps in ((3,) if quick else (3, 16)):
                    cases.append((geometry, layout, "token", directions[-1], "partial", ps))
                    cases.append((geometry, layout, "page", directions[0], "aligned", ps))
    for k, (geometry, layout, gran, direction, kind, ps) in enumerate(cases):
        if progress:
            progress(f"transfer {geometry} {layout} {gran} {direction} {kind} ps={ps}")
        if kind == "large" and big:
            sp_, dp_ = 384, 320
        elif kind == "large":
            sp_, dp_ = 24, 20
        else:
            sp_, dp_ = 40, 32
        if r.against == "oracle" and kind == "large" and gran == "token":
            count = 300 if quick else 1500   # the slicing oracle is slow
        else:
            count = None
        src = make_pool(geometry, layout, sp_, layers, ps, gen=gen)
        si, di = index_set(kind, granularity=gran, src_pages=sp_, dst_pages=dp_, page_size=ps,
                           gen=gen, count=count)
        kw = dict(geometry=geometry, granularity=gran, layout=layout, page_size=ps)
        bad, compared, _, _ = r.one(direction, src, si, di, dp_, kw,
                                    idx_on_device=bool(k % 2))
        report.cases.append(CaseResult("transfer", f"{geometry} {layout} {gran} {direction} "
                                       f"{kind} n={si.numel()} ps={ps}", bad == 0, bad, compared))
        if r.cuda and direction in ("d2h", "h2d") and kind in ("aligned", "large", "partial"):
            for staging in ("always", "never"):
                bad, compared, _, _ = r.one(direction, src, si, di, dp_, kw,
                                            idx_on_device=False, staging=staging)
                report.cases.append(CaseResult(
                    "transfer", f"{geometry} {layout} {gran} {direction} {kind} "
                    f"n={si.numel()} ps={ps} staging={staging}", bad == 0, bad, compared))


def _variant_cases(r: _Runner, report: CheckReport, progress):
    """Every kernel variant (the benchmark times them all), device to device."""
    from . import build

    for v in range(len(build.load().variants())):
        for geometry in GEOMETRIES:
            for layout, gran, kind in (("page_first", "token", "scattered"),
                                       ("layer_first", "token", "partial"),
                                       ("page_first", "page", "aligned")):
                if progress:
                    progress(f"variant {v} {geometry} {layout} {gran} {kind}")
                src = make_pool(geometry, layout, 40, 3, 64, gen=r.gen)
                si, di = index_set(kind, granularity=gran, src_pages=40, dst_pages=32,
                                   page_size=64, gen=r.gen)
                kw = dict(geometry=geometry, granularity=gran, layout=layout, page_size=64)
                bad, compared, _, _ = r.one("d2d", src, si, di, 32, kw, idx_on_device=True,
                                            staging="never", variant=v)
                report.cases.append(CaseResult("transfer", f"variant {v} {geometry} {layout} "
                                               f"{gran} {kind} n={si.numel()}", bad == 0, bad,
                                               compared))


def _scale_cases(r: _Runner, report: CheckReport, progress):
    """Scales moved apart from the values (kernels.scales): host to device through the 2D
    copy (overlapped, serial, and through transfer() with device ids), device to device in
    page order (on a plan, and through transfer() handed the same ids again)."""
    from . import scales

    # Constants forced per run: every transfer() call takes the touched pages' blocks (its
    # form for device ids of the 2D copy's choice, or by wants_blocks), or, chosen on the
    # device: one launch as for ids page by page ("grouped"), or the default launch.
    forced = {"transfer": dict(SCALE_DMA_BYTES_PER_ROW=1 << 40, ORDER_SLACK=0),
              "transfer-blocks": dict(BLOCK_MARGIN=0, BLOCK_FRACTION=2, ORDER_SLACK=0),
              "transfer-grouped": dict(ORDER_SLACK=1e9),
              "transfer-default": dict(ORDER_SLACK=0, BLOCK_MARGIN=1e9,
                                       SCALE_DMA_BYTES_PER_ROW=0)}
    for geometry in ("c4_latent", "index_k_fp8"):
        for layout in LAYOUTS:
            for kind in ("scattered", "large", "partial"):
                src = make_pool(geometry, layout, 40, 3, 64, gen=r.gen)
                si, di = index_set(kind, granularity="token", src_pages=40, dst_pages=32,
                                   page_size=64, gen=r.gen)
                kw = dict(geometry=geometry, granularity="token", layout=layout, page_size=64)
                name = f"{geometry} {layout} token {kind} n={si.numel()}"
                runs = [("h2d", "always", False), ("h2d", "serial", True), ("d2d", "always", True),
                        ("h2d", "transfer", True), ("h2d", "blocks", False),
                        ("h2d", "blocks", True), ("h2d", "transfer-blocks", True),
                        ("h2d", "transfer-grouped", True), ("h2d", "transfer-default", True),
                        ("d2h", "transfer-grouped", True), ("d2h", "transfer-default", True)]
                for direction, how, on_dev in runs:
                    if progress:
                        progress(f"scales {name} {direction} {how}")
                    api = how.startswith("transfer")
                    with _patched(scales, **forced.get(how, {})):
                        bad, compared, _, _ = r.one(
                            direction, src, si, di, 32, kw, on_dev,
                            staging="auto" if api else "never",
                            scales="auto" if api else how)
                    report.cases.append(CaseResult("transfer", f"{name} {direction} scales={how}",
                                                   bad == 0, bad, compared))
                # transfer() handed the same device ids again: page order from the second call
                # (whatever the size, for the check)
                dst = make_pool(geometry, layout, 32, 3, 64, gen=r.gen).cuda()
                a, b = si.cuda(), di.cuda()
                # (the scale passes beside the values, as by default, or after them)
                for how, forced in (("", {}), (", scales after the values", dict(ORDER_OVERLAP=False))):
                    with _patched(scales, PAGE_ORDER_MIN_BYTES=0, WIDE_ORDER_MIN_BYTES=0, **forced):
                        bad, compared = _same_ids(r, src, src.cuda(), dst, si, di, a, b, kw,
                                                  (dst.cpu(), dst.cpu(), dst.cpu() ^ 0xFF))
                    report.cases.append(CaseResult(
                        "transfer", f"{name} d2d transfer() same ids x3{how}", bad == 0, bad,
                        compared))
                # new id tensors each call: page order sorted on the device per call, by
                # either sort; or the values, then the scales in the ids' order (no sort)
                for how, forced in (("page order per call, radix sort",
                                     dict(NEW_ORDER_MIN_BYTES=0, ORDER_SORT="radix")),
                                    ("page order per call, count sort",
                                     dict(NEW_ORDER_MIN_BYTES=0, ORDER_SORT="count")),
                                    ("page order per call, count sort, scales after the values",
                                     dict(NEW_ORDER_MIN_BYTES=0, ORDER_SORT="count", ORDER_OVERLAP=False)),
                                    ("values, then scales in the ids' order",
                                     dict(SPLIT_MIN_BYTES=0))):
                    with _patched(scales, **forced):
                        bad, compared = _new_ids(r, src, src.cuda(), dst, si, di, kw,
                                                 (dst.cpu(), dst.cpu() ^ 0xFF))
                    report.cases.append(CaseResult(
                        "transfer", f"{name} d2d transfer() new ids x2 ({how})", bad == 0, bad,
                        compared))
                # host to device, the same ids again: checked, then read on the host and run
                # as their plan (kernels.reuse: exact page count and order); blocks forced
                # where not page by page
                with _patched(scales, BLOCK_MARGIN=0, BLOCK_FRACTION=2):
                    bad, compared = _same_ids(r, src, src.clone().pin_memory(), dst, si, di, a, b, kw,
                                              (dst.cpu(), dst.cpu() ^ 0x5A, dst.cpu(), dst.cpu() ^ 0xFF))
                report.cases.append(CaseResult("transfer", f"{name} h2d transfer() same ids x4",
                                               bad == 0, bad, compared))


@contextmanager
def _patched(module, **values):
    """The module's constants set to `values` for the block, restored after it however it ends."""
    keep = {name: getattr(module, name) for name in values}
    for name, value in values.items():
        setattr(module, name, value)
    try:
        yield
    finally:
        for name, value in keep.items():
            setattr(module, name, value)


def _same_ids(r: _Runner, src, src_arg, dst, si, di, a, b, kw, starts) -> tuple[int, int]:
    """transfer() called once per destination start in `starts` with the same id tensors, each
    result compared with the reference: (bytes wrong, bytes compared)."""
    import torch

    from . import transfer

    bad = compared = 0
    for p in starts:
        dst.copy_(p)
        transfer(src_arg, dst, a, b, impl="cuda", **kw)
        torch.cuda.synchronize()
        bad += mismatched_bytes(dst.cpu(), r.expected(src, p, si, di, kw))
        compared += dst.numel()
    return bad, compared


def _new_ids(r: _Runner, src, src_arg, dst, si, di, kw, starts) -> tuple[int, int]:
    """As `_same_ids` with new device copies of the ids on every call."""
    import torch

    from . import transfer

    bad = compared = 0
    for p in starts:
        dst.copy_(p)
        transfer(src_arg, dst, si.cuda(), di.cuda(), impl="cuda", **kw)
        torch.cuda.synchronize()
        bad += mismatched_bytes(dst.cpu(), r.expected(src, p, si, di, kw))
        compared += dst.numel()
    return bad, compared


def _buggy_cases(r: _Runner, report: CheckReport, directions, progress):
    from .reference import reference_transfer

    gen = r.gen
    hits = total = 0
    pairs = [("index_k_bf16", "c4_latent"), ("c4_latent", "index_k_bf16"),
             ("index_k_fp8", "c4_latent"), ("index_k_bf16", "index_k_fp8")]
    for geometry, addr in pairs:
        main = (geometry, addr) == ("index_k_bf16", "c4_latent")
        for layout in LAYOUTS:
            for gran in ("token", "page"):
                kinds = ("partial", "scattered", "one", "aligned") if gran == "token" else ("aligned", "one")
                for direction in (directions if main else directions[:1]):
                    for kind in kinds:
                        if progress:
                            progress(f"buggy {geometry} with {addr} {layout} {gran} {direction} {kind}")
                        sp_, dp_ = 24, 20
                        src = make_pool(geometry, layout, sp_, 2, 64, gen=gen)
                        si, di = index_set(kind, granularity=gran, src_pages=sp_, dst_pages=dp_,
                                           page_size=64, gen=gen)
                        kw = dict(geometry=geometry, granularity=gran, layout=layout,
                                  page_size=64, stride_geometry=addr)
                        bad, compared, got, p_a = r.one(direction, src, si, di, dp_, kw,
                                                        idx_on_device=False)
                        note = ""
                        ok = bad == 0
                        if main and gran == "token":
                            # The bug must show: compare with the right-geometry copy.
                            total += 1
                            right = p_a.clone()
                            reference_transfer(src, right, si, di,
                                               geometry=GEOMETRIES[geometry], granularity=gran,
                                               layout=layout, page_size=64)
                            diff = mismatched_bytes(right, got)
                            hits += diff > 0
                            note = f"(vs right geometry: {diff} bytes differ)"
                        report.cases.append(CaseResult(
                            "buggy", f"{geometry} with {addr} strides {layout} {gran} "
                            f"{direction} {kind} n={si.numel()}", ok, bad, compared, note))
    report.bug_reproduced = (hits, total)


def _bad_inputs(r: _Runner, report: CheckReport):
    """Each bad call must raise KernelError and leave dst exactly as it was."""
    import torch

    from . import transfer
    from workbench.errors import KernelError

    gen = r.gen
    g, lay, ps = "index_k_fp8", "page_first", 64
    src = r.place(make_pool(g, lay, 8, 2, ps, gen=gen), "dev")
    dst0 = make_pool(g, lay, 6, 2, ps, gen=gen)
    ok_s, ok_d = torch.tensor([1, 2, 3]), torch.tensor([4, 5, 6])
    kw = dict(geometry=g, granularity="token", layout=lay, page_size=ps, impl=r.impl)
    cases = [
        ("src id out of range", dict(src_idx=torch.tensor([1, 2, 8 * ps]))),
        ("negative dst id", dict(dst_idx=torch.tensor([4, -1, 6]))),
        ("int32 indices", dict(src_idx=ok_s.to(torch.int32))),
        ("2-D indices", dict(src_idx=ok_s.view(1, 3), dst_idx=ok_d.view(1, 3))),
        ("lengths differ", dict(dst_idx=torch.tensor([4, 5]))),
        ("duplicate destinations", dict(dst_idx=torch.tensor([4, 5, 4]))),
        ("page id out of range", dict(granularity="page", src_idx=torch.tensor([0]),
                                      dst_idx=torch.tensor([6]))),
        ("row size of another geometry", dict(geometry="index_k_bf16")),
        ("page size mismatch", dict(page_size=32)),
        ("unknown geometry", dict(geometry="fp4")),
        ("unknown stride geometry", dict(stride_geometry="fp4")),
        ("float pool", dict(src=src.float())),
        ("layer counts differ", dict(src=r.place(make_pool(g, lay, 8, 3, ps, gen=gen), "dev"))),
    ]
    if r.cuda:
        cases += [
            ("host pool not pinned", dict(dst="unpinned")),
            ("indices on another device kind", dict(src_idx="meta")),
            ("impl cuda with host-only pools", dict(src=src.cpu(), dst="host-plain")),
        ]
    else:
        cases += [("impl cuda without a GPU", dict(impl="cuda"))]
    for name, over in cases:
        dst = r.place(dst0, "dev")
        args = dict(src=src, dst=dst, src_idx=ok_s, dst_idx=ok_d, **kw)
        args.update(over)
        if args["dst"] in ("unpinned", "host-plain"):
            args["dst"] = dst0.clone()
            dst = args["dst"]
        if isinstance(args["src_idx"], str):
            args["src_idx"] = ok_s.to("meta")
        before = dst.cpu().clone()
        try:
            transfer(args.pop("src"), args.pop("dst"), args.pop("src_idx"), args.pop("dst_idx"),
                     **args)
            ok, note = False, "no error raised"
        except KernelError as exc:
            if r.cuda:
                torch.cuda.synchronize()
            ok, note = torch.equal(dst.cpu(), before), f"KernelError: {exc.message}"
        except Exception as exc:  # anything else is a defect of the validation
            ok, note = False, f"{type(exc).__name__}: {exc}"
        report.cases.append(CaseResult("bad-input", name, ok, 0, 0, note))


def run_check(*, impl: str = "auto", seed: int = 0, quick: bool = False,
              progress=None) -> CheckReport:
    """Run every case; never raises for a mismatch (the report says), only for a failed build."""
    import torch

    from .check_ids import device_checked_cases, reuse_cases

    under, against, device = _resolve(impl)
    gen = torch.Generator().manual_seed(seed)
    report = CheckReport(impl=under, against=against, device=device, seed=seed, quick=quick,
                         not_checked=tuple(not_checked(impl, under)))
    r = _Runner(under, against, gen)
    directions = ("d2d", "d2h", "h2d") if r.cuda else ("h2h",)
    t0 = time.perf_counter()
    _transfer_cases(r, report, directions, quick, progress)
    if r.cuda:
        _variant_cases(r, report, progress)
        _scale_cases(r, report, progress)
        reuse_cases(r, report, progress)
    _buggy_cases(r, report, directions, progress)
    _bad_inputs(r, report)
    if r.cuda:
        device_checked_cases(r, report)
    report.seconds = time.perf_counter() - t0
    return report
