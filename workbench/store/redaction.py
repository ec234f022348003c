"""The store's redaction hook: every text column of every row a session flushes goes through
`workbench.secrets.redact_text`, so a new column or a new writer cannot forget a secret."""

from __future__ import annotations

import threading
from typing import Any

_lock = threading.Lock()
_installed = False


def _before_flush(session: Any, flush_context: Any, instances: Any) -> None:
    from sqlalchemy import inspect

    from workbench.secrets import redact_text

    for obj in list(session.new) + list(session.dirty):
        state = inspect(obj)
        for attr in state.mapper.column_attrs:
            value = getattr(obj, attr.key, None)
            if isinstance(value, str):
                clean = redact_text(value)
                if clean != value:
                    setattr(obj, attr.key, clean)


def install_redaction() -> None:
    """Listen on every SQLAlchemy session of this process (idempotent)."""
    global _installed
    with _lock:
        if _installed:
            return
        from sqlalchemy import event
        from sqlalchemy.orm import Session

        event.listen(Session, "before_flush", _before_flush)
        _installed = True
