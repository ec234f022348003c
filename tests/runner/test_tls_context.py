"""The CA certificates https health URLs are checked against are loaded once per process while their file is
unchanged: every execution checks them before touching the target, and loading a system bundle is ~40 ms of CPU."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from workbench.errors import TargetError
from workbench.runner.targets.base import tls_context


def _ca(path: Path, subject: str) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from tls_kit import _cert

    key = ec.generate_private_key(ec.SECP256R1())
    path.write_bytes(_cert(subject, key, None, None, ca=True).public_bytes(serialization.Encoding.PEM))


def _subjects(ctx) -> list[str]:
    return [dict(x[0] for x in c["subject"])["commonName"] for c in ctx.get_ca_certs()]


def test_a_ca_file_is_loaded_once_and_again_when_it_changes(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    _ca(ca, "first CA")
    first = tls_context(str(ca))
    assert tls_context(str(ca)) is first and _subjects(first) == ["first CA"]
    _ca(ca, "second CA, a longer name")  # replaced: another size and mtime
    second = tls_context(str(ca))
    assert second is not first and _subjects(second) == ["second CA, a longer name"]
    ca.write_text("not a certificate\n")
    with pytest.raises(TargetError, match=r"cannot use the ca_file .*ca\.pem"):
        tls_context(str(ca))
    ca.unlink()
    with pytest.raises(TargetError, match=r"the ca_file .*ca\.pem does not exist"):
        tls_context(str(ca))


def test_ssl_cert_file_is_loaded_once_per_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ca = tmp_path / "bundle.pem"
    _ca(ca, "bundle CA")
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    first = tls_context(None)
    assert tls_context(None) is first and _subjects(first) == ["bundle CA"]
    os.utime(ca, ns=(1, 1))  # touched: loaded again
    assert tls_context(None) is not first
