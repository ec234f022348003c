"""The site's shared files: one copy of the Vega runtime (from vl-convert-python, no CDN), css and js."""

from __future__ import annotations

from pathlib import Path

STATIC = Path(__file__).resolve().parent / "static"
BUNDLE_NAME = "vega-bundle.js"


def _bundle_header() -> str:
    import vl_convert as vlc

    version = getattr(vlc, "__version__", "")
    return (f"/* vega {vlc.get_vega_version()}, vega-lite {vlc.get_vegalite_versions()[-1]}, "
            f"vega-embed {vlc.get_vega_embed_version()}; bundled by vl-convert-python {version} */\n")


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
        import vl_convert as vlc

        write(bundle, header + vlc.javascript_bundle())
    out.append(bundle)
    for name in ("wb.css", "wb.js"):
        dest = assets_dir / name
        write(dest, (STATIC / name).read_text(encoding="utf-8"))
        out.append(dest)
    return out
