"""The package's import graph: layers in a fixed order, no edge upward, no cycle between modules.

Every import counts, including those inside functions (a lazy import still couples two modules).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "workbench"

# Lowest first. A module may import its own layer and the layers below it, never one above.
LAYERS = [
    {"workbench", "workbench.errors", "workbench.settings"},
    {"workbench.registry", "workbench.store", "workbench.migrations", "workbench.sim", "workbench.probes"},
    {"workbench.analysis", "workbench.team"},
    {"workbench.runner"},
    {"workbench.isolate"},
    {"workbench.report"},
    {"workbench.app", "workbench.app_runs"},
    {"workbench.api"},
    {"workbench.cli"},
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path) -> set[str]:
    """Every workbench module `path` imports (absolute or relative, at any depth)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    me = module_name(path).split(".")
    package = me if path.name == "__init__.py" else me[:-1]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "workbench"}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
            if base.split(".")[0] != "workbench":
                continue
            out.add(base)
            out |= {f"{base}.{a.name}" for a in node.names}  # `from pkg import module`
    return out


def graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in PKG.rglob("*.py") if "migrations" not in p.parts or p.name == "env.py"}
    return {m: {i for i in imports(p) if i in modules and i != m} for m, p in modules.items()}


def layer(module: str) -> int:
    best = -1, -1
    for i, names in enumerate(LAYERS):
        for n in names:
            if (module == n or module.startswith(n + ".")) and len(n) > best[1]:
                best = i, len(n)
    if best[0] < 0:
        pytest.fail(f"{module} is in no layer: add it to LAYERS")
    return best[0]


def test_no_import_goes_up_a_layer():
    g = graph()
    upward = sorted(f"{m} (layer {layer(m)}) imports {i} (layer {layer(i)})"
                    for m, deps in g.items() for i in deps if layer(i) > layer(m))
    assert upward == []


def test_the_lower_layers_do_not_know_each_other():
    """registry and store are the bottom: neither imports the other, nor the simulator or the probe."""
    g = graph()
    bottom = ("workbench.registry", "workbench.store")
    crossing = sorted(f"{m} imports {i}" for m, deps in g.items() for i in deps
                      if m.startswith(bottom) and i.startswith(("workbench.registry", "workbench.store",
                                                                 "workbench.sim", "workbench.probes"))
                      and i.split(".")[1] != m.split(".")[1])
    assert crossing == []


def test_no_cycle_between_modules():
    g = graph()
    # A package's __init__ that re-exports its own modules is not a cycle of meaning; skip those edges.
    edges = {m: {i for i in deps if not (m == i.rsplit(".", 1)[0] and (PKG.parent / m.replace(".", "/")).is_dir())}
             for m, deps in g.items()}
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(m: str, stack: list[str]) -> None:
        state[m] = 1
        stack.append(m)
        for i in sorted(edges.get(m, ())):
            if state.get(i) == 1:
                cycles.append(stack[stack.index(i):] + [i])
            elif i not in state:
                visit(i, stack)
        stack.pop()
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m, [])
    assert cycles == [], "\n".join(" -> ".join(c) for c in cycles)
