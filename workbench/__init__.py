"""wb: a workbench for hypothesis-driven debugging of ML inference deployments."""

__version__ = "0.1.0"

from workbench import _kernels_alias

_kernels_alias.install()
