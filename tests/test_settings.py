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


@pytest.mark.parametrize("wait", ["soon", "nan", "-1"])
def test_a_lock_wait_that_is_not_a_number_of_seconds_is_bad_input(wait):
    """nan and a negative wait were taken: a locked store was refused at once, as with 0, without a word."""
    with pytest.raises(BadInput, match=f"WB_DB_LOCK_WAIT='{wait}' is not a number of seconds"):
        Settings.from_env({"WB_DB_LOCK_WAIT": wait})
    assert Settings.from_env({"WB_DB_LOCK_WAIT": "0"}).lock_wait_s == 0.0


def test_the_store_waits_as_configured(tmp_path: Path):
    from workbench.app import Workbench

    wb = Workbench.open(Settings(db=str(tmp_path / "wb.duckdb"), lock_wait_s=0.25))
    with wb.store() as store:
        assert store.lock_wait_s == 0.25
