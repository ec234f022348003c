"""`wb hypothesis run --json` when the execution does not end well: the one envelope on stdout carries what was
recorded, "ok": false and the error; the `Error:` line stays on stderr and the exit code is unchanged."""

from __future__ import annotations

import json


def test_failed_runs_give_the_result_with_ok_false_and_the_error(toy, cli) -> None:
    code, out, err = cli("hypothesis", "run", "toy-fix", "--set", "mode=fail", "--replicates", "1", "--seed", "3",
                         "--json", "--db", toy.db, env={"WB_ROOT": str(toy.root)})
    assert code == 1, err
    doc = json.loads(out)
    assert doc["ok"] is False and doc["command"] == "hypothesis run"
    assert doc["execution_id"] == 1 and doc["seed"] == 3
    assert [r["status"] for r in doc["runs"]] == ["failed", "failed"]
    message = "2 of 2 planned run(s) did not finish ok (see the run errors above or `wb runs show ID`)"
    assert doc["error"] == {"message": message, "hint": None, "where": None, "exit_code": 1, "kind": "RunFailure"}
    assert f"Error: {message}" in err

