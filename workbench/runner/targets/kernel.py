"""The `kernel` target: the kernel-level geometry experiment on this machine's torch, one call per run.

Both arms of a block share a data seed (a paired comparison); blocks get different seeds, so
replicates are independent draws rather than copies.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from workbench.errors import TargetError
from workbench.runner.targets.local import LocalTarget

KERNEL_METRICS = ("corrupted_tokens", "mismatch_bytes", "tokens", "bytes")


def _on(value: Any) -> bool:
    return str(value).lower() in ("on", "true", "1", "yes")


class KernelTarget(LocalTarget):
    kind = "kernel"

    def __init__(self, options: dict[str, Any]) -> None:
        super().__init__(["local"])
        self.options = options

    def run_seed(self, variables: dict[str, str], replicate: int) -> int:
        return int(variables.get("seed", "0") or 0) * 100_003 + replicate

    async def run_arm(self, variables: dict[str, str], replicate: int) -> tuple[dict[str, float], dict[str, Any]]:
        """(metrics, fingerprint additions) for one run of the geometry A/B."""
        try:
            from wb_kernels.experiment import run_geometry_arm
        except ImportError as exc:
            raise TargetError(f"the kernel experiment is not available: {exc}",
                              hint="kernels.experiment.run_geometry_arm ships with the kernels package") from exc
        seed = self.run_seed(variables, replicate)
        kwargs: dict[str, Any] = {"geometry_fix": _on(variables.get("geometry_fix", "off")), "seed": seed,
                                  "partial_pages": _on(variables.get("partial_pages", "on"))}
        if "tokens" in self.options:
            kwargs["tokens"] = int(self.options["tokens"])
        if "impl" in self.options:
            kwargs["impl"] = str(self.options["impl"])
        t0 = time.monotonic()
        try:
            result = await asyncio.to_thread(run_geometry_arm, **kwargs)
        except Exception as exc:
            raise TargetError(f"run_geometry_arm failed: {type(exc).__name__}: {exc}") from exc
        finally:
            self.clock.add("local", time.monotonic() - t0)
        metrics = {k: float(result[k]) for k in KERNEL_METRICS if k in result}
        extra = {"kernel_impl": result.get("impl"), "kernel_device": result.get("device"), "run_seed": seed}
        return metrics, extra
