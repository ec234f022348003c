"""The bad-input corpus (tests/data/bad_inputs/*.yaml): each case runs through the real `wb` CLI and must exit 2
with one `Error:` naming the file:line or the flag, no traceback, and the store untouched.

A case is data: `args` (with {root}, {db}, {csv}, {out} filled in), optional `edit` (replace text in a copied
workbench file), `write` (create a file: `text`, or `chunk` repeated `count` times between `prefix` and
`suffix`), `store: true` (start from a store holding the seed evidence), `expect` (a fragment of the message),
`absent` (fragments it must not hold) and `where` (a regular expression the message must match: a file:line, a
flag, a column).
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

DATA = Path(__file__).resolve().parents[1] / "data" / "bad_inputs"
REPO = Path(__file__).resolve().parents[2]


def _cases() -> list[dict]:
    out = []
    for f in sorted(DATA.glob("*.yaml")):
        for case in yaml.safe_load(f.read_text(encoding="utf-8")) or []:
            case["_file"] = f.name
            out.append(case)
    return out


CASES = _cases()


def _fill(text: str, ctx: dict[str, str]) -> str:
    for k, v in ctx.items():
        text = text.replace("{" + k + "}", v)
    return text


_STORE: dict[str, bytes] = {}  # the seed evidence imported into a new store, made once (see _prepare)


def _prepare(case: dict, root: Path, seed_csv: Path, cli=None) -> dict[str, str]:
    shutil.copy(REPO / "hypotheses.yaml", root / "hypotheses.yaml")
    shutil.copytree(REPO / "experiments", root / "experiments")
    shutil.copy(seed_csv, root / "seed.csv")
    if case.get("store"):
        # The same import of the same shipped files gives the same store (it names no path of its workbench):
        # made once, each case that wants it gets a copy of its file (the cases' edits come after).
        store = root / "store.duckdb"
        if _STORE:
            store.write_bytes(_STORE["file"])
        else:
            code, _, err = cli("import", "evidence", str(seed_csv), "--db", str(store), "--root", str(root))
            assert code == 0, err
            assert not Path(f"{store}.wal").exists() and not (root / ".wb").exists()  # the file is all of it
            _STORE["file"] = store.read_bytes()
    ctx = {"root": str(root), "db": str(root / "store.duckdb"), "csv": str(root / "seed.csv"),
           "out": str(root / "site")}
    for e in case.get("edit", []):
        path = root / e["file"]
        text = path.read_text(encoding="utf-8")
        assert e["old"] in text, f"{case['id']}: {e['old']!r} not in {e['file']}"
        path.write_text(text.replace(e["old"], _fill(e["new"], ctx), 1), encoding="utf-8")
    for w in case.get("write", []):
        path = root / w["file"]
        path.parent.mkdir(parents=True, exist_ok=True)
        if "chunk" in w:
            body = w.get("prefix", "") + w["chunk"] * int(w["count"]) + w.get("suffix", "")
        else:
            body = _fill(w.get("text", ""), ctx)
        if w.get("mode") == "dir":
            path.mkdir(parents=True, exist_ok=True)
        else:
            path.write_bytes(body.encode("utf-8", "surrogatepass"))
    return ctx


def _digest(path: Path) -> str | None:
    if path.is_file():
        return hashlib.sha256(path.read_bytes()).hexdigest()
    return "dir" if path.is_dir() else None


def _check(case: dict, code: int, err: str, ctx: dict[str, str]) -> None:
    assert "Traceback" not in err, err
    assert code == 2, (code, err)
    assert err.startswith("Error: "), err
    assert _fill(case["expect"], ctx) in err, err
    for words in case.get("absent", []):  # what the message must no longer say
        assert _fill(words, ctx) not in err, (words, err)
    if case.get("where"):
        assert re.search(_fill(case["where"], ctx), err), (case["where"], err)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_bad_input_exits_2_with_one_error_and_writes_nothing(case, tmp_path, seed_csv, cli, monkeypatch):
    root = tmp_path / "wb"
    root.mkdir()
    monkeypatch.chdir(root)
    monkeypatch.delenv("WB_DB", raising=False)
    monkeypatch.setenv("WB_ROOT", str(root))
    ctx = _prepare(case, root, seed_csv, cli)
    before = {p: _digest(p) for p in (root / "store.duckdb", root / "wb.duckdb")}
    args = [_fill(a, ctx) for a in case["args"]]
    code, _, err = cli(*args)
    _check(case, code, err, ctx)
    after = {p: _digest(p) for p in before}
    assert after == before, "a refused input must not create or change a store"


SUBPROCESS = [c for c in CASES if c.get("subprocess")]


@pytest.mark.parametrize("case", SUBPROCESS, ids=[c["id"] for c in SUBPROCESS])
def test_bad_input_through_a_real_process(case, tmp_path, seed_csv):
    root = tmp_path / "wb"
    root.mkdir()
    ctx = _prepare(case, root, seed_csv)
    args = [_fill(a, ctx) for a in case["args"]]
    env = {k: v for k, v in __import__("os").environ.items() if k != "WB_DB"}
    res = subprocess.run([sys.executable, "-m", "workbench.cli.main", *args], cwd=root, capture_output=True,
                         text=True, timeout=120, env={**env, "WB_ROOT": str(root)})
    _check(case, res.returncode, res.stderr, ctx)
    assert not (root / "store.duckdb").exists() and not (root / "wb.duckdb").exists()


def test_the_corpus_is_large_enough():
    assert len(CASES) >= 150
    assert len({c["id"] for c in CASES}) == len(CASES), "case ids must be unique"


def test_a_utf8_bom_in_evidence_is_not_part_of_the_header(tmp_path, cli):
    """A spreadsheet's BOM once made the first column `\\ufeffrun_id` ("no run_id column")."""
    root = tmp_path / "wb"
    root.mkdir()
    shutil.copy(REPO / "hypotheses.yaml", root / "hypotheses.yaml")
    shutil.copytree(REPO / "experiments", root / "experiments")
    csv = root / "bom.csv"
    csv.write_text("\ufeffrun_id,index_k_dtype,hicache,nixl_abort_fix,leak\nr1,bf16,on,off,3\n", encoding="utf-8")
    code, out, err = cli("import", "evidence", str(csv), "--db", str(root / "s.duckdb"), "--root", str(root))
    assert code == 0, err


