"""The report: a static, offline HTML site (board, hypothesis pages, runs, confounds, lineage) and Markdown.

Nothing heavy is imported here; `build_site` loads jinja2, altair and the store modules when called.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workbench.registry.folder import Registry
    from workbench.store.engine import Store


__all__ = ["MANIFEST", "build_site"]

MANIFEST = ".wb-site.json"  # the list of files a built site holds (its presence says a site was built here)


def build_site(store: Store, registry: Registry, out_dir: str | Path, **kwargs: Any) -> dict[str, Any]:
    """Write the site for `registry` and the runs in `store` under `out_dir`; see `site.build_site`."""
    from workbench.report.site import build_site as _build

    return _build(store, registry, out_dir, **kwargs)
