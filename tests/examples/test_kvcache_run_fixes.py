"""The runner against the kvcache example's real local service: a config file behind a symlink."""

from __future__ import annotations

import os

import pytest
from kvcache_kit import run_hypothesis

pytestmark = pytest.mark.slow  # end to end: runs first (tests/conftest.py)


def test_symlinked_config_is_written_through_and_the_link_kept(kv):
    conf = kv.root / "kv.conf"
    real = kv.root / "conf" / "kv.conf"
    real.parent.mkdir()
    conf.rename(real)
    os.chmod(real, 0o600)
    conf.symlink_to("conf/kv.conf")
    original = real.read_bytes()
    summary = run_hypothesis("compression-stale", root=kv.root, db=kv.db, replicates=1, seed=1)
    # Both arms ran and the verify step read each arm's settings back from the service, which reads kv.conf
    # through the link: the arms were written into the file it points to.
    assert [r["status"] for r in summary["runs"]] == ["ok", "ok"], [r.get("error") for r in summary["runs"]]
    assert conf.is_symlink() and os.readlink(conf) == "conf/kv.conf"
    assert real.read_bytes() == original and (real.stat().st_mode & 0o777) == 0o600
    assert not list(kv.root.glob("**/*.wb-tmp"))


def test_a_redirect_the_background_child_applies_late_is_not_reported_as_held(kv, capfd):
    """`svc serve CONF > svc.log 2>&1 &` forks, then the child applies the redirect: bash may exit first, and
    a look at that instant saw the child still holding the restart's output. Here the child gives it up 0.3 s
    after the script ended (deterministically late): no warning, since nothing holds the output once it settled."""
    kv.edit('"$py" "$(dirname "$0")/svc.py" serve "$conf" &',
            '( sleep 0.3; exec "$py" "$(dirname "$0")/svc.py" serve "$conf" > "$(dirname "$0")/svc.log" 2>&1 ) &',
            kv.root / "restart.sh")
    summary = run_hypothesis("compression-stale", root=kv.root, db=kv.db, replicates=1, seed=1, show_progress=True)
    assert [r["status"] for r in summary["runs"]] == ["ok", "ok"], [r.get("error") for r in summary["runs"]]
    err = " ".join(capfd.readouterr().err.split())
    assert "background process holding its output" not in err, err
    assert "serving on" in (kv.root / "svc.log").read_text()  # the server's output went to its log
