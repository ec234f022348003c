"""The serve file: parse, render, shell compatibility and errors that name the line."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from workbench.errors import BadInput
from workbench.sim.config import (DEFAULTS, VARIABLES, ServeConfig, parse_serve_text,
                                  read_serve_file, render_serve_file, with_overrides)


def test_defaults_cover_every_variable_and_are_valid():
    assert set(DEFAULTS) == set(VARIABLES)
    assert parse_serve_text("") == DEFAULTS
    cfg = ServeConfig.from_values(DEFAULTS)
    assert (cfg.prefill_port, cfg.decode_port) == (30000, 30002)
    assert cfg.index_k_dtype == "bf16" and cfg.hicache and not cfg.nixl_abort_fix


def test_render_round_trips_and_passes_bash_n(tmp_path):
    values = {"index_k_dtype": "fp8", "hicache": "off", "nixl_abort_fix": "on",
              "causal_model": "wedge", "seed": 7, "time_scale": 0.05, "prefill_port": 31234}
    text = render_serve_file(values)
    parsed = parse_serve_text(text)
    assert parsed["index_k_dtype"] == "fp8" and parsed["hicache"] == "off"
    assert parsed["causal_model"] == "wedge" and parsed["seed"] == "7"
    assert parsed["prefill_port"] == "31234" and parsed["decode_port"] == "30002"
    path = tmp_path / "serve.sh"
    path.write_text(text)
    if shutil.which("bash"):
        assert subprocess.run(["bash", "-n", str(path)]).returncode == 0
        # and a shell sees the same values
        out = subprocess.run(["bash", "-c", f". {path}; echo $index_k_dtype $nixl_abort_fix"],
                             capture_output=True, text=True).stdout.split()
        assert out == ["fp8", "on"]


def test_comments_blank_lines_quotes_and_synonyms():
    text = "# serve\n\nhicache='off'  # trailing comment\nnixl_abort_fix=true\nseed=\"3\"\n"
    v = parse_serve_text(text)
    assert v["hicache"] == "off" and v["nixl_abort_fix"] == "on" and v["seed"] == "3"


@pytest.mark.parametrize("text, line, words", [
    ("seed=1\nbogus=2\n", 2, "unknown variable 'bogus'"),
    ("index_k_dtype=fp16\n", 1, "not one of fp8, bf16"),
    ("# c\nhicache on\n", 2, "expected `name=value`"),
    ("seed=1\n\nseed=2\n", 3, "set twice"),
    ("prefill_port=70000\n", 1, "not a TCP port"),
    ("time_scale=fast\n", 1, "not a number"),
    ("seed=1 2\n", 1, "exactly one value"),
])
def test_bad_serve_file_names_file_and_line(tmp_path, text, line, words):
    path = tmp_path / "serve.sh"
    path.write_text(text)
    with pytest.raises(BadInput) as err:
        read_serve_file(path)
    assert f"{path}:{line}" in str(err.value)
    assert words in str(err.value)
    assert err.value.exit_code == 2


@pytest.mark.parametrize("name, value, said", [
    ("hicache", "maybe", "--set hicache: 'maybe' is not one of on, off"),
    ("time_scale", "fast", "--set time_scale: 'fast' is not a number"),
])
def test_a_bad_set_names_the_variable_once(name, value, said):
    """`wb sim up --set hicache=maybe` said `--set hicache: hicache='maybe' ...`, the name twice; it now reads as
    `hypothesis run` says it."""
    with pytest.raises(BadInput) as err:
        with_overrides(DEFAULTS, {name: value})
    assert err.value.message == said and err.value.exit_code == 2


def test_missing_file_is_bad_input(tmp_path):
    with pytest.raises(BadInput, match="cannot read serve file"):
        read_serve_file(tmp_path / "nope.sh")
