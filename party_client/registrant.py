"""A party's directory and its connection to the key holder, without the linkage machinery:
:class:`Registrant` opens connections and registers; :class:`party_client.api.Party` builds on it to
join, look up and hold.  ``party register`` needs only this module, so it starts without pandas."""
from __future__ import annotations

from pathlib import Path

from party_client.identity import PartyDir
from party_client.transport import FIRST_CONTACT_SECONDS, RETRY_WINDOW_SECONDS, Connection, register


class Registrant:
    """One party's directory, and a connection to the key holder on demand."""

    def __init__(self, directory: str | Path, keyholder: str | None = None, insecure: bool | None = None,
                 tls_dir: str | Path | None = None, progress: bool | None = None,
                 retry_window: float = RETRY_WINDOW_SECONDS, connect_timeout: float = FIRST_CONTACT_SECONDS) -> None:
        """``retry_window``: seconds of key-holder outage survived, counted from the last contact;
        ``connect_timeout``: seconds before a key holder never reached is reported."""
        self.dir = PartyDir.load(Path(directory))
        self.retry_window, self.connect_timeout = retry_window, connect_timeout
        self.keyholder = keyholder or self.dir.keyholder
        self.insecure = self.dir.insecure if insecure is None else insecure
        self.tls_dir = Path(tls_dir) if tls_dir else None
        self.progress = progress

    @classmethod
    def init(cls, directory: str | Path, name: str, **kwargs):
        PartyDir.create(Path(directory), name)
        return cls(directory, **kwargs)

    @property
    def name(self) -> str:
        return self.dir.name

    def connect(self) -> Connection:
        return Connection(self.dir, self.keyholder, self.insecure, self.tls_dir, retry_window=self.retry_window,
                          first_contact=self.connect_timeout)

    def register(self, keyholder: str | None = None, insecure: bool | None = None) -> str:
        """Register with the key holder; returns this party's key fingerprint."""
        if keyholder:
            self.keyholder = keyholder
        if insecure is not None:
            self.insecure = insecure
        with self.connect() as connection:
            return register(self.dir, connection).fingerprint
