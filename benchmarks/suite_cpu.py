"""Benchmark: where the test suite's CPU goes, by kind of process and by test file. On 2 cores the suite is
CPU-bound (its CPU seconds over its wall seconds is close to the core count), so a shorter CI comes only from
less CPU: this says which processes and which files to look at first.

    python benchmarks/suite_cpu.py [--top 25] [PYTEST_ARGS...]

PYTEST_ARGS select the tests (default: the whole suite, with the README's options). Every Python process the
run starts reports its own CPU time as it exits (a `sitecustomize` on PYTHONPATH; a process killed with
SIGKILL reports nothing, so the totals are a lower bound), and each test reports the CPU of the pytest worker
and of the children it waited for. Prints the wall time, the CPU by process kind (pdsim's servers, `wb`
commands by name, the pytest workers) with the share of processes that imported torch, and the files and tests
that cost most.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

SITECUSTOMIZE = '''
import atexit, json, os, resource, sys
def _report():
    try:
        r = resource.getrusage(resource.RUSAGE_SELF)
        with open(os.environ["WB_SUITE_CPU_LOG"], "a") as f:
            f.write(json.dumps({"argv": " ".join(sys.argv)[:300], "cpu": r.ru_utime + r.ru_stime,
                                "torch": "torch" in sys.modules, "pytest": "_pytest.main" in sys.modules,
                                "test": os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]}) + "\\n")
    except Exception:
        pass
atexit.register(_report)
'''

PLUGIN = '''
import json, os, resource, time
import pytest
@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.time()
    yield
    me2, kids2 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(os.environ["WB_SUITE_TEST_LOG"], "a") as f:
        own = me2.ru_utime + me2.ru_stime - me.ru_utime - me.ru_stime
        f.write(json.dumps({"test": item.nodeid, "own": own, "start": t0, "end": time.time(),
                            "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
                            "cpu": own + kids2.ru_utime + kids2.ru_stime - kids.ru_utime - kids.ru_stime}) + "\\n")
'''


def kind(argv: str, pytest: bool = False) -> str:
    """A process's kind: a pytest process (the main one or an xdist worker, whose argv is a bare `-c`; told by having
    loaded pytest, not by its argv, since a test's children name paths under pytest-of-USER), a pdsim server, a `wb`
    command (its first two words), a `python -c` helper, or another script (its file's name and first argument)."""
    if pytest:
        return "pytest (main and workers)"
    m = re.search(r"workbench[./]sim[./](prefill|decode)", argv)
    if m:
        return f"pdsim {m.group(1)} server"
    m = re.search(r"(?:workbench[./]cli[./]main(?:\.py)?|/wb)\s+(--version|[a-z-]+)(?:\s+([a-z-]+))?", argv)
    if m:
        return " ".join(w for w in ("wb", m.group(1), m.group(2) if m.group(1) != "--version" else None) if w)
    if argv.startswith("-c"):  # a `python -c` child: a test's helper, a profile's command, a stress loop
        return "python " + " ".join(argv.split())[:60]
    words = argv.split()
    if words and words[0].endswith(".py"):  # a script, e.g. the toy service's `toy.py restart STATE`
        return " ".join(["python", Path(words[0]).name, *words[1:2]])
    return "other python"


def run(args: list[str], tmp: Path) -> tuple[float, str]:
    (tmp / "sitecustomize.py").write_text(SITECUSTOMIZE)
    (tmp / "wb_suite_cpu_plugin.py").write_text(PLUGIN)
    env = dict(os.environ, WB_SUITE_CPU_LOG=str(tmp / "processes.jsonl"), WB_SUITE_TEST_LOG=str(tmp / "tests.jsonl"),
               PYTHONPATH=os.pathsep.join(p for p in (str(tmp), os.environ.get("PYTHONPATH")) if p))
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
                           "wb_suite_cpu_plugin", *args], cwd=REPO, env=env, capture_output=True, text=True)
    lines = proc.stdout.strip().splitlines()
    failed = [line for line in lines if line.startswith(("FAILED ", "ERROR "))]  # pytest's short summary
    summary = lines[-1] if lines else f"exit {proc.returncode}"
    return time.monotonic() - t0, "\n".join([summary, *failed])


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def report(wall: float, summary: str, procs: list[dict], tests: list[dict], top: int) -> None:
    total = sum(p["cpu"] for p in procs)
    print(f"suite: {summary}")
    print(f"wall {wall:.0f} s; CPU reported by {len(procs)} processes {total:.0f} s "
          f"({total / wall:.2f} cores busy on average, {os.cpu_count()} here: near the core count on an otherwise idle "
          "machine means CPU-bound)")
    cpu, count, torch = collections.Counter(), collections.Counter(), collections.Counter()
    for p in procs:
        k = kind(p["argv"], p.get("pytest", False))
        cpu[k] += p["cpu"]
        count[k] += 1
        torch[k] += p["torch"]
    print("\nCPU by kind of process (s, share, processes, of them importing torch):")
    for k, s in cpu.most_common(top):
        print(f"  {s:8.1f}  {100 * s / total:5.1f}%  {count[k]:5d}  {torch[k]:5d}  {k}")
    by_file = collections.Counter()
    for t in tests:
        by_file[t["test"].split("::")[0]] += t["cpu"]
    print("\nCPU by test file (s; the worker and the children it waited for, not pdsim's servers):")
    for f, s in by_file.most_common(top):
        print(f"  {s:8.1f}  {f}")
    own = collections.Counter()
    for t in tests:
        own[t["test"].split("::")[0]] += t.get("own", 0.0)
    print(f"\nCPU inside the pytest workers by test file (s; {sum(own.values()):.0f} s in all, children not counted):")
    for f, s in own.most_common(top):
        print(f"  {s:8.1f}  {f}")
    spawned, torch_files = collections.Counter(), collections.Counter()
    for p in procs:
        if p.get("test") and not p.get("pytest", False):
            spawned[p["test"].split("::")[0]] += p["cpu"]
            torch_files[p["test"].split("::")[0]] += p["torch"]
    print("\nCPU of the processes started under each test file (s; pdsim's servers and wb commands included, "
          "a process killed with SIGKILL not; processes importing torch):")
    for f, s in spawned.most_common(top):
        print(f"  {s:8.1f}  {torch_files[f]:4d}  {f}")
    _tail(tests, top)
    print("\nCPU by test (s):")
    for t in sorted(tests, key=lambda t: -t["cpu"])[:top]:
        print(f"  {t['cpu']:8.1f}  {t['test']}")


