"""A querier's sessions in progress, kept in its party directory so that a
crashed or interrupted run resumes: re-running the same command with the same
input picks its round up instead of comparing again.

One file per session, ``PARTYDIR/sessions/<session id>.state``: JSON, zlib,
sealed with AES-256-GCM under a key derived (HKDF-SHA256) from the party's
X25519 private key (:class:`party_client.crypto.seal.SessionCipher`).  It holds the
session secret ``s`` and where each ciphertext came from, never an identifier.
"""
from __future__ import annotations

import hashlib
import json
import time
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path

from cryptography.hazmat.primitives import serialization

from party_client.identity import PartyDir, write_secret
from party_client.crypto.seal import SealError, SessionCipher


@dataclass
class SessionState:
    session_id: str
    holder: str
    mode: str
    keyholder: str
    fingerprint: str                 # the input and the options that shape the query
    created: float = field(default_factory=time.time)
    rounds_before: int = 0           # the session's rounds before our query
    round: int = 0                   # the round our query opened (0: not relayed yet)
    prepared: dict | None = None     # PreparedQuery.to_state(): s, slots, entries

    @property
    def status(self) -> str:
        return f"round {self.round} relayed" if self.round else "query not relayed yet"


def fingerprint(*parts) -> str:
    """SHA-256 over the input (file bytes, or a table's CSV) and the query options."""
    digest = hashlib.sha256()
    for part in parts:
        if isinstance(part, Path) or (isinstance(part, str) and Path(part).is_file()):
            data = Path(part).read_bytes()
        elif hasattr(part, "to_csv"):
            data = part.to_csv(index=False).encode()
        else:
            data = repr(part).encode()
        digest.update(hashlib.sha256(data).digest())
    return digest.hexdigest()


class SessionStates:
    """The sealed session states of one party directory."""

    def __init__(self, party: PartyDir) -> None:
        self.folder = party.path / "sessions"
        self._key = party.private_key.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                                                    serialization.NoEncryption())

    def _cipher(self, session_id: str) -> SessionCipher:
        return SessionCipher(self._key, session_id, 0, b"querier session state")

    def _path(self, session_id: str) -> Path:
        return self.folder / f"{session_id}.state"

    def save(self, state: SessionState) -> None:
        self.folder.mkdir(mode=0o700, exist_ok=True)
        plain = zlib.compress(json.dumps(asdict(state)).encode())
        sealed = self._cipher(state.session_id).seal(plain, SessionCipher.padded_width(len(plain)))
        temporary = self._path(state.session_id).with_suffix(".tmp")
        write_secret(temporary, sealed)
        temporary.replace(self._path(state.session_id))

    def load(self, session_id: str) -> SessionState | None:
        """The state of one session; None if absent or not ours (damaged files are ignored)."""
        try:
            plain = self._cipher(session_id).open(self._path(session_id).read_bytes())
            return SessionState(**json.loads(zlib.decompress(plain)))
        except (OSError, SealError, ValueError, TypeError, zlib.error):
            return None

    def all(self) -> list[SessionState]:
        if not self.folder.is_dir():
            return []
        found = [self.load(path.stem) for path in sorted(self.folder.glob("*.state"))]
        return sorted((s for s in found if s is not None), key=lambda s: s.created)

    def find(self, fingerprint: str) -> SessionState | None:
        """The newest state of a query with this fingerprint."""
        matching = [s for s in self.all() if s.fingerprint == fingerprint]
        return matching[-1] if matching else None

    def delete(self, session_id: str) -> None:
        self._path(session_id).unlink(missing_ok=True)
