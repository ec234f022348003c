"""Transition: the kernel sources still import each other as `kernels.*`; they install as `wb_kernels`.

The name `kernels` belongs to another distribution on PyPI, so the CUDA sources install as
`wb_kernels`. Until their own imports are relative, this finder answers `kernels` and `kernels.*`
with the `wb_kernels` modules. It is consulted after every other finder, so an installed
distribution called `kernels` is never shadowed. Remove it once kernels/ imports relatively.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from types import ModuleType
from typing import Any


class _KernelsAlias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "kernels" and not name.startswith("kernels."):
            return None
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec: Any) -> ModuleType:
        return importlib.import_module("wb_" + spec.name)

    def exec_module(self, module: ModuleType) -> None:
        """The `wb_kernels` module is already executed."""


def install() -> None:
    if not any(isinstance(f, _KernelsAlias) for f in sys.meta_path):
        sys.meta_path.append(_KernelsAlias())