@pytest.mark.parametrize("args,flag", [
    (["import", "evidence", "{csv}", "--db", "{missing}/x.duckdb"], "--db"),
    (["db", "upgrade", "--db", "{missing}/x.duckdb"], "--db"),
    (["report", "--db", "{db}", "--out", "{missing}/site"], "--out"),
], ids=["import-db", "upgrade-db", "report-out"])
def test_a_path_in_a_folder_that_does_not_exist_is_refused_not_created(args, flag, tmp_path, seed_csv, cli,
                                                                      monkeypatch):
    """A mistyped folder was created, as `mkdir -p` would (a new, empty store elsewhere then took the runs;
    `--out /nonexistent/dir/site` made /nonexistent as root): now an error, as for a bundle's -o."""
    root = tmp_path / "wb"
    root.mkdir()
    monkeypatch.chdir(root)
    monkeypatch.delenv("WB_DB", raising=False)
    monkeypatch.setenv("WB_ROOT", str(root))
    ctx = _prepare({"store": True}, root, seed_csv, cli)
    missing = tmp_path / "nodir" / "sub"
    code, _, err = cli(*[_fill(a, {**ctx, "missing": str(missing)}) for a in args])
    assert code == 2 and err.startswith("Error: ") and "Traceback" not in err, (code, err)
    assert f"{missing}" in err.splitlines()[0] and flag in err, err
    assert not (tmp_path / "nodir").exists()


@pytest.mark.parametrize("args,named", [
    (["runs", "list", "--db", "{db}"], "$WB_ROOT"),
    (["runs", "list", "--db", "{db}", "--root", "{notes}"], "--root"),
    (["review", "list", "--db", "{db}"], "$WB_ROOT"),
    (["db", "current", "--db", "{db}"], "$WB_ROOT"),
    (["sim", "status"], "$WB_ROOT"),
], ids=["runs-list", "runs-list-flag", "review-list", "db-current", "sim-status"])
def test_a_root_naming_a_file_is_refused_whatever_the_command(args, named, tmp_path, cli, monkeypatch):
    """$WB_ROOT (or --root) naming a file was read past wherever a store was named (`runs list --db S` listed S's
    runs) and `wb sim` looked for pdsim inside it: one error naming it, as without --db."""
    db = tmp_path / "s.duckdb"
    code, _, err = cli("db", "upgrade", "--db", str(db))
    assert code == 0, err
    notes = tmp_path / "notes.txt"
    notes.write_text("not a workbench\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("WB_DB", raising=False)
    monkeypatch.delenv("WB_SIM_DIR", raising=False)
    monkeypatch.setenv("WB_ROOT", str(notes))
    code, out, err = cli(*[a.replace("{db}", str(db)).replace("{notes}", str(notes)) for a in args])
    assert (code, out) == (2, ""), (code, out, err)
    said = f"{notes} ($WB_ROOT)" if named == "$WB_ROOT" else f"--root {notes}"
    assert err.startswith(f"Error: {said} is a file, not a folder") and "Traceback" not in err, err
