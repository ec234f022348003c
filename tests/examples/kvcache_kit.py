"""The kvcache example copied into a temporary workbench, on a free port; its server stopped afterwards."""

from __future__ import annotations

import os
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "kvcache"


@dataclass
class Kv:
    root: Path
    db: str
    port: int

    @property
    def experiment(self) -> Path:
        return self.root / "experiments" / "kv-load.yaml"

    def edit(self, old: str, new: str, path: Path | None = None) -> None:
        p = path or self.experiment
        text = p.read_text()
        assert old in text, old
        p.write_text(text.replace(old, new, 1))

    def pid(self) -> int | None:
        p = self.root / "kv.pid"
        return int(p.read_text()) if p.is_file() and p.read_text().strip() else None

    def stop(self) -> None:
        for p in self.root.glob("*.pid"):
            try:
                pid = int(p.read_text())
            except ValueError:
                continue
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            for _ in range(100):  # bounded: the server exits at once on SIGTERM
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.05)


def make_kv(tmp: Path) -> Kv:
    from workbench.sim.control import free_port

    root = tmp / "kvcache"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("*.pid", "wb.duckdb", ".wb", "reports"))
    port = free_port()
    kv = Kv(root, str(tmp / "wb.duckdb"), port)
    kv.edit('context: {port: "18080"}', f'context: {{port: "{port}"}}')
    kv.edit("port=18080", f"port={port}", root / "kv.conf")
    return kv


def run_hypothesis(hypothesis_id: str, *, db: str, root: Path, build_report: bool = False, **options: Any) -> dict:
    """`wb hypothesis run` through the application object, as the JSON it prints (the CLI's contract)."""
    from workbench.app import Workbench
    from workbench.runner.execute import RunOptions
    from workbench.settings import Settings

    options.setdefault("show_progress", False)
    wb = Workbench.open(Settings.from_env(db=db, root=root))
    return wb.run(hypothesis_id, RunOptions(**options), report=build_report).to_dict()
