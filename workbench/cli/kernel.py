"""`wb kernel check|bench`: the transfer kernel's byte-exact check and its benchmark."""

from __future__ import annotations

from typing import Any, Callable

import typer

from workbench.cli._common import comma_items, new_app, print_json

app = new_app("The index-K transfer kernel: check it byte for byte, benchmark it.")

IMPLS = ("auto", "cuda", "reference")


def _with_status(json_out: bool, work: Callable[[Callable[[str], None] | None], Any]) -> Any:
    """Run `work(progress)` under a status line on stderr, or silently when output must stay machine-readable."""
    if json_out:
        return work(None)
    from rich.console import Console

    from workbench.settings import colour_system

    with Console(stderr=True, color_system=colour_system()).status("starting") as status:
        return work(status.update)


@app.command()
def check(
    impl: str = typer.Option("auto", help="auto (CUDA kernel when a GPU is here), cuda, reference."),
    seed: int = typer.Option(0, help="Seed of the random pools and index sets."),
    quick: bool = typer.Option(False, help="Smaller 'large' cases."),
    json_out: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Build if needed, then compare every case byte for byte against an independent copy."""
    from workbench.app import Workbench
    from workbench.errors import BadInput, RunFailure
    from workbench.optional import require_torch

    if impl not in IMPLS:
        from workbench.registry.common import did_you_mean

        # Any other word checked the reference and said PASS, as if the implementation named had been checked.
        raise BadInput(f"--impl {impl!r} is not one of {', '.join(IMPLS)}",
                       hint=did_you_mean(impl, IMPLS) or "e.g. --impl cuda on a GPU machine")
    require_torch("wb kernel check")

    report = _with_status(json_out, lambda progress: Workbench.kernel_check(impl=impl, seed=seed, quick=quick,
                                                                            progress=progress))
    if json_out:
        print_json(report.as_dict())
    else:
        typer.echo("\n".join(report.summary()))
    if not report.ok:
        raise RunFailure("the kernel check found differences",
                         hint="see the FAIL lines above; rerun with --seed to reproduce")


@app.command()
def bench(
    quick: bool = typer.Option(False, help="Small pools and few repeats (a smoke run)."),
    variants: str | None = typer.Option(
        None, help="Comma-separated kernel variant numbers to time (default: 0,1,12,13,16,17,18,19,23,24 device to "
                   "device, 0,1,13,16,17,19,23 to and from the host)."),
    layers: int = typer.Option(4, help="Layers per pool."),
    json_out: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Time the CUDA kernel against the copy ceilings and the torch baseline (needs a GPU)."""
    from workbench.app import Workbench
    from workbench.errors import BadInput
    from workbench.optional import require_torch

    chosen = None  # the usual set (kernels/bench.py D2D_VARIANTS, HOST_VARIANTS)
    if variants is not None:
        if not variants.strip():  # `--variants "$V"` with V unset would time the usual set as if it were asked for
            raise BadInput(f"--variants {variants!r}: names no variant",
                           hint="e.g. --variants 0,1, or leave --variants out for the usual set", where="--variants")
        items = comma_items("--variants", variants, hint="e.g. --variants 0,1, or leave --variants out for the usual "
                                                         "set")
        try:
            chosen = [int(v) for v in items]
        except ValueError:
            raise BadInput(f"--variants {variants!r}: not a list of whole numbers",
                           hint="give variant numbers from 0, comma-separated, e.g. --variants 0,1; leave --variants "
                                "out for the usual set", where="--variants") from None
        negative = [v for v in chosen if v < 0]
        if negative:  # the kernel ran its default for a number it lacks; how many it has is known once it is built
            raise BadInput(f"--variants {variants!r}: {negative[0]} is not a variant number (they count from 0 to "
                           "one less than the built kernel's count)",
                           hint="e.g. --variants 0,1; the bench's output lists the variants by number",
                           where="--variants")
    require_torch("wb kernel bench")
    report = _with_status(json_out, lambda progress: Workbench.kernel_bench(quick=quick, variants=chosen,
                                                                            layers=layers, progress=progress))
    if json_out:
        print_json(report.as_dict())
    else:
        typer.echo("\n".join(report.table()))
