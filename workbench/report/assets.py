"""The site's shared files: one copy of the Vega runtime (from vl-convert-python, no CDN), css and js."""

from __future__ import annotations

import os
from pathlib import Path

STATIC = Path(__file__).resolve().parent / "static"
BUNDLE_NAME = "vega-bundle.js"


def _bundle_header() -> str:
    import vl_convert as vlc

    version = getattr(vlc, "__version__", "")
    return (f"/* vega {vlc.get_vega_version()}, vega-lite {vlc.get_vegalite_versions()[-1]}, "
            f"vega-embed {vlc.get_vega_embed_version()}; bundled by vl-convert-python {version} */\n")


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "wb"


def _cached_bundle(header: str) -> str:
    """The runtime's text. Bundling costs 2-3 s, so one copy per runtime version is kept in the user's
    cache (~/.cache/wb) for every new site folder; an unwritable cache only costs that time."""
    import hashlib

    cached = _cache_dir() / f"vega-bundle-{hashlib.sha256(header.encode()).hexdigest()[:16]}.js"
    try:
        text = cached.read_text(encoding="utf-8")
        if len(text) > 100_000 and text.rstrip().endswith(";"):  # a whole bundle, not a torn write
            return text
    except OSError:
        pass
    import vl_convert as vlc

    text = vlc.javascript_bundle()
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_name(f".{cached.name}.{os.getpid()}")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, cached)
    except OSError:
        pass
    return text


def write_assets(assets_dir: Path, write) -> list[Path]:
    """Write the runtime (only when missing or of another version: bundling takes ~2 s), css and js."""
    assets_dir.mkdir(parents=True, exist_ok=True)
    out = []
    bundle = assets_dir / BUNDLE_NAME
    header = _bundle_header()
    current = None
    if bundle.is_file():
        with open(bundle, encoding="utf-8") as fh:
            current = fh.readline()
    if current != header:
        write(bundle, header + _cached_bundle(header))
    out.append(bundle)
    for name in ("wb.css", "wb.js"):
        dest = assets_dir / name
        write(dest, (STATIC / name).read_text(encoding="utf-8"))
        out.append(dest)
    return out
