"""Rows derived from token ids, the indexer, the DSML call and what damage does to it."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.sim import datapath as dp
from workbench.sim import indexer
from workbench.sim.repro import _Session


@pytest.mark.parametrize("dtype, width", [("bf16", 256), ("fp8", 132)])
def test_index_k_rows_sizes_and_round_trip(dtype, width):
    toks = np.array([1, 2, dp.cue_token(5, 2, 0), dp.turn_token(2, 5)])
    rows = dp.index_k_rows(toks, dtype)
    assert rows.shape == (4, width) and rows.dtype == np.uint8
    back = dp.dequantize(rows, dtype)
    assert np.allclose(back, dp.index_k_values(toks), atol=0.08)
    # deterministic in the token id
    assert np.array_equal(rows, dp.index_k_rows(toks, dtype))


def test_fp8_rows_are_values_then_scale():
    rows = dp.index_k_rows(np.array([dp.cue_token(1, 1, 1)]), "fp8")
    scale = rows[:, 128:132].copy().view("<f4")[0, 0]
    assert scale == pytest.approx(3.0 / 448.0, rel=1e-3)


def test_kv_rows_carry_the_token_id():
    toks = np.array([7, 1 << 20, dp.cue_token(9, 3, 7)])
    kv = dp.kv_rows(toks)
    assert kv.shape == (3, 584)
    assert list(dp.token_ids_of(kv)) == list(toks)


def _rounds(s: _Session, n: int) -> None:
    for r in range(1, n):
        s.extend(r, dp.filler_tokens(1000 + r, 250).tolist())


@pytest.mark.parametrize("dtype", ["bf16", "fp8"])
def test_intact_rows_give_the_cued_call_for_the_right_step(dtype):
    s = _Session(3, 0, 4, 300)
    _rounds(s, 3)
    t = s.prompt
    gen = indexer.generate(dp.token_ids_of(dp.kv_rows(t)), dp.index_k_rows(t, dtype), dtype,
                           max_tokens=2500)
    call = indexer.parse_tool_call(gen.text)
    assert call.kind == "call"
    assert call.call_id == f"{s.tag:03x}.3"


def test_losing_the_cue_rows_gives_token_salad():
    s = _Session(4, 0, 4, 300)
    _rounds(s, 3)
    t = s.prompt
    kv, idx = dp.kv_rows(t), dp.index_k_rows(t, "bf16")
    cue = [i for i, tok in enumerate(t) if dp.decode_token(tok)[:3:2] == ("cue", 3)]
    assert len(cue) == 8
    idx[cue[2:5]] = 0                      # stale zero rows where three cue rows should be
    gen = indexer.generate(dp.token_ids_of(kv), idx, "bf16", max_tokens=2500)
    assert "DSML" in gen.text
    assert indexer.parse_tool_call(gen.text).kind == "leak"


def test_parser_rejects_mixed_and_misplaced_parts():
    good = indexer.generate(*_prompt_rows(), "bf16", max_tokens=2500).text
    assert indexer.parse_tool_call(good).kind == "call"
    assert indexer.parse_tool_call(good.replace('step="2"', 'step="3"')).kind == "leak"
    assert indexer.parse_tool_call("stray " + good.split("\n", 2)[2]).kind == "leak"
    assert indexer.parse_tool_call("just text").kind == "answer"


def _prompt_rows():
    s = _Session(5, 0, 4, 300)
    _rounds(s, 2)
    t = s.prompt
    return dp.token_ids_of(dp.kv_rows(t)), dp.index_k_rows(t, "bf16")
