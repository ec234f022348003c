"""The report embeds only artifacts under the store's own artifact root whose bytes match their sha256,
and copies them (a hard link would let a later change to the artifact change a built site)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import synth


def _build(tmp_path: Path, rows: list[tuple[str, Path, bytes]]) -> Path:
    from workbench.registry import load_registry
    from workbench.report import build_site
    from workbench.store import open_store, records

    reg = load_registry(synth.copy_workbench(tmp_path / "wb"))
    store = open_store(str(tmp_path / "wb.duckdb"))
    try:
        with store.session() as s:
            synth.add_ab_execution(s, reg, "hicache-bf16-race", art_dir=tmp_path / "wb" / ".wb" / "artifacts" / "x",
                                   replicates=1, seed=1)
            for name, path, recorded in rows:
                records.add_artifact(s, run_id=1, name=name, path=str(path),
                                     sha256=hashlib.sha256(recorded).hexdigest(), size_bytes=len(recorded))
        build_site(store, reg, tmp_path / "site")
    finally:
        store.dispose()
    return tmp_path / "site"


def test_a_row_naming_a_file_outside_the_artifact_root_is_not_read(tmp_path: Path) -> None:
    secret = tmp_path / "private.txt"
    secret.write_bytes(b"PRIVATE-KEY-MATERIAL\n")
    site = _build(tmp_path, [("stolen", secret, secret.read_bytes())])
    page = (site / "runs" / "1.html").read_text(encoding="utf-8")
    assert "PRIVATE-KEY-MATERIAL" not in page
    assert "not found under the artifact root" in page
    assert not any("PRIVATE-KEY" in p.read_text(errors="replace") for p in site.rglob("*") if p.is_file())


def test_a_changed_artifact_is_not_embedded(tmp_path: Path) -> None:
    inside = tmp_path / "wb" / ".wb" / "artifacts" / "y" / "log.txt"
    inside.parent.mkdir(parents=True)
    inside.write_bytes(b"TAMPERED CONTENT\n")
    site = _build(tmp_path, [("log", inside, b"original content\n")])
    page = (site / "runs" / "1.html").read_text(encoding="utf-8")
    assert "TAMPERED CONTENT" not in page and "no longer matches its recorded sha256" in page


def test_site_copies_are_not_hard_links(tmp_path: Path) -> None:
    site = _build(tmp_path, [])
    copies = [p for p in (site / "artifacts").rglob("*") if p.is_file()]
    assert copies
    assert all(p.stat().st_nlink == 1 for p in copies)
