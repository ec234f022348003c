"""A real PostgreSQL server for the team-store tests, started once per test session and always stopped."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import pgserver  # noqa: E402


@pytest.fixture(scope="session")
def pg_server():
    if pgserver.pg_bindir() is None:
        pytest.skip("no PostgreSQL server binaries (scripts/setup.sh --test installs them)")
    server = pgserver.start_server()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(pg_server) -> str:
    """A fresh, empty database on the shared test server."""
    return pg_server.create_database()
