"""The run plan: arms interleaved in blocks (ABBA, random, alternate), from a recorded seed; hosts as a blocking factor.

A block holds every arm once. With several hosts, whole blocks go to hosts in turn, so every host
sees every arm equally often (the host is balanced across arms and recorded on each run).

Variables declared `per_replicate` (a workload seed) get a fresh value per replicate, drawn from
the plan's seed: replicates are independent samples, both arms of a block share the value (a
paired comparison), and the same `--seed` gives the same values again.
"""

from __future__ import annotations

import hashlib
import random
import secrets
from dataclasses import asdict, dataclass, field
from typing import Any

from workbench.registry.experiment import per_replicate_names  # noqa: F401  (re-exported for the runner)


@dataclass(frozen=True)
class PlannedRun:
    order_index: int
    arm: str
    replicate: int
    block: int
    host: str
    values: dict[str, str] = field(default_factory=dict)   # per-replicate variables of this run

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Plan:
    arms: list[str]
    replicates: int
    blocks: str
    seed: int
    hosts: list[str]
    runs: list[PlannedRun]

    def to_dict(self) -> dict[str, Any]:
        return {"arms": self.arms, "replicates": self.replicates, "blocks": self.blocks, "seed": self.seed,
                "hosts": self.hosts, "runs": [r.to_dict() for r in self.runs]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Plan":
        return cls(arms=list(d["arms"]), replicates=int(d["replicates"]), blocks=str(d["blocks"]),
                   seed=int(d["seed"]), hosts=list(d["hosts"]),
                   runs=[PlannedRun(**r) for r in d["runs"]])

    def block_runs(self, block: int) -> list[PlannedRun]:
        return [r for r in self.runs if r.block == block]


def new_seed() -> int:
    return secrets.randbelow(2**31)


def block_orders(arms: list[str], n_blocks: int, scheme: str, seed: int) -> list[list[str]]:
    """The arm order of each block. abba: a shuffled order, then its reverse, alternately (A B, B A, A B…)."""
    rng = random.Random(seed)
    first = list(arms)
    rng.shuffle(first)
    orders: list[list[str]] = []
    for b in range(n_blocks):
        if scheme == "abba":
            orders.append(first if b % 2 == 0 else list(reversed(first)))
        elif scheme == "alternate":
            orders.append(list(first))
        elif scheme == "random":
            order = list(arms)
            rng.shuffle(order)
            orders.append(order)
        else:
            raise ValueError(f"unknown block scheme {scheme!r}")
    return orders


def replicate_value(seed: int, replicate: int, name: str) -> str:
    """The value of per-replicate variable `name` in a replicate: a 31-bit int from the plan's seed."""
    digest = hashlib.sha256(f"{seed}:{replicate}:{name}".encode()).digest()
    return str(int.from_bytes(digest[:4], "big") & 0x7FFFFFFF)


def make_plan(arms: list[str], replicates: int, *, blocks: str = "abba", seed: int | None = None,
              hosts: list[str] | None = None, per_replicate: list[str] | tuple = ()) -> Plan:
    """One block per replicate; block b runs on host b mod len(hosts)."""
    if not arms:
        raise ValueError("a plan needs at least one arm")
    hosts = list(hosts or ["local"])
    seed = new_seed() if seed is None else int(seed)
    runs: list[PlannedRun] = []
    # Per host, blocks alternate AB / BA in turn, so the order within a block is balanced on each host too.
    orders = block_orders(arms, replicates, blocks, seed)
    for b in range(replicates):
        host = hosts[b % len(hosts)]
        order = orders[b if blocks == "random" else b // len(hosts)]
        values = {name: replicate_value(seed, b, name) for name in per_replicate}
        for arm in order:
            runs.append(PlannedRun(order_index=len(runs), arm=arm, replicate=b, block=b, host=host,
                                   values=dict(values)))
    return Plan(arms=list(arms), replicates=replicates, blocks=blocks, seed=seed, hosts=hosts, runs=runs)
