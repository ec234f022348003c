"""torch is an optional dependency: `pip install wb` drives local and SSH targets without it, while pdsim (the
embedded deployment, the shipped experiments' default target) and the transfer kernel need it
(`pip install 'wb[sim]'`, or scripts/setup.sh, which installs the CPU build first).

Kept optional because on Linux a plain torch requirement pulls the CUDA build (several GB) into every
install, including those of teams whose targets are their own servers over SSH."""

from __future__ import annotations

from workbench.errors import BadInput

CPU_TORCH = "pip install torch --index-url https://download.pytorch.org/whl/cpu"


class MissingDependency(BadInput):
    """A part of wb needs a package that is not installed here; nothing was run or written."""


def require_torch(what: str) -> None:
    """Refuse `what` before it starts when torch cannot be imported (rather than a traceback half-way)."""
    import importlib.util

    try:
        found = importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise MissingDependency(f"{what} needs torch, which is not installed here",
                                hint=f"install its CPU build: {CPU_TORCH} (scripts/setup.sh does); local and "
                                     "ssh targets run without it")
