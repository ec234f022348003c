"""The kvcache example end to end, as a new user drives it: import the history, find the aliased pair,
write the separating experiment, run it and the team's first suspect, and read the verdicts."""

from __future__ import annotations

from kvcache_kit import run_hypothesis


def _run(kv, hid: str) -> dict:
    return run_hypothesis(hid, root=kv.root, db=kv.db, replicates=1, seed=3)


def test_history_aliasing_separating_run_and_both_verdicts(kv, cli):
    original_conf = (kv.root / "kv.conf").read_bytes()
    code, out, err = cli("import", "evidence", str(kv.root / "history.csv"), "--root", str(kv.root), "--db", kv.db)
    assert code == 0, err
    assert "imported 6 runs" in out and "experiment kv-load" in out

    code, out, err = cli("confounds", "--root", str(kv.root), "--db", kv.db, "--write")
    assert code == 0, err
    assert "batch_writes and compression are perfectly aliased" in out
    assert "toggle batch_writes (off -> on) while holding compression=off" in out
    assert "Appended to hypotheses.yaml as a draft" in out

    separating = _run(kv, "batch-writes-apart-from-compression")
    assert [r["status"] for r in separating["runs"]] == ["ok", "ok"], [r.get("error") for r in separating["runs"]]
    assert separating["verdict"] == "supported", separating["reasoning"]

    suspect = _run(kv, "compression-stale")
    assert suspect["verdict"] == "falsified", suspect["reasoning"]
    assert (kv.root / "kv.conf").read_bytes() == original_conf

    code, out, _ = cli("confounds", "--root", str(kv.root), "--db", kv.db)
    lines = out.splitlines()
    flagged = [line for line in lines if line.startswith("FLAG")]
    assert any("variable batch_writes" in line for line in flagged)
    assert not any("compression" in line for line in flagged)
    assert not any("perfectly aliased" in line for line in lines)
