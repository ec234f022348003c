"""The README's tour, where it changes the store: its `wb runs delete` lines delete the runs the tour itself made.

On a fresh clone the first command of the README (`wb hypothesis run wedge-confound`) makes runs 1-6 (three replicates
per arm, the hypothesis' design), the tour's `wb import evidence` makes the seed's six historical runs 7-12, and the
tour's `--set causal_model=wedge` run comes after them: a `wb runs delete` of fixed ids deleted historical runs of
the seed's evidence.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "analysis"))

from analysis_helpers import CONTROL, TREATMENT, add_execution, add_run  # noqa: E402


def _tour() -> list[str]:
    text = (REPO / "README.md").read_text()
    block = text.split("## A short tour", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    return [re.sub(r"\s+#\s.*$", "", line).strip() for line in block.splitlines()]


def _runs_of_a_hypothesis_run(store, overrides: dict[str, str] | None, replicates: int) -> list[int]:
    ex = add_execution(store, overrides=overrides)
    extra = overrides or {}
    return [add_run(store, execution_id=ex, arm=arm, variables=vars_ | extra, replicate=r,
                    outcomes={"leak": 1, "done": 79})
            for r in range(1, replicates + 1) for arm, vars_ in (("control", CONTROL), ("treatment", TREATMENT))]


def test_the_tours_delete_lines_delete_only_runs_the_tour_made(workbench_dir, seed_csv, cli, tmp_path):
    from workbench.store import open_store

    db = tmp_path / "wb.duckdb"
    store = open_store(str(db))
    try:
        quickstart = _runs_of_a_hypothesis_run(store, None, 3)         # the README's first command
    finally:
        store.dispose()
    assert cli("import", "evidence", str(seed_csv), "--db", str(db), "--root", str(workbench_dir))[0] == 0
    store = open_store(str(db))
    try:
        tours = _runs_of_a_hypothesis_run(store, {"causal_model": "wedge"}, 2)  # the tour's --set run
    finally:
        store.dispose()
    lines = _tour()
    delete = [i for i, line in enumerate(lines) if line.startswith("wb runs delete") and "--dry-run" in line]
    assert delete, lines
    # The dry run as the tour gives it (with whatever it sets up on the lines before), asked for JSON.
    setup = [line for line in lines[:delete[0]] if re.match(r"^[A-Za-z_]+=", line)]
    script = "\n".join(setup + [lines[delete[0]] + " --json"])
    env = {**os.environ, "WB_ROOT": str(workbench_dir), "WB_DB": str(db),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    res = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], capture_output=True, text=True, env=env,
                         timeout=120)
    assert res.returncode == 0, (script, res.stderr)
    deleted = json.loads(res.stdout)["deleted"]
    assert deleted and all(d["status"] != "historical" for d in deleted), (script, deleted)
    assert {d["id"] for d in deleted} <= set(tours) and not {d["id"] for d in deleted} & set(quickstart), deleted


def test_the_tour_says_kernel_bench_needs_a_gpu():
    # The no-GPU tour listed `wb kernel check / bench` as one line of things to try; bench refuses without CUDA.
    lines = [line for line in _tour() if line.startswith("wb kernel")]
    bench = [line for line in (REPO / "README.md").read_text().split("## A short tour", 1)[1].splitlines()
             if line.startswith("wb kernel bench")]
    assert bench and "GPU" in bench[0], lines
    import torch

    if not torch.cuda.is_available():  # what the line promises, on this machine
        res = subprocess.run([str(Path(sys.executable).parent / "wb"), "kernel", "bench"], capture_output=True,
                             text=True, timeout=120)
        assert res.returncode == 2 and "needs a CUDA device" in res.stderr, res.stderr
