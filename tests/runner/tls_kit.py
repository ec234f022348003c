"""A throwaway certificate authority and an HTTPS health server on loopback, for the https health URL tests."""

from __future__ import annotations

import datetime
import ssl
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


@dataclass
class TlsServer:
    port: int
    ca_file: Path
    hosts_seen: list[str]
    server: Any

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _cert(subject: str, key: Any, issuer_name: Any, issuer_key: Any, *, ca: bool) -> Any:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    b = (x509.CertificateBuilder().subject_name(name).issuer_name(issuer_name or name)
         .public_key(key.public_key()).serial_number(x509.random_serial_number())
         .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=2))
         .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if not ca:  # the name the certificate is for: only the DNS name, so 127.0.0.1 does not match it
        b = b.add_extension(x509.SubjectAlternativeName([x509.DNSName(subject)]), critical=False)
    return b.sign(issuer_key or key, hashes.SHA256())


def https_health_server(folder: Path, name: str = "localhost") -> TlsServer:
    """An HTTPS server on 127.0.0.1 whose certificate names only `name`, signed by a CA written to
    folder/ca.pem; GET answers 200 and notes the Host header it was sent."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = _cert("wb test CA", ca_key, None, None, ca=True)
    leaf = _cert(name, key, ca.subject, ca_key, ca=False)
    pem = serialization.Encoding.PEM
    (folder / "ca.pem").write_bytes(ca.public_bytes(pem))
    (folder / "leaf.pem").write_bytes(leaf.public_bytes(pem))
    (folder / "leaf.key").write_bytes(key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                                        serialization.NoEncryption()))
    hosts: list[str] = []

    class Health(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            hosts.append(self.headers.get("Host", ""))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Health)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(folder / "leaf.pem", folder / "leaf.key")
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return TlsServer(server.server_address[1], folder / "ca.pem", hosts, server)
