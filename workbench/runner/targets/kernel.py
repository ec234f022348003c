"""The `kernel` target: the kernel-level geometry experiment on this machine's torch, one call per run.

The profile's options are the call's keyword arguments, declared in the experiment file like any
other target's commands: a value may name experiment variables (`geometry_fix: "{{ geometry_fix }}"`),
"on"/"off" become booleans and whole numbers integers. Both arms of a block share a data seed (a
paired comparison); blocks get different seeds, so replicates are independent draws, not copies.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from typing import Any

from workbench.errors import BadInput, TargetError
from workbench.runner.render import render_text
from workbench.runner.targets.local import LocalTarget

KERNEL_METRICS = ("corrupted_tokens", "mismatch_bytes", "tokens", "bytes")
BOOLEANS = {"on": True, "true": True, "yes": True, "off": False, "false": False, "no": False}


def _argument(value: Any) -> Any:
    text = str(value)
    if text.lower() in BOOLEANS:
        return BOOLEANS[text.lower()]
    try:
        return int(text)
    except ValueError:
        return text


class KernelTarget(LocalTarget):
    kind = "kernel"
    check_restart = False  # wb restarts it itself

    def __init__(self, options: dict[str, Any]) -> None:
        from workbench.optional import require_torch

        require_torch("the kernel target")
        super().__init__(["local"])
        self.options = options

    def run_seed(self, variables: dict[str, str], replicate: int) -> int:
        return int(variables.get("seed", "0") or 0) * 100_003 + replicate

    def arguments(self, variables: dict[str, str], replicate: int) -> dict[str, Any]:
        """The call's keyword arguments: every profile option, rendered with the run's variables."""
        kwargs = {name: _argument(render_text(str(value), variables, where=f"options.{name}"))
                  for name, value in self.options.items()}
        kwargs["seed"] = self.run_seed(variables, replicate)
        return kwargs

    async def run_arm(self, variables: dict[str, str], replicate: int) -> tuple[dict[str, float], dict[str, Any]]:
        """(metrics, fingerprint additions) for one run of the geometry A/B."""
        from wb_kernels.experiment import run_geometry_arm

        kwargs = self.arguments(variables, replicate)
        try:
            inspect.signature(run_geometry_arm).bind(**kwargs)
        except TypeError as exc:
            raise BadInput(f"the kernel profile's options do not fit run_geometry_arm: {exc}",
                           hint="options are its keyword arguments: geometry_fix, partial_pages, tokens, impl") from exc
        t0 = time.monotonic()
        try:
            result = await asyncio.to_thread(run_geometry_arm, **kwargs)
        except RuntimeError as exc:  # torch reports CUDA failures (out of memory, launch errors) this way
            raise TargetError(f"the transfer kernel failed on this machine: {exc}",
                              hint="check the GPU with `wb kernel check`") from exc
        finally:
            self.clock.add("local", time.monotonic() - t0)
        metrics = {k: float(result[k]) for k in KERNEL_METRICS if k in result}
        extra = {"kernel_impl": result.get("impl"), "kernel_device": result.get("device"), "run_seed": kwargs["seed"]}
        return metrics, extra
