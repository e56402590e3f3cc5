"""A development PKI for mTLS: a CA, the key holder's server certificate and
one client certificate per party (common name = party name).

For production, use your organisation's CA: the key holder needs ``ca.pem``
(the CA that signs party certificates), ``server.pem`` and ``server.key``; a
party needs ``ca.pem``, ``client.pem`` and ``client.key`` in ``PARTYDIR/tls``.
"""
from __future__ import annotations

import datetime as dt
import ipaddress
import os
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = dt.timedelta(days=825)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "securelink development PKI"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write_private(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _certificate(subject: str, public_key, issuer: x509.Name, signing_key, *, ca: bool,
                 usage: x509.ObjectIdentifier | None = None,
                 hosts: tuple[str, ...] = ()) -> x509.Certificate:
    now = dt.datetime.now(dt.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(issuer)
               .public_key(public_key).serial_number(x509.random_serial_number())
               .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + VALIDITY)
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if usage is not None:
        builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if hosts:
        names: list[x509.GeneralName] = []
        for host in hosts:
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                names.append(x509.DNSName(host))
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(signing_key, hashes.SHA256())


def init_ca(tls_dir: Path, hosts: tuple[str, ...] = ("127.0.0.1", "localhost", "::1")) -> list[Path]:
    """Write ``ca.pem``/``ca.key`` and ``server.pem``/``server.key`` (SANs: ``hosts``)."""
    tls_dir = Path(tls_dir)
    if (tls_dir / "ca.key").exists():
        raise FileExistsError(f"{tls_dir} already holds a CA; remove it or use another --tls-dir")
    tls_dir.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = _certificate("securelink development CA", ca_key.public_key(), _name("securelink development CA"),
                           ca_key, ca=True)
    server_key = ec.generate_private_key(ec.SECP256R1())
    server_cert = _certificate(hosts[0], server_key.public_key(), ca_cert.subject, ca_key, ca=False,
                               usage=ExtendedKeyUsageOID.SERVER_AUTH, hosts=hosts)
    _write_private(tls_dir / "ca.key", _key_pem(ca_key))
    (tls_dir / "ca.pem").write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    _write_private(tls_dir / "server.key", _key_pem(server_key))
    (tls_dir / "server.pem").write_bytes(server_cert.public_bytes(serialization.Encoding.PEM))
    return [tls_dir / name for name in ("ca.pem", "ca.key", "server.pem", "server.key")]


def issue_client(tls_dir: Path, name: str, out_dir: Path) -> list[Path]:
    """Write ``ca.pem``, ``client.pem`` and ``client.key`` for party ``name`` into ``out_dir``."""
    tls_dir, out_dir = Path(tls_dir), Path(out_dir)
    ca_key = serialization.load_pem_private_key((tls_dir / "ca.key").read_bytes(), password=None)
    ca_cert = x509.load_pem_x509_certificate((tls_dir / "ca.pem").read_bytes())
    key = ec.generate_private_key(ec.SECP256R1())
    cert = _certificate(name, key.public_key(), ca_cert.subject, ca_key, ca=False,
                        usage=ExtendedKeyUsageOID.CLIENT_AUTH)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "ca.pem").write_bytes((tls_dir / "ca.pem").read_bytes())
    (out_dir / "client.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_private(out_dir / "client.key", _key_pem(key))
    return [out_dir / name for name in ("ca.pem", "client.pem", "client.key")]
