"""Fixtures: a throwaway workbench folder with a toy local deployment (health server + scripts), and its store."""

from __future__ import annotations

import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]

TOY_EXPERIMENT = """\
format: 1
id: toy
version: 1
variables:
  fix: {values: [on, off], default: off}
  mode: {values: [ok, unhealthy, slow, noextract, fail], default: ok}
unit: {name: session, outcome_field: outcome, outcomes: [done, leak], completed: [done, leak]}
metrics:
  sessions: {kind: count, units: {}}
  leak: {kind: count, units: {outcome: leak}}
  done: {kind: count, units: {outcome: done}}
  corruption_rate: {kind: proportion, numerator: leak, denominator: sessions}
  waiting_for_input: {kind: count, guard: true}
  aborts: {kind: count, same_as: waiting_for_input, guard: true}
  wall_s: {kind: continuous}
design: {replicates: 2, blocks: abba}
default_profile: local
profiles:
  local:
    target: {kind: local}
    options: {check_restart: false}  # the toy's restart only records itself; its health server never restarts
    context: {state: "STATE", port: "PORT"}
    env: {SERVICE_API_TOKEN: "s3cret-value"}
    config:
      path: "{{ state }}/serve.conf"
      template: |
        # toy serve file
        fix={{ fix }}
        mode={{ mode }}
      check: "bash -n {{ file }}"
    restart: ["{{ python }} TOY restart {{ state }}"]
    health: {urls: ["http://127.0.0.1:{{ port }}/health"], attempts: 4, interval_s: 0.05, timeout_s: 1}
    workload: {command: "{{ python }} TOY work {{ state }} {{ units_path }}", timeout_s: WTIMEOUT}
    units: {path: "{{ units_path }}"}
    collect:
      waiting_for_input: {command: "cat {{ state }}/aborts.txt", parse: int}
      wall_s: {regex: 'wall=(?P<value>[0-9.]+)s'}
    fingerprint:
      uname: "uname -s"
    artifacts:
      restarts: "{{ state }}/restarts.log"
"""

TOY_HYPOTHESES = """\
format: 1
hypotheses:
  - id: toy-fix
    claim: The fix removes the leaks.
    experiment: toy
    isolates: fix
    arms:
      control: {fix: off}
      treatment: {fix: on}
    hold: {mode: ok}
    predicts:
      - {metric: corruption_rate, arm: treatment, at_most: 0.02}
    requires:
      - {metric: aborts, arm: treatment, equals: 0}
"""

ORIGINAL_CONF = b"# the operator's own serve file\nfix=off\nmode=ok\n"


class _Health(BaseHTTPRequestHandler):
    state: Path

    def do_GET(self) -> None:  # noqa: N802
        text = (self.state / "serve.conf").read_text() if (self.state / "serve.conf").exists() else ""
        code = 503 if "mode=unhealthy" in text else 200
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


class Toy:
    def __init__(self, root: Path, state: Path, port: int) -> None:
        self.root = root
        self.state = state
        self.port = port
        self.db = str(root / "wb.duckdb")
        self.original = ORIGINAL_CONF

    @property
    def conf(self) -> Path:
        return self.state / "serve.conf"

    def restarts(self) -> list[str]:
        p = self.state / "restarts.log"
        return p.read_text().splitlines() if p.exists() else []


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    root = tmp_path / "bench"
    state = tmp_path / "state"
    (root / "experiments").mkdir(parents=True)
    state.mkdir()
    handler = type("H", (_Health,), {"state": state})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    shutil.copy(HERE / "toy.py", state / "toy.py")
    exp = (TOY_EXPERIMENT.replace("STATE", str(state)).replace("PORT", str(port))
           .replace("TOY", str(state / "toy.py")).replace("WTIMEOUT", "3"))
    (root / "experiments" / "toy.yaml").write_text(exp)
    (root / "hypotheses.yaml").write_text(TOY_HYPOTHESES)
    (state / "serve.conf").write_bytes(ORIGINAL_CONF)
    monkeypatch.setenv("WB_ROOT", str(root))
    monkeypatch.delenv("WB_ARTIFACTS", raising=False)
    yield Toy(root, state, port)
    server.shutdown()
    server.server_close()


@pytest.fixture
def ssh_server(tmp_path: Path):
    from sshserver import SshServer

    server = SshServer(tmp_path / "ssh").start()
    yield server
    server.stop()
