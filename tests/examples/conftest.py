"""Fixtures: the kvcache example in a temporary folder."""

from __future__ import annotations

import pytest

from kvcache_kit import make_kv


@pytest.fixture
def kv(tmp_path, monkeypatch):
    monkeypatch.delenv("WB_ROOT", raising=False)
    monkeypatch.delenv("WB_DB", raising=False)
    k = make_kv(tmp_path)
    yield k
    k.stop()