def _tail(tests: list[dict], top: int) -> None:
    """When each worker ran out of work, and the files that ran last: with files kept whole on one worker
    (--dist loadfile), a heavy file handed out late keeps one worker busy while the others are done."""
    if not tests:
        return
    t0 = min(t["start"] for t in tests)
    files: dict[str, list[float]] = {}
    last: dict[str, float] = {}
    for t in tests:
        span = files.setdefault(t["test"].split("::")[0], [t["start"], t["end"]])
        span[0], span[1] = min(span[0], t["start"]), max(span[1], t["end"])
        last[t["worker"]] = max(last.get(t["worker"], 0.0), t["end"])
    done = sorted(v - t0 for v in last.values())
    print("\nWorkers out of work at (s after the first test): " + ", ".join(f"{v:.0f}" for v in done))
    print(f"Files that ended last (start, end, s after the first test; of {len(files)} files):")
    for f, (a, b) in sorted(files.items(), key=lambda kv: -kv[1][1])[:min(top, 15)]:
        print(f"  {a - t0:6.0f} {b - t0:6.0f}  {f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--top", type=int, default=25)
    ns, rest = ap.parse_known_args()
    with tempfile.TemporaryDirectory(prefix="wb-suite-cpu-") as tmp:
        wall, summary = run(rest, Path(tmp))
        report(wall, summary, read(Path(tmp) / "processes.jsonl"), read(Path(tmp) / "tests.jsonl"), ns.top)


if __name__ == "__main__":
    main()
