"""A party's directory: its name, long-term X25519 key, key-holder token,
TLS client certificate and local secrets.

Layout (secrets are written with mode 0600)::

    PARTYDIR/party.json      name, key-holder address, key fingerprint
    PARTYDIR/identity.key    X25519 private key (raw 32 bytes)
    PARTYDIR/token           bearer token issued by the key holder
    PARTYDIR/local.key       local secret: holder shuffles, lookup ledger
    PARTYDIR/tls/            ca.pem, client.pem, client.key (mTLS)
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from party_client.errors import PartyError
from party_client.crypto.seal import public_bytes

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
RESTORE = ("restore it from a backup of the party directory (or `party init` a new party in another --dir and "
           "register it)")


def unusable(path: Path, error: Exception, remedy: str) -> PartyError:
    """One line for a party file that cannot be used: not readable (permissions) or damaged, and what to do."""
    if isinstance(error, PermissionError):
        return PartyError(f"{path} cannot be read (permission denied): check its owner and permissions")
    if isinstance(error, OSError):
        reason = (error.strerror or type(error).__name__).lower()
    else:
        reason = str(error).split("\n")[0][:80] or type(error).__name__
    return PartyError(f"{path} is damaged ({reason}): {remedy}")


def write_secret(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


@dataclass
class PartyDir:
    path: Path
    name: str
    private_key: X25519PrivateKey
    keyholder: str | None = None
    insecure: bool = False

    @property
    def public_key(self) -> bytes:
        return public_bytes(self.private_key.public_key())

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(self.public_key).hexdigest()

    @property
    def token(self) -> str | None:
        token_file = self.path / "token"
        if not token_file.exists():
            return None
        try:
            token = token_file.read_bytes().decode("ascii").strip()
        except (OSError, UnicodeDecodeError) as error:
            raise unusable(token_file, error, "run `party register` for a new token") from None
        if not token.isprintable() or not token:
            raise PartyError(f"{token_file} is damaged (not a token): run `party register` for a new token")
        return token

    def save_token(self, token: str) -> None:
        write_secret(self.path / "token", token.encode())

    def save_keyholder(self, address: str, insecure: bool) -> None:
        self.keyholder, self.insecure = address, insecure
        self._write_config()

    @property
    def local_secret(self) -> bytes:
        """The party's own secret (32 bytes): it keys the lookup ledger and a holder's row shuffles, so a
        lost one is never replaced unasked (the ledger would forget every past lookup)."""
        path = self.path / "local.key"
        remedy = ("restore it from a backup of the party directory; without it past lookups no longer count "
                  "toward an identifier's risk")
        try:
            secret = path.read_bytes()
        except OSError as error:
            raise unusable(path, error, remedy) from None
        if len(secret) != 32:
            raise unusable(path, ValueError(f"{len(secret)} bytes, not 32"), remedy)
        return secret

    @property
    def tls_dir(self) -> Path:
        return self.path / "tls"

    def _write_config(self) -> None:
        config = {"name": self.name, "keyholder": self.keyholder, "insecure": self.insecure,
                  "fingerprint": self.fingerprint}
        (self.path / "party.json").write_text(json.dumps(config, indent=2) + "\n")

    @classmethod
    def create(cls, path: Path, name: str) -> "PartyDir":
        path = Path(path)
        if not NAME_PATTERN.match(name):
            raise PartyError("party name must be 1-64 characters: letters, digits, '.', '_', '-'")
        if (path / "party.json").exists():
            raise PartyError(f"{path} already holds a party; use another --dir")
        path.mkdir(parents=True, exist_ok=True)
        key = X25519PrivateKey.generate()
        write_secret(path / "identity.key", key.private_bytes(
            serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()))
        write_secret(path / "local.key", os.urandom(32))
        party = cls(path, name, key)
        party._write_config()
        return party

    @classmethod
    def load(cls, path: Path) -> "PartyDir":
        path = Path(path)
        if not (path / "party.json").exists() and not (path / "identity.key").exists():
            raise PartyError(f"{path} is not a party directory: run `party init` first")
        for name in ("party.json", "identity.key"):
            if not (path / name).exists():
                raise PartyError(f"{path / name} is missing: {RESTORE}")
        try:
            config = json.loads((path / "party.json").read_bytes().decode("utf-8"))
            if not isinstance(config, dict) or not isinstance(config.get("name"), str):
                raise ValueError("no party name")
        except (OSError, ValueError) as error:      # UnicodeDecodeError and JSONDecodeError are ValueErrors
            raise unusable(path / "party.json", error, RESTORE) from None
        try:
            key = X25519PrivateKey.from_private_bytes((path / "identity.key").read_bytes())
        except (OSError, ValueError) as error:
            raise unusable(path / "identity.key", error, RESTORE) from None
        return cls(path, config["name"], key, config.get("keyholder"), bool(config.get("insecure")))
