"""The key holder's records as the parties see them: sessions, messages and rounds turned into their
proto messages (what each party may be told), and a request's pair rule into the core's :class:`PairRule`."""
from __future__ import annotations

from keyholder.pair_rule import PairRule, WeightedRule
from keyholder.store import Message, Round, Session
from proto import linkage_pb2 as pb


def session_info(session: Session, holder_key: bytes = b"") -> pb.SessionInfo:
    """A session as the parties see it; ``holder_key`` the holder's X25519 key (for the querier to seal
    its query without a ``GetParty`` call)."""
    return pb.SessionInfo(session_id=session.id, mode=session.mode, querier=session.querier,
                          holder=session.holder, key_bits=session.key_bits, public_key=session.public_key,
                          status=session.status, created_at=session.created_at,
                          expires_at=session.expires_at, rounds=session.rounds,
                          max_query_bytes=session.max_query_bytes, scheme=session.scheme,
                          holder_x25519_public_key=holder_key)


def message_info(message: Message) -> pb.MessageInfo:
    return pb.MessageInfo(message_id=message.id, session_id=message.session_id, kind=message.kind,
                          sender=message.sender, recipient=message.recipient, size=message.size,
                          round=message.round or 0)


def round_info(found: Round, for_querier: bool, progress: tuple[bool, int] = (False, 0)) -> pb.RoundInfo:
    """Round status: matches, the note and (pending) the progress in 10 % steps for the querier, the
    comparison count for the holder."""
    info = pb.RoundInfo(session_id=found.session_id, round=found.round, status=found.status,
                        reason=found.reason or "")
    if for_querier:  # the comparison count would tell the querier the holder's row count
        info.matched_rows = found.matched_rows
        info.holder_note = found.holder_note or b""
        info.comparing, info.progress_percent = progress
    else:
        info.comparisons = found.comparisons
    return info


def pair_rule(rule: pb.PairRule) -> PairRule:
    """A request's pair rule (its shape checked by :func:`keyholder.validation.pair_rule`)."""
    weighted = None
    if rule.HasField("weighted"):
        w = rule.weighted
        weighted = WeightedRule(tuple(w.group_fields), tuple(w.group_weights), tuple(w.field_else), w.threshold)
    return PairRule(tuple(rule.group_sizes), tuple(tuple(term.groups) for term in rule.terms), weighted)
