"""torch for the kernel tests, imported at its first use rather than when the file is collected.

Every xdist worker imports every test file to collect it; torch's import is ~2 s of CPU, which a worker that
runs none of these tests need not pay. `torch` here is a stand-in whose attributes are torch's."""

from __future__ import annotations

from typing import Any

__all__ = ["torch", "reference_transfer"]


class _Torch:
    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):    # pytest's collection asks every module global for such names (_mock_name)
            raise AttributeError(name)
        import torch

        return getattr(torch, name)


torch: Any = _Torch()


def reference_transfer(*args: Any, **kwargs: Any) -> None:
    """wb_kernels.reference.reference_transfer (that module imports torch when it is imported)."""
    from wb_kernels.reference import reference_transfer as run

    run(*args, **kwargs)
