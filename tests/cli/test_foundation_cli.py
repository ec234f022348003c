"""The foundation's CLI on real files: hypotheses listing, evidence import, exit codes, fast start."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_hypothesis_list_json_has_the_seed_lineage(cli):
    code, out, err = cli("hypothesis", "list", "--json")
    assert code == 0, err
    rows = {r["id"]: r for r in json.loads(out)["items"]}
    assert rows["hicache-bf16-race"]["parent"] is None
    assert rows["wedge-confound"]["parent"] == "hicache-bf16-race"
    assert rows["dead-code-dsaindexerpoolhost"]["parent"] == "hicache-bf16-race"
    assert rows["dead-code-dsaindexerpoolhost"]["kind"] == "reachability"
    assert rows["token-granular-geometry"]["parent"] == "hicache-bf16-race"
    assert rows["wedge-confound"]["isolates"] == "nixl_abort_fix"


def test_hypothesis_list_csv_and_tsv_leave_an_absent_parent_empty_as_lineage_does(cli):
    # The table's "-" for no parent (or no isolated variable) was written into CSV and TSV too, where
    # `wb lineage --format csv` leaves the cell empty: a script looking for the roots had to know both.
    import io

    code, out, err = cli("hypothesis", "list", "--format", "csv")
    assert code == 0, err
    rows = {r["id"]: r for r in csv.DictReader(io.StringIO(out))}
    assert rows["hicache-bf16-race"]["parent"] == "" and rows["dead-code-dsaindexerpoolhost"]["isolates"] == ""
    code, out, err = cli("lineage", "--format", "csv")
    assert code == 0, err
    assert {r["id"]: r["parent"] for r in csv.DictReader(io.StringIO(out))} == {i: r["parent"] for i, r in rows.items()}
    code, out, err = cli("hypothesis", "list", "--format", "tsv")
    assert code == 0, err
    root = next(line.split("\t") for line in out.splitlines() if line.startswith("hicache-bf16-race\t"))
    assert root[1] == ""
    code, out, err = cli("hypothesis", "list")
    assert code == 0, err
    assert next(line for line in out.splitlines() if line.startswith("hicache-bf16-race ")).split()[1] == "-"


def test_hypothesis_list_of_an_empty_file_says_so_and_other_formats_keep_their_shape(tmp_path: Path, cli):
    # `hypotheses: []` printed the table's header row alone, which reads as a listing that failed to fill.
    (tmp_path / "experiments").mkdir()
    (tmp_path / "hypotheses.yaml").write_text("format: 1\nhypotheses: []\n")
    root = ["--root", str(tmp_path), "--db", str(tmp_path / "wb.duckdb")]
    code, out, err = cli("hypothesis", "list", *root)
    assert (code, out, err) == (0, f"No hypotheses in {tmp_path / 'hypotheses.yaml'}.\n", ""), (code, out, err)
    assert cli("hypothesis", "list", "--format", "csv", *root)[:2] == (0, "id,parent,kind,isolates,status,note\n")
    assert cli("hypothesis", "list", "--format", "tsv", *root)[:2] == (0, "id\tparent\tkind\tisolates\tstatus\tnote\n")
    code, out, _ = cli("hypothesis", "list", "--json", *root)
    assert code == 0 and json.loads(out)["items"] == [], out
    assert not (tmp_path / "wb.duckdb").exists()


def test_hypothesis_show_json(cli):
    code, out, _ = cli("hypothesis", "show", "wedge-confound", "--json")
    assert code == 0
    h = json.loads(out)
    assert h["arms"]["control"]["nixl_abort_fix"] == "off"
    assert h["arms"]["treatment"]["nixl_abort_fix"] == "on"
    assert h["arms"]["treatment"]["index_k_dtype"] == "bf16" and h["arms"]["treatment"]["hicache"] == "on"
    assert len(h["definition"]["assumptions"]) == 4
    assert h["definition"]["requires"][0]["metric"] == "aborts"


def test_show_gives_the_seeds_the_runs_will_use(cli):
    # The workload seed is drawn per replicate from the execution's seed: no arm runs with seed=0.
    code, out, err = cli("hypothesis", "show", "wedge-confound")
    assert code == 0, err
    arms = [line for line in out.splitlines() if line.startswith("  arm ")]
    assert len(arms) == 2 and not any("seed=0" in line for line in arms), arms
    assert all("causal_model=seed" in line for line in arms), arms
    assert ("  per replicate: seed (a fresh value in each replicate, the same in every arm of it, derived from "
            "the execution seed and the replicate's number; --set seed=N holds it fixed)") in out, out
    assert "  execution seed: drawn at random for each execution and recorded (--seed N gives it)" in out, out
    code, out, _ = cli("hypothesis", "show", "wedge-confound", "--json")
    h = json.loads(out)
    assert "seed" not in h["arms"]["control"] and h["per_replicate"] == ["seed"] and h["seed"] is None, h
    # The kernel experiment's seed is a plain variable: its value is the one every run uses.
    code, out, _ = cli("hypothesis", "show", "token-granular-geometry")
    assert "seed=0" in out and "per replicate" not in out, out


def test_show_gives_the_design_the_runs_will_follow(cli, workbench_dir: Path):
    # wedge-confound's own design.replicates (3) is what `wb hypothesis run` makes; show said nothing of it.
    code, out, err = cli("hypothesis", "show", "wedge-confound")
    assert code == 0, err
    assert ("  design: 3 replicates per arm (design.replicates of the hypothesis; --replicates N "
            "overrides it), blocks abba; --sequential: at most 12 (design.max_replicates of the "
            "experiment)") in out, out
    code, out, _ = cli("hypothesis", "show", "wedge-confound", "--json")
    assert json.loads(out)["design"] == {"replicates": 3, "replicates_from": "hypothesis", "blocks": "abba",
                                         "max_replicates": 12, "max_replicates_from": "experiment"}, out
    code, out, _ = cli("hypothesis", "show", "hicache-bf16-race")
    assert ("  design: 2 replicates per arm (design.replicates of the experiment; --replicates N overrides it), "
            "blocks abba; --sequential: at most 12 (design.max_replicates of the experiment)") in out, out


def test_show_gives_one_replicate_in_the_singular(cli, workbench_dir: Path):
    # "design: 1 replicates per arm" for a hypothesis run with one replicate.
    path = workbench_dir / "hypotheses.yaml"
    text = path.read_text()
    assert text.count("    design: {replicates: 3}\n") == 1
    path.write_text(text.replace("    design: {replicates: 3}\n", "    design: {replicates: 1}\n"))
    code, out, err = cli("hypothesis", "show", "wedge-confound", "--root", str(workbench_dir))
    assert code == 0, err
    assert "  design: 1 replicate per arm (design.replicates of the hypothesis;" in out, out


def test_show_gives_a_declared_or_held_seed_as_it_is(cli, workbench_dir: Path):
    path = workbench_dir / "hypotheses.yaml"
    text = path.read_text()
    old = "      treatment: {nixl_abort_fix: on}\n    hold: {index_k_dtype: bf16, hicache: on}\n"
    assert text.count(old) == 1
    path.write_text(text.replace(old, "      treatment: {nixl_abort_fix: on}\n"
                                      "    hold: {index_k_dtype: bf16, hicache: on, seed: 7}\n"))
    old = "    design: {replicates: 3}\n"
    assert path.read_text().count(old) == 1
    path.write_text(path.read_text().replace(old, "    design: {replicates: 3, seed: 42}\n"))
    code, out, err = cli("hypothesis", "show", "wedge-confound", "--root", str(workbench_dir))
    assert code == 0, err
    arms = [line for line in out.splitlines() if line.startswith("  arm ")]
    assert all(line.endswith("seed=7") for line in arms) and "per replicate" not in out, out
    assert "  execution seed: 42 (design.seed of the hypothesis; --seed N overrides it)" in out, out
    code, out, _ = cli("hypothesis", "show", "wedge-confound", "--json", "--root", str(workbench_dir))
    h = json.loads(out)
    assert (h["seed"], h["seed_from"], h["per_replicate"]) == (42, "hypothesis", []), h
    assert {h["arms"][a]["seed"] for a in ("control", "treatment")} == {"7"}, h


def test_unknown_hypothesis_is_bad_input(cli):
    code, _, err = cli("hypothesis", "show", "no-such-thing")
    assert code == 2
    assert "no hypothesis 'no-such-thing'" in err and "wedge-confound" in err


def test_import_evidence_gives_six_runs_with_the_csv_numbers(tmp_path: Path, seed_csv: Path, cli):
    db = tmp_path / "ev.duckdb"
    code, out, err = cli("import", "evidence", str(seed_csv), "--db", str(db))
    assert code == 0, err
    code, out, _ = cli("runs", "list", "--json", "--db", str(db))
    runs = {r["label"]: r for r in json.loads(out)["items"]}
    assert len(runs) == 6
    with seed_csv.open() as fh:
        rows = list(csv.DictReader(fh))
    for row in rows:
        run = runs[row["run_id"]]
        assert run["status"] == "historical" and run["source"] == "import"
        for col in ("index_k_dtype", "hicache", "nixl_abort_fix"):
            assert run["variables"][col] == row[col]
        for col in ("sessions", "leak", "error", "done", "maxrounds", "no_tool", "timeouts", "waiting_for_input",
                    "wall_s"):
            if row[col] == "":
                assert col not in run["metrics"], f"{row['run_id']}: blank {col} must stay unknown"
            else:
                assert run["metrics"][col] == float(row[col])
        assert run["provenance"]["quote"] == row["source_quote"]
    post = runs["post-bf16-hicache-postfix"]["metrics"]
    assert (post["leak"], post["sessions"], post["error"], post["waiting_for_input"]) == (14, 80, 40, 0)
    # Its workload settings read as the CSV wrote them (they read rounds=4.0 max_tokens=2500.0).
    post_id = str(runs["post-bf16-hicache-postfix"]["id"])
    code, out, _ = cli("runs", "show", post_id, "--db", str(db))
    (shown,) = [ln for ln in out.splitlines() if ln.startswith("fingerprint: ")]
    assert ("workload.ctx=300 workload.max_tokens=2500 workload.rounds=4 workload.sessions=80 "
            "workload.timeout_s=200") in shown, shown
    # A row an earlier wb stored with every setting a float still counts as the same run: importing the same
    # file again adds nothing, and the stored row reads as it was stored.
    import duckdb

    con = duckdb.connect(str(db))
    try:
        con.execute("update runs set fingerprint_json = replace(fingerprint_json, '\"ctx\": 300,', '\"ctx\": 300.0,') "
                    "where label = 'post-bf16-hicache-postfix'")
    finally:
        con.close()
    code, out, _ = cli("import", "evidence", str(seed_csv), "--db", str(db))
    assert code == 0 and "skipped 6" in out, out
    assert "workload.ctx=300.0 " in cli("runs", "show", post_id, "--db", str(db))[1]
    code, out, _ = cli("runs", "list", "--json", "--db", str(db))
    assert len(json.loads(out)["items"]) == 6


def test_bad_evidence_rows_write_nothing(tmp_path: Path, seed_csv: Path, cli):
    text = seed_csv.read_text()
    cases = {
        "not-a-number": (text.replace(",346.3,", ",fast,"), "column 'wall_s' holds 'fast'"),
        "bad-variable": (text.replace("pre-fp8-hicache,before abort fix,fp8", "pre-fp8-hicache,before abort fix,fp16"),
                         "column 'index_k_dtype'"),
        "unknown-column": (text.replace("run_id,phase", "run_id,phaze", 1), "unknown column phaze"),
        "repeated-id": (text + text.splitlines()[1] + "\n", "repeats line 2"),
    }
    for name, (content, words) in cases.items():
        bad = tmp_path / f"{name}.csv"
        bad.write_text(content)
        db = tmp_path / f"{name}.duckdb"
        code, _, err = cli("import", "evidence", str(bad), "--db", str(db))
        assert code == 2, (name, err)
        assert words in err and str(bad) in err, (name, err)
        assert not db.exists(), name


def test_cli_import_loads_no_heavy_modules():
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", "import workbench.cli.main"],
                         capture_output=True, text=True, check=True, cwd=REPO).stderr
    loaded = {line.split("|")[-1].strip().split(".")[0] for line in out.splitlines() if "|" in line}
    for heavy in ("torch", "pandas", "altair", "asyncssh", "duckdb", "scipy"):
        assert heavy not in loaded, f"`wb --help` must not import {heavy}"


def test_wb_help_and_version_run_as_a_console_script():
    wb = Path(sys.executable).with_name("wb")
    out = subprocess.run([str(wb), "--version"], capture_output=True, text=True, check=True).stdout
    assert out.startswith("wb ")
    out = subprocess.run([str(wb), "--help"], capture_output=True, text=True, check=True).stdout
    for group in ("hypothesis", "runs", "db", "import", "sim", "kernel", "schema"):
        assert group in out


def test_schema_prints_both_json_schemas(cli):
    code, out, _ = cli("schema")
    schemas = json.loads(out)
    assert set(schemas) == {"hypotheses.yaml", "experiments/*.yaml", "evidence CSV"}
    assert "hypotheses" in schemas["hypotheses.yaml"]["properties"]
    assert "profiles" in schemas["experiments/*.yaml"]["properties"]


def _keywords(node, path=""):
    """Every (path, key) of a JSON Schema's objects, skipping the names under "properties" and "$defs"."""
    if isinstance(node, list):
        for i, item in enumerate(node):
            yield from _keywords(item, f"{path}/{i}")
    elif isinstance(node, dict):
        for key, value in node.items():
            if path.endswith(("/properties", "/$defs")):
                yield from _keywords(value, f"{path}/{key}")
                continue
            yield path, key
            yield from _keywords(value, f"{path}/{key}")


def test_schema_bounds_are_json_schema_keywords(cli):
    # An optional bounded number (design.replicates, design.seed, an SSH port) once came out as pydantic's
    # own "ge"/"le", which no editor knows: replicates: 0 went unmarked there while wb refused it.
    code, out, _ = cli("schema")
    assert code == 0
    schemas = json.loads(out)
    stray = [(path, key) for path, key in _keywords(schemas) if key in {"ge", "le", "gt", "lt"}]
    assert stray == []
    override = schemas["hypotheses.yaml"]["$defs"]["DesignOverride"]["properties"]["replicates"]
    assert {"type": "integer", "minimum": 1, "maximum": 1000} in override["anyOf"]
