"""The decode's tiny sparse indexer (query . index-K -> top-k) and the DSML tool call it emits.

The tool call is assembled from the tokens the indexer selects: with intact index-K rows the
top-8 is exactly the current round's cue block and the call is well formed; a damaged row that
loses a cue (or gains a foreign one) swaps a fragment in or out and the output becomes
unparseable DSML, the seed's "token salad". `parse_tool_call` is the client-side parser.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from workbench.sim import datapath as dp

__all__ = ["TOP_K", "Generation", "run_indexer", "generate", "parse_tool_call", "ParsedCall",
           "TOOLS", "PARAMS"]

TOP_K = dp.CUE_PARTS
TOOLS = ("read_file", "grep", "run_tests", "edit_file", "list_dir", "bash", "web_search")
PARAMS = ("path", "pattern", "start", "end", "mode", "reason")
_WORDS = ("the", "cache", "page", "index", "token", "layer", "fix", "so", "then", "we", "check",
          "buffer", "copy", "and", "it", "looks", "like", "a", "stride", "of")

OPEN = "<｜DSML｜function_calls>"
CLOSE = "</｜DSML｜function_calls>"


def query(rnd: int, tag: int) -> np.ndarray:
    q = np.zeros(dp.IDX_DIM, dtype=np.float32)
    q[0] = 1.0
    q[1 + rnd % 64] = 1.0
    q[65 + tag % 63] = 1.0
    return q


def run_indexer(idx_rows: np.ndarray, dtype: str, rnd: int, tag: int = 0,
                k: int = TOP_K) -> np.ndarray:
    """Positions (ascending) of the top-k tokens by query . index-K."""
    vals = dp.dequantize(idx_rows, dtype)
    scores = vals @ query(rnd, tag)
    # Garbage bytes can decode to NaN/inf; a real kernel would let them dominate, so do we.
    scores = np.nan_to_num(scores, nan=1e30, posinf=1e30, neginf=-1e30)
    k = min(k, scores.shape[0])
    top = np.argpartition(-scores, k - 1)[:k]
    return np.sort(top)


def _fragment(tok: int, step: int) -> str:
    kind, tag, rnd, part = dp.decode_token(tok)
    if kind == "cue":
        if part == 0:
            # The step comes from the query (the turn being answered), the rest from the cue.
            return (f'{OPEN}\n<｜DSML｜invoke name="{TOOLS[(tag * 7 + rnd) % len(TOOLS)]}" '
                    f'step="{step}">\n')
        if part == dp.CUE_PARTS - 1:
            return f"</｜DSML｜invoke>\n{CLOSE}"
        return (f'<｜DSML｜parameter name="{PARAMS[part - 1]}" string="true">'
                f"{tag:03x}.{rnd}.{part}</｜DSML｜parameter>\n")
    if kind == "final":
        return f"answer-{tag:03x}.{rnd}.{part} "
    return _WORDS[part % len(_WORDS)] + " "


@dataclass
class Generation:
    text: str
    output_ids: list[int]
    selected: list[int]
    finish_reason: str


def generate(tokens: np.ndarray, idx_rows: np.ndarray, dtype: str, *,
             max_tokens: int) -> Generation:
    """The model's answer for a prompt whose rows are in hand (the tokens come from KV rows;
    the last one, the turn marker, says which session and round the query is for)."""
    kind, tag, rnd, _ = dp.decode_token(int(tokens[-1]))
    if kind != "turn":
        tag, rnd = 0, 0
    pos = run_indexer(idx_rows, dtype, rnd, tag)
    sel = [int(tokens[p]) for p in pos]
    text = "".join(_fragment(t, rnd) for t in sel)
    key = 0
    for t in sel:
        key = (key * 1_000_003 + t) % (1 << 61)
    n_out = 250 + key % 300
    finish = "stop"
    if n_out > max_tokens:
        n_out, finish = max(1, max_tokens), "length"
        text = text[: len(text) * n_out // (250 + key % 300)]
    out = dp.filler_tokens(key + rnd, n_out).tolist()
    return Generation(text=text, output_ids=out, selected=sel, finish_reason=finish)


@dataclass
class ParsedCall:
    kind: str                 # "call", "answer", "leak", "empty"
    name: str | None = None
    call_id: str | None = None


_BLOCK = re.compile(
    r'^(?P<pre>[^<]*)' + re.escape(OPEN) + r'\n<｜DSML｜invoke name="(?P<name>[a-z_]+)" '
    r'step="(?P<step>\d+)">\n'
    r'(?P<params>(?:<｜DSML｜parameter name="[a-z_]+" string="true">[^<]*</｜DSML｜parameter>\n)*)'
    r'</｜DSML｜invoke>\n' + re.escape(CLOSE) + r'(?P<post>[^<]*)$')
_PARAM = re.compile(r'<｜DSML｜parameter name="([a-z_]+)" string="true">([^<]*)</｜DSML｜parameter>')


def parse_tool_call(text: str) -> ParsedCall:
    """What the client's tool-call parser makes of an answer: a call, an answer, or a leak."""
    if "DSML" not in text:
        return ParsedCall("answer" if text.strip() else "empty")
    m = _BLOCK.match(text)
    if not m:
        return ParsedCall("leak")
    params = _PARAM.findall(m.group("params"))
    if [p[0] for p in params] != list(PARAMS):
        return ParsedCall("leak")
    ids = {v.rsplit(".", 1)[0] for _, v in params}
    parts = [v.rsplit(".", 1)[1] for _, v in params]
    if len(ids) != 1 or parts != [str(i) for i in range(1, dp.CUE_PARTS - 1)]:
        return ParsedCall("leak")
    call_id = ids.pop()
    try:
        tag, rnd = (int(call_id.split(".")[0], 16), int(call_id.split(".")[1]))
    except (ValueError, IndexError):
        return ParsedCall("leak")
    if m.group("name") != TOOLS[(tag * 7 + rnd) % len(TOOLS)]:
        return ParsedCall("leak")     # an invoke from one call wrapped around another's params
    if int(m.group("step")) != rnd:
        return ParsedCall("leak")     # parameters copied from another step's instructions
    return ParsedCall("call", name=m.group("name"), call_id=call_id)
