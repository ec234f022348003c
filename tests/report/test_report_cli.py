"""`wb report` and `wb lineage` through the CLI, and the Markdown summary."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from workbench.cli.main import app as wb_app


@pytest.fixture
def app():
    """The real `wb` application, so the commands are tested as they are registered and shipped."""
    return wb_app


def _env(seeded: dict[str, Any]) -> dict[str, str]:
    return {"WB_ROOT": str(seeded["root"]), "WB_DB": str(seeded["db"])}


def test_markdown_summary_of_a_hypothesis(app: Any, seeded: dict[str, Any]) -> None:
    res = CliRunner().invoke(app, ["report", "--format", "md", "--hypothesis", "wedge-confound"], env=_env(seeded))
    assert res.exit_code == 0, res.output
    md = res.output
    assert md.startswith("### `wedge-confound` — falsified")
    assert "**Verdict: falsified**" in md
    assert "| prediction | observed | outcome |" in md
    assert "| corruption_rate | " in md and "Wilson 95%" in md
    assert "- [ ] attrition **(flagged; does not change the verdict: falsified stands)**" in md and "- [x] drift" in md
    assert "<script>" not in md


def test_markdown_board_without_hypothesis(app: Any, seeded: dict[str, Any]) -> None:
    res = CliRunner().invoke(app, ["report", "--format", "md"], env=_env(seeded))
    assert res.exit_code == 0, res.output
    assert "| `dead-code-dsaindexerpoolhost` | falsified | DSAIndexerPoolHost: 0 calls" in res.output


def test_report_builds_the_site_and_names_the_page(app: Any, seeded: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "site"
    res = CliRunner().invoke(app, ["report", "--out", str(out), "--hypothesis", "dead-code-dsaindexerpoolhost"],
                             env=_env(seeded))
    assert res.exit_code == 0, res.output
    page = out / "hypotheses" / "dead-code-dsaindexerpoolhost.html"
    assert f"hypothesis page: {page.resolve()}" in res.output
    assert page.is_file() and (out / "index.html").is_file()


def test_bad_input_exits_2(app: Any, seeded: dict[str, Any], tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["report", "--format", "pdf"], env=_env(seeded))
    assert res.exit_code == 2 and "--format 'pdf' is not one of html, md" in res.output
    res = CliRunner().invoke(app, ["report", "--format", "md", "--hypothesis", "nope"], env=_env(seeded))
    assert res.exit_code == 2 and "no hypothesis 'nope'" in res.output
    res = CliRunner().invoke(app, ["report", "--db", str(tmp_path / "missing.duckdb")], env=_env(seeded))
    assert res.exit_code == 2 and "no store at" in res.output


@pytest.mark.parametrize("value", ["pdf", ""])
def test_an_unknown_format_is_named_with_its_flag_and_the_values_taken(workbench_dir: Path, cli, value: str) -> None:
    """`wb report --format pdf` said only `Error: unknown format 'pdf'`: the flag was in --json's "where" alone,
    and the values taken only in the hint."""
    env = {"WB_ROOT": str(workbench_dir), "WB_DB": str(workbench_dir / "wb.duckdb")}
    code, out, err = cli("report", "--format", value, env=env)
    assert code == 2 and out == "" and "Traceback" not in err, (code, out, err)
    assert err.splitlines()[0] == f"Error: --format {value!r} is not one of html, md", err
    code, out, _ = cli("report", "--format", value, "--json", env=env)
    assert code == 2 and json.loads(out)["error"]["where"] == "--format", out
    assert not (workbench_dir / "wb.duckdb").exists() and not (workbench_dir / "reports").exists()


def test_the_format_is_taken_in_any_case_as_the_listings_take_it(app: Any, seeded: dict[str, Any],
                                                                  tmp_path: Path) -> None:
    """`wb runs list --format TSV` is taken; `wb report --format HTML` said "--format 'HTML' is not one of html,
    md", naming as unknown the very value it lists."""
    res = CliRunner().invoke(app, ["report", "--format", "MD", "--hypothesis", "wedge-confound"], env=_env(seeded))
    assert res.exit_code == 0 and res.output.startswith("### `wedge-confound` — falsified"), res.output
    out = tmp_path / "site"
    res = CliRunner().invoke(app, ["report", "--format", "Html", "--out", str(out), "--hypothesis", "wedge-confound"],
                             env=_env(seeded))
    assert res.exit_code == 0 and (out / "hypotheses" / "wedge-confound.html").is_file(), res.output
    # Markdown in upper case is still Markdown: --out, the site's folder, is refused beside it.
    res = CliRunner().invoke(app, ["report", "--format", "MD", "--out", str(tmp_path / "md")], env=_env(seeded))
    assert res.exit_code == 2 and "--format md prints to stdout" in res.output, res.output


