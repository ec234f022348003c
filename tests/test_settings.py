"""Settings: the environment is read once, flags win over it, and a bad value is bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.errors import BadInput
from workbench.settings import DEFAULT_LOCK_WAIT_S, Settings


def test_flags_win_over_the_environment():
    env = {"WB_DB": "env.duckdb", "WB_ROOT": "/env/root", "WB_DB_LOCK_WAIT": "2.5", "WB_ARTIFACTS": "/a",
           "WB_SIM_DIR": "/s"}
    s = Settings.from_env(env)
    assert (s.db, s.root, s.lock_wait_s, s.artifacts, s.sim_dir) == ("env.duckdb", Path("/env/root"), 2.5,
                                                                     Path("/a"), Path("/s"))
    s = Settings.from_env(env, db="flag.duckdb", root="/flag")
    assert (s.db, s.root) == ("flag.duckdb", Path("/flag"))


def test_defaults_without_environment():
    s = Settings.from_env({})
    assert (s.db, s.root, s.lock_wait_s, s.artifacts, s.sim_dir) == (None, None, DEFAULT_LOCK_WAIT_S, None, None)


def test_a_lock_wait_that_is_not_a_number_is_bad_input():
    with pytest.raises(BadInput, match="WB_DB_LOCK_WAIT"):
        Settings.from_env({"WB_DB_LOCK_WAIT": "soon"})


def test_the_store_waits_as_configured(tmp_path: Path):
    from workbench.app import Workbench

    wb = Workbench.open(Settings(db=str(tmp_path / "wb.duckdb"), lock_wait_s=0.25))
    with wb.store() as store:
        assert store.lock_wait_s == 0.25
