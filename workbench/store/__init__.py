"""The store: SQLModel tables, opening by URL with revision checks, and the read/write functions."""

from workbench.store.engine import Store, head_revision, holding, open_store, resolve_url, upgrade

__all__ = ["Store", "head_revision", "holding", "open_store", "resolve_url", "upgrade"]
