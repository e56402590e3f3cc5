"""The key holder's quotas and timeouts, and the ``keyholder serve`` options that set them.

Every limit is a field of :class:`Limits`; docs/operations.md ("Quotas and timeouts")
lists them with their defaults and the status a call gets above them.
"""
from __future__ import annotations

import argparse
import os
from dataclasses import dataclass

from keyholder.slots import connection_budget, stream_budget

MIB = 1 << 20
DAY = 24 * 3600.0


@dataclass(frozen=True)
class Limits:
    # keys and session lifetime
    min_key_bits: int = 2048
    max_key_bits: int = 4096
    default_ttl: float = DAY
    max_ttl: float = 7 * DAY
    idle_timeout: float = 3600.0            # a session untouched this long loses its key
    upload_idle: float = 120.0              # a query upload that sends nothing for this long is aborted, s
    # relayed queries: a session declares its query's ciphertext count; K accepts at most
    # that many ciphertexts' bytes times query_margin plus query_overhead
    max_message_bytes: int = 8 << 30       # ceiling of any one query, declared or not
    default_query_bytes: int = 64 * MIB    # a session that declares nothing
    query_margin: float = 2.0
    query_overhead: int = 1 * MIB
    max_spool_session_bytes: int = 16 << 30
    max_spool_bytes: int = 64 << 30
    # per party and session
    max_open_sessions: int = 32            # open sessions a party queries at once
    max_rounds: int = 64                   # rounds (queries) per session
    max_waits: int = 16                    # concurrent ListWork/WaitRound long-polls per party
    max_wait: float = 30.0                 # longest single long-poll, s
    max_streams: int = 128                 # concurrent streamed calls (PutMessage, GetMessage, FetchResults) per
    #                                        party: a holder reads 16 queries coming in, 32 lookups, a round per core
    max_streams_total: int = stream_budget()   # ... of all parties: below the process's file-descriptor limit
    # connections (keyholder.connections): in use per party, accepted in all, closed when idle
    max_connections_party: int = 64
    max_connections: int = connection_budget()
    connection_idle: float = 30.0          # a connection with no call this long is closed, s
    handshake_timeout: float = 10.0        # a connection that has not finished its (TLS) handshake by then, s
    # comparison batches
    max_batch_comparisons: int = 1 << 16
    # zero tests (keyholder.lanes): batches zero-tested at once in all, per party, and waiting per party
    max_zero_tests: int = max(2, os.cpu_count() or 2)
    max_zero_tests_party: int = max(1, (os.cpu_count() or 2) // 2)
    max_zero_tests_queued: int = 64
    max_attachment_bytes: int = 64 << 10
    max_rule_terms: int = 256
    max_rule_groups: int = 256
    max_note_bytes: int = 1 * MIB
    # session key generation (keyholder.keygen): worker processes, and per party a queue and a budget
    keygen_workers: int = max(2, (os.cpu_count() or 2) // 2)   # two: one party's key never blocks all
    keygen_queue: int = 8                  # a party's key requests waiting at once
    keygen_seconds: float = 4.0            # worker seconds of key generation per party and minute (half at once)
    # authentication
    token_lifetime: float = 30 * DAY
    max_auth_failures: int = 20            # per failing token, client certificate or (no mTLS) address ...
    auth_window: float = 60.0              # ... within this many seconds


def add_limit_options(parser: argparse.ArgumentParser) -> None:
    """The ``keyholder serve`` options for :class:`Limits` (defaults from the dataclass)."""
    d = Limits()
    add = parser.add_argument
    add("--session-ttl", type=float, default=d.default_ttl, help="session lifetime when the querier asks none, s")
    add("--idle-timeout", type=float, default=d.idle_timeout,
        help="destroy the key of a session idle this long, s")
    add("--min-key-bits", type=int, default=d.min_key_bits,
        help="smallest Paillier modulus a session may ask for (lower only for tests)")
    add("--max-message-mb", type=int, default=d.max_message_bytes // MIB,
        help="largest relayed query in MiB, whatever a session declares")
    add("--default-query-mb", type=int, default=d.default_query_bytes // MIB,
        help="largest query of a session that declares no size, MiB")
    add("--max-spool-session-mb", type=int, default=d.max_spool_session_bytes // MIB,
        help="spooled, unacknowledged query bytes per session, MiB")
    add("--max-spool-mb", type=int, default=d.max_spool_bytes // MIB,
        help="spooled query bytes in total, MiB")
    add("--max-open-sessions", type=int, default=d.max_open_sessions,
        help="open sessions per querying party")
    add("--max-rounds", type=int, default=d.max_rounds, help="rounds per session")
    add("--max-waits", type=int, default=d.max_waits,
        help="concurrent long-polls (ListWork, WaitRound) per party")
    add("--max-streams", type=int, default=d.max_streams,
        help="concurrent streamed calls (query uploads, message and result reads) per party; more: "
             "'retry in N s'")
    add("--max-streams-total", type=int, default=d.max_streams_total,
        help="concurrent streamed calls of all parties; unless set, half the file descriptors the process "
             "may open (ulimit -n) beyond 256 kept for connections and the store, at most 4096")
    add("--max-connections-party", type=int, default=d.max_connections_party,
        help="connections one party uses at once (a call on one more: 'retry in N s'); a connection is in "
             "use while it carries a call and for --connection-idle-timeout after")
    add("--max-connections", type=int, default=d.max_connections,
        help="connections the key holder accepts at once, all parties and unauthenticated ones together "
             "(more are closed at once); unless set, half the file descriptors the process may open beyond 256, "
             "at most 4096")
    add("--connection-idle-timeout", type=float, default=d.connection_idle, metavar="SECONDS",
        help="close a connection that carries no call for this long (clients reconnect when they next call), s")
    add("--handshake-timeout", type=float, default=d.handshake_timeout, metavar="SECONDS",
        help="close a connection whose TLS handshake has not finished this long after it opened, s")
    add("--max-zero-tests", type=int, default=d.max_zero_tests,
        help="comparison batches zero-tested at once, all parties together (the cores, at least 2, unless set; "
             "more with --dask); freed lanes go to the waiting parties in turn")
    add("--max-zero-tests-party", type=int, default=d.max_zero_tests_party,
        help="comparison batches of one party zero-tested at once (half the cores, at least 1, unless set)")
    add("--max-zero-tests-queued", type=int, default=d.max_zero_tests_queued,
        help="comparison batches of one party waiting for a lane; more: 'retry in N s'")
    add("--max-attachment-bytes", type=int, default=d.max_attachment_bytes,
        help="largest sealed row attachment")
    add("--max-rule-terms", type=int, default=d.max_rule_terms,
        help="terms (and groups) of a pair rule")
    add("--token-days", type=float, default=d.token_lifetime / DAY,
        help="bearer token lifetime in days; `party register` renews")
    add("--max-auth-failures", type=int, default=d.max_auth_failures,
        help="failed authentications per minute with one token, one client certificate or (without mTLS) "
             "from one address before further failing calls are refused with 'retry in N s'; a valid "
             "token is never refused")
    add("--keygen-workers", type=int, default=d.keygen_workers,
        help="processes generating Paillier session keys; half the cores, at least 2, unless set")
    add("--keygen-queue", type=int, default=d.keygen_queue,
        help="key requests of one party waiting at once (more: 'retry in N s'); parties are served "
             "round-robin, one key at a time each")
    add("--upload-idle-timeout", type=float, default=d.upload_idle, metavar="SECONDS",
        help="abort a query upload that sends no data for this long (its holder stops reading it and its spool "
             "is freed), s")
    add("--keygen-seconds", type=float, default=d.keygen_seconds,
        help="CPU seconds of key generation each party may use per minute, at most half of them at once; "
             "beyond that its requests wait in its queue")


def limits_from_args(args: argparse.Namespace) -> Limits:
    values = dict(default_ttl=args.session_ttl, idle_timeout=args.idle_timeout, upload_idle=args.upload_idle_timeout,
                  min_key_bits=args.min_key_bits,
                  max_message_bytes=args.max_message_mb * MIB, default_query_bytes=args.default_query_mb * MIB,
                  max_spool_session_bytes=args.max_spool_session_mb * MIB, max_spool_bytes=args.max_spool_mb * MIB,
                  max_open_sessions=args.max_open_sessions, max_rounds=args.max_rounds, max_waits=args.max_waits,
                  max_streams=args.max_streams, max_streams_total=args.max_streams_total,
                  max_connections_party=args.max_connections_party, max_connections=args.max_connections,
                  connection_idle=args.connection_idle_timeout, handshake_timeout=args.handshake_timeout,
                  max_zero_tests=args.max_zero_tests, max_zero_tests_party=args.max_zero_tests_party,
                  max_zero_tests_queued=args.max_zero_tests_queued,
                  max_attachment_bytes=args.max_attachment_bytes, max_rule_terms=args.max_rule_terms,
                  max_rule_groups=args.max_rule_terms, token_lifetime=args.token_days * DAY,
                  max_auth_failures=args.max_auth_failures, keygen_workers=args.keygen_workers,
                  keygen_queue=args.keygen_queue, keygen_seconds=args.keygen_seconds)
    bad = [name for name, value in values.items() if not value > 0 or value != value]
    if bad:
        raise ValueError(f"limits must be positive: {', '.join(sorted(bad))}")
    return Limits(**values)
