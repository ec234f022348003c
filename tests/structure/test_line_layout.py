"""Line layout the Python sources keep: no line over 120 characters, two blank lines around top-level
functions and classes, never three in a row. A plain text scan, so it stays cheap."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_LINE = 120
TRIPLE_QUOTE = re.compile(r'"""|\'\'\'')
TOP_LEVEL_DEF = ("def ", "async def ", "class ", "@")


def sources() -> list[Path]:
    paths = [p for folder in ("workbench", "tests", "studies", "scripts") for p in (ROOT / folder).rglob("*.py")]
    return sorted(paths + list((ROOT / "kernels").glob("*.py")))


def quote_after(line: str, quote: str | None) -> str | None:
    """The triple quote still open at the end of `line`, given the one open at its start."""
    for m in TRIPLE_QUOTE.finditer(line):
        if quote is None:
            quote = m.group()
        elif m.group() == quote:
            quote = None
    return quote


def layout_faults(where: str, text: str) -> list[str]:
    faults: list[str] = []
    quote = None            # the triple quote a string opened on an earlier line is waiting for
    runs: list[int] = []    # blank-line runs since the last line of code (a comment does not end the gap)
    blank = 0
    seen_code = after_def = after_decorator = False
    for no, line in enumerate(text.splitlines(), 1):
        if len(line) > MAX_LINE:
            faults.append(f"{where}:{no}: {len(line)} characters")
        in_string, stripped = quote is not None, line.strip()
        if in_string or not stripped.startswith("#"):  # a quote in a comment opens no string
            quote = quote_after(line, quote)
        if in_string and stripped:
            runs, blank = [], 0
        if in_string:
            continue
        if not stripped:
            blank += 1
            continue
        runs, blank = runs + [blank] if blank else runs, 0
        if stripped.startswith("#"):
            continue
        if any(r > 2 for r in runs):
            faults.append(f"{where}:{no}: {max(runs)} blank lines before it")
        if not line[0].isspace() and line[0] not in ")]}":
            is_def = line.startswith(TOP_LEVEL_DEF)
            if seen_code and not after_decorator and (is_def or after_def) and max(runs, default=0) < 2:
                faults.append(f"{where}:{no}: {max(runs, default=0)} blank lines before it, 2 expected")
            after_def, after_decorator = is_def, line.startswith("@")
        seen_code, runs = True, []
    return faults


def test_lines_fit_and_top_level_blocks_are_spaced():
    faults = [f for path in sources()
              for f in layout_faults(str(path.relative_to(ROOT)), path.read_text(encoding="utf-8"))]
    assert faults == [], "\n".join(faults)


def test_the_scan_tells_each_fault_and_reads_past_strings():
    code = ('import os\n\ndef one():\n    pass\n\n\n\ndef two():\n    return """\n\n\n\ndef inside():\n"""\n'
            'X = 1\n\n\n# about three\n@decorated\ndef three():\n    pass\n\n\n' + "y = '" + "z" * 120 + "'\n")
    assert layout_faults("m.py", code) == ["m.py:3: 1 blank lines before it, 2 expected",
                                           "m.py:8: 3 blank lines before it",
                                           "m.py:15: 0 blank lines before it, 2 expected",
                                           "m.py:24: 126 characters"]
