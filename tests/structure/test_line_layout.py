"""Line layout the Python sources keep: no line over 120 characters, two blank lines around top-level
functions and classes, never three in a row. A text scan, told by `tokenize` which lines lie inside strings."""

from __future__ import annotations

import io
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_LINE = 120
TOP_LEVEL_DEF = ("def ", "async def ", "class ", "@")
# Python 3.12 splits an f-string into tokens: its start and end, in place of one STRING.
FSTRING_START, FSTRING_END = getattr(tokenize, "FSTRING_START", None), getattr(tokenize, "FSTRING_END", None)


def sources() -> list[Path]:
    paths = [p for folder in ("workbench", "tests", "studies", "scripts") for p in (ROOT / folder).rglob("*.py")]
    return sorted(paths + list((ROOT / "kernels").glob("*.py")))


def string_lines(text: str) -> set[int]:
    """The lines that begin inside a string opened on an earlier line (its closing line too). Tokenize knows every
    quoting (a triple quote inside an ordinary string or a comment, a prefix); counting quote marks did not."""
    inside: set[int] = set()
    opened: list[int] = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.STRING:
            inside.update(range(tok.start[0] + 1, tok.end[0] + 1))
        elif tok.type == FSTRING_START:
            opened.append(tok.start[0])
        elif tok.type == FSTRING_END:
            inside.update(range(opened.pop() + 1, tok.end[0] + 1))
    return inside


def layout_faults(where: str, text: str) -> list[str]:
    faults: list[str] = []
    try:
        strings = string_lines(text)  # lines that begin inside a string: its text, not the code's layout
    except (tokenize.TokenError, SyntaxError) as exc:
        return [f"{where}: not read as Python: {exc}"]
    runs: list[int] = []    # blank-line runs since the last line of code (a comment does not end the gap)
    blank = 0
    seen_code = after_def = after_decorator = False
    for no, line in enumerate(io.StringIO(text), 1):  # numbered as tokenize numbers them (a form feed ends none)
        line = line.rstrip("\r\n")
        if len(line) > MAX_LINE:
            faults.append(f"{where}:{no}: {len(line)} characters")
        in_string, stripped = no in strings, line.strip()
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


def test_a_triple_quote_inside_an_ordinary_string_opens_no_string():
    """Counting quote marks took the triple quote in r'\"\"\"' for a string's start and skipped every line after it
    (64 lines of this very file) until another one; tokenize knows where each string begins and ends."""
    code = 'x = 1\nP = r\'"""\'\ndef f():\n    pass\ny = 2\n'
    assert layout_faults("x", code) == ["x:3: 0 blank lines before it, 2 expected",
                                        "x:5: 0 blank lines before it, 2 expected"]
    code = 'S = """a\n\n\n\nb"""\nT = f"""{S}\n\n\n\n"""\n\n\ndef g():\n    return \'\'\'\n' + "x" * 130 + "\n'''\n"
    assert layout_faults("s", code) == ["s:15: 130 characters"]
