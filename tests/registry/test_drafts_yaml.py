"""wb's own YAML for hypotheses (`wb confounds` drafts, `wb isolate --write`) must load back as written: a quoted
text continued over lines whose next line starts like a key reads to the registry as a quote left open."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.registry.drafts import entry_yaml
from workbench.registry.loader import load_hypotheses


def _entry(pad: int) -> dict:
    # Long texts whose words include "kind: " and "probe: ", at every offset a line break could fall on.
    words = "ab " * (pad // 3) + "x" * (pad % 3)
    claim = words + " kind: of text that goes on " + "and on " * 8 + "probe: does it still fail"
    return {"id": "a-apart-from-b", "claim": claim, "experiment": "agent-repro", "isolates": "hicache",
            "arms": {"control": {"hicache": "off"}, "treatment": {"hicache": "on"}},
            "hold": {"index_k_dtype": "bf16"},
            "predicts": [{"metric": "corruption_rate", "arm": "treatment", "at_least": 0.05,
                          "why": (words + " name: aliased runs at the clean values, and more words" * 2).strip()}],
            "falsified_if": (words + " kind: stays below 0.05 with hicache=on" * 3).strip()}


@pytest.mark.parametrize("pad", range(40, 110, 7))
def test_a_draft_entry_loads_back_as_written(tmp_path: Path, pad: int):
    entry = _entry(pad)
    path = tmp_path / "hypotheses.yaml"
    path.write_text("format: 1\nhypotheses:\n" + entry_yaml(entry))
    hyps, _ = load_hypotheses(path)
    h = hyps[0].model_dump(mode="json", exclude_defaults=True)
    assert (h["claim"], h["falsified_if"], h["predicts"][0]["why"]) == (
        entry["claim"], entry["falsified_if"], entry["predicts"][0]["why"])
    # about the width asked for (100), as PyYAML breaks
    assert max(len(line) for line in path.read_text().splitlines()) <= 120