def test_a_bad_format_outside_a_workbench_names_the_flag(tmp_path: Path, cli, monkeypatch) -> None:
    """The flag is checked before the workbench is looked for: the bad --format, not the missing hypotheses.yaml."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("WB_ROOT", raising=False)
    monkeypatch.delenv("WB_DB", raising=False)
    code, out, err = cli("report", "--format", "pdf")
    assert code == 2 and out == "" and "Traceback" not in err, (code, out, err)
    assert err.splitlines()[0] == "Error: --format 'pdf' is not one of html, md", err
    assert "hypotheses.yaml" not in err and not (tmp_path / "reports").exists(), err


def test_an_out_folder_under_a_file_is_named_as_such(app: Any, seeded: dict[str, Any], tmp_path: Path) -> None:
    """--out under a plain file: the file is in the way, it is not a folder that is missing (the hint said to
    mkdir -p it, which fails)."""
    (tmp_path / "notes.txt").write_text("mine")
    res = CliRunner().invoke(app, ["report", "--out", str(tmp_path / "notes.txt" / "site")], env=_env(seeded))
    assert res.exit_code == 2
    assert f"--out {tmp_path / 'notes.txt' / 'site'}: {tmp_path / 'notes.txt'} is a file, not a folder" in res.output
    assert "mkdir" not in res.output and "does not exist" not in res.output
    res = CliRunner().invoke(app, ["report", "--out", str(tmp_path / "notes.txt")], env=_env(seeded))
    assert res.exit_code == 2 and f"--out {tmp_path / 'notes.txt'}: " in res.output and "not a folder" in res.output
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_lineage_text_and_json(app: Any, seeded: dict[str, Any]) -> None:
    res = CliRunner().invoke(app, ["lineage"], env=_env(seeded))
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0].startswith("hicache-bf16-race  [open]")
    assert any(ln.startswith("├─ wedge-confound  [falsified]") for ln in lines)
    assert any(ln.startswith("   └─ token-granular-geometry-deployment  [open]") for ln in lines)
    res = CliRunner().invoke(app, ["lineage", "--json"], env=_env(seeded))
    graph = json.loads(res.output)
    assert {"kind": "parent", "parent": "hicache-bf16-race", "child": "wedge-confound"} in graph["edges"]
    assert {"kind": "tested_by", "hypothesis": "hicache-bf16-race", "tested_by": "wedge-confound",
            "assumption": "The wedge does not explain the corruption."} in graph["edges"]
    assert {e["kind"] for e in graph["edges"]} == {"parent", "tested_by"}
    nodes = {n["id"]: n for n in graph["nodes"]}
    assert nodes["wedge-confound"]["status"] == "falsified" \
        and nodes["token-granular-geometry-deployment"]["depth"] == 2


def test_open_with_no_browser_says_so_with_the_path(seeded: dict[str, Any], tmp_path: Path) -> None:
    # `wb report --open` where no browser can be started (no display, none on PATH) said nothing: the site was
    # built and nothing opened, silently. It now says so on stderr and names the page to open.
    import os
    import subprocess
    import sys

    bindir = Path(sys.executable).parent
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER")}
    env.update(_env(seeded), PATH=str(bindir), HOME=str(tmp_path))
    out = tmp_path / "site"
    res = subprocess.run([str(bindir / "wb"), "report", "--open", "--out", str(out)], capture_output=True, text=True,
                         env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    index = out / "index.html"
    assert index.is_file() and f"site: {index}" in res.stdout, res.stdout
    assert "no browser" in res.stderr and str(index) in res.stderr, res.stderr


def test_the_arm_table_gives_a_per_replicate_variable_no_value_of_the_arms(app: Any, seeded: dict[str, Any],
                                                                            tmp_path: Path) -> None:
    # The hypothesis page's arm table gave the workload seed, drawn afresh for every replicate, the experiment's
    # default in every arm ("seed 0 0"), a value no run used; each run's page gives its own.
    import re

    out = tmp_path / "site"
    res = CliRunner().invoke(app, ["report", "--out", str(out), "--hypothesis", "wedge-confound"], env=_env(seeded))
    assert res.exit_code == 0, res.output
    page = (out / "hypotheses" / "wedge-confound.html").read_text()
    arms = page[page.index('<section id="arms">'):page.index("</section>", page.index('<section id="arms">'))]
    (row,) = re.findall(r"<tr[^>]*><td><code>seed</code>.*?</tr>", arms)
    assert ">0<" not in row and row.count("per replicate") == 2, row
    assert re.search(r"<td><code>hicache</code></td><td>on</td><td>on</td>", arms), arms
