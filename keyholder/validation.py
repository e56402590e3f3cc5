"""Checks of every field of every request, before the key holder does any work.

One function per request type; :func:`check` dispatches on the method name.  A
refusal is a :class:`ServiceError` with INVALID_ARGUMENT (RESOURCE_EXHAUSTED for
sizes over a quota) and a one-line message naming the field.  Numbers must be
finite and in range: a NaN wait once made a long-poll spin forever.
"""
from __future__ import annotations

import math
import re
from typing import Any, Callable

from common.schemes import Scheme, get_scheme
from keyholder.errors import ServiceError
from keyholder.limits import Limits
from keyholder.proto_enums import MODES

ID_PATTERN = re.compile(r"^[0-9a-f]{32}$")          # uuid4().hex
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
KINDS = ("query",)
MAX_SEQ = 1 << 24                                     # batches per round
MAX_REASON_CHARS = 1000
MAX_QUERY_CIPHERTEXTS = 1 << 40
MAX_WAIT_ASKED = 3600.0
MAX_TABLE_ROWS = 1 << 40                              # a holder's announced keyed rows
MAX_SPEC_CHARS = 200                                  # a holder's announced matching: its keys' digest...
MAX_ANNOUNCED_FIELDS = 64                             # ...and its field names
MAX_NAME_CHARS = 64
MAX_KNOWN_IDS = 4096                                  # a holder's known work items in one ListWork


def invalid(message: str) -> ServiceError:
    return ServiceError("INVALID_ARGUMENT", message)


def session_id(value: str, field: str = "session_id") -> None:
    if not ID_PATTERN.match(value):
        raise invalid(f"{field} must be 32 lowercase hex digits")


def name(value: str, field: str) -> None:
    if not NAME_PATTERN.match(value):
        raise invalid(f"{field} must be 1-64 characters: letters, digits, '.', '_', '-'")


def wait_seconds(value: float, limits: Limits) -> float:
    """A finite wait from 0 to an hour, cut to ``limits.max_wait`` seconds."""
    if not math.isfinite(value) or not 0 <= value <= MAX_WAIT_ASKED:
        raise invalid(f"wait_seconds must be a number from 0 to {MAX_WAIT_ASKED:g} "
                      f"(K waits at most {limits.max_wait:g})")
    return min(value, limits.max_wait)


def round_no(value: int, limits: Limits) -> None:
    if not 1 <= value <= limits.max_rounds:
        raise invalid(f"round must be from 1 to {limits.max_rounds}")


def scheme(value: str) -> Scheme:
    """The comparison scheme a request names (empty: the default); INVALID_ARGUMENT naming the known ones."""
    try:
        return get_scheme(value)
    except ValueError as error:
        raise invalid(str(error)) from None


def key_bits(value: int, limits: Limits, scheme_used: Scheme) -> None:
    """A session's key size: a fixed-group scheme takes 0 or its one size, Paillier a modulus in range."""
    fixed = scheme_used.fixed_key_bits
    if fixed is not None:
        if value not in (0, fixed):
            raise invalid(f"key size {value} not allowed with the {scheme_used.name} scheme: "
                          f"use {fixed} or 0 (its group is fixed)")
        return
    if value and (value < limits.min_key_bits or value > limits.max_key_bits or value % 256):
        raise invalid(f"key size {value} not allowed: use a multiple of 256 bits from "
                      f"{limits.min_key_bits} to {limits.max_key_bits} (0: the default)")


def _register(r, limits: Limits) -> None:
    name(r.name, "name")
    if len(r.x25519_public_key) != 32:
        raise invalid("x25519_public_key must be 32 bytes")


def _get_party(r, limits: Limits) -> None:
    name(r.name, "name")


def _open_session(r, limits: Limits) -> None:
    if r.mode not in MODES:
        raise invalid("mode must be join, dedup or lookup")
    name(r.holder, "holder")
    key_bits(r.key_bits, limits, scheme(r.scheme))
    if r.ttl_seconds > limits.max_ttl:
        raise invalid(f"ttl_seconds must be at most {int(limits.max_ttl)} (0: the default)")
    if r.query_ciphertexts > MAX_QUERY_CIPHERTEXTS:
        raise invalid(f"query_ciphertexts must be at most {MAX_QUERY_CIPHERTEXTS}")


def _session_ref(r, limits: Limits) -> None:
    session_id(r.session_id)


def _message_ref(r, limits: Limits) -> None:
    session_id(r.message_id, "message_id")


def message_header(r, limits: Limits) -> None:
    """The first chunk of PutMessage: its header (the data are counted while they stream)."""
    session_id(r.session_id)
    if r.kind not in KINDS:
        raise invalid(f"kind must be one of {', '.join(KINDS)}")
    name(r.recipient, "recipient")


def _list_work(r, limits: Limits) -> None:
    wait_seconds(r.wait_seconds, limits)
    if len(r.known_message_ids) > MAX_KNOWN_IDS:
        raise invalid(f"known_message_ids may hold at most {MAX_KNOWN_IDS} ids")
    for known in r.known_message_ids:
        session_id(known, "known_message_ids")
    if r.table_rows > MAX_TABLE_ROWS:
        raise invalid(f"table_rows must be at most {MAX_TABLE_ROWS} (0: no announcement)")
    if r.HasField("matching"):
        m = r.matching
        if not 0 < len(m.spec) <= MAX_SPEC_CHARS or len(m.fields) > MAX_ANNOUNCED_FIELDS \
                or any(not 0 < len(f) <= MAX_NAME_CHARS for f in m.fields):
            raise invalid(f"matching: a spec of 1-{MAX_SPEC_CHARS} characters and at most {MAX_ANNOUNCED_FIELDS} "
                          f"field names of 1-{MAX_NAME_CHARS} characters")


def pair_rule(rule, rows: list[int], limits: Limits) -> None:
    groups = list(rule.group_sizes)
    if not groups or len(groups) > limits.max_rule_groups:
        raise invalid(f"a pair rule needs 1 to {limits.max_rule_groups} groups")
    if min(groups) < 1:
        raise invalid("a pair rule needs groups of at least one comparison")
    if rule.HasField("weighted"):
        _weighted_rule(rule, len(groups), limits)
    elif not rule.terms or len(rule.terms) > limits.max_rule_terms:
        raise invalid(f"a pair rule needs 1 to {limits.max_rule_terms} terms")
    for term in rule.terms:
        if not term.groups or len(term.groups) > len(groups) or max(term.groups) >= len(groups):
            raise invalid("every pair-rule term must name existing groups")
    width = sum(groups)
    if any(count != width for count in rows):
        raise invalid(f"with a pair rule every row has {width} comparisons (the groups' total)")


WEIGHT_LIMIT = 1 << 40                # |weight| and |threshold| in thousandths of a bit


def _weighted_rule(rule, groups: int, limits: Limits) -> None:
    """A weighted pair rule: one field and one weight per group, an else weight per field, no terms."""
    w = rule.weighted
    if rule.terms:
        raise invalid("a weighted pair rule has no terms")
    if len(w.group_fields) != groups or len(w.group_weights) != groups:
        raise invalid("a weighted pair rule needs one field and one weight per group")
    if not w.field_else or len(w.field_else) > groups or max(w.group_fields) >= len(w.field_else):
        raise invalid("every group of a weighted pair rule must name a field with an else weight")
    if any(abs(v) > WEIGHT_LIMIT for v in [*w.group_weights, *w.field_else, w.threshold]):
        raise invalid(f"weights and the threshold must lie within +-{WEIGHT_LIMIT}")


def _comparison_batch(r, limits: Limits) -> None:
    session_id(r.session_id)
    round_no(r.round, limits)
    if r.seq >= MAX_SEQ:
        raise invalid(f"seq must be below {MAX_SEQ}")
    rows = list(r.row_comparisons)
    if not rows or len(rows) != len(r.attachments):
        raise invalid("need one attachment per row and at least one row")
    if min(rows) < 1:
        raise invalid("every row needs at least one comparison")
    total = sum(rows)
    if total > limits.max_batch_comparisons:
        raise ServiceError("RESOURCE_EXHAUSTED",
                           f"a batch may hold at most {limits.max_batch_comparisons} comparisons")
    widest = 2 * limits.max_key_bits // 8
    if not r.ciphertexts or len(r.ciphertexts) > total * widest:
        raise invalid(f"ciphertexts must hold {total} ciphertexts")
    lengths = {len(a) for a in r.attachments}
    if len(lengths) != 1:
        raise invalid("attachments must all have one padded length")
    length = lengths.pop()
    if not 1 <= length <= limits.max_attachment_bytes:
        raise ServiceError("RESOURCE_EXHAUSTED",
                           f"an attachment must be 1 to {limits.max_attachment_bytes} bytes")
    if r.HasField("rule"):
        pair_rule(r.rule, rows, limits)


def _finish_round(r, limits: Limits) -> None:
    session_id(r.session_id)
    round_no(r.round, limits)
    if r.batches > MAX_SEQ:
        raise invalid(f"batches must be at most {MAX_SEQ}")
    if len(r.holder_note) > limits.max_note_bytes:
        raise ServiceError("RESOURCE_EXHAUSTED", f"holder_note larger than {limits.max_note_bytes} bytes")
    if r.HasField("last_batch"):
        _comparison_batch(r.last_batch, limits)
        if (r.last_batch.session_id, r.last_batch.round) != (r.session_id, r.round):
            raise invalid("last_batch must belong to the round being finished")


def _abort_round(r, limits: Limits) -> None:
    session_id(r.session_id)
    round_no(r.round, limits)
    if len(r.reason) > MAX_REASON_CHARS:
        raise invalid(f"reason must be at most {MAX_REASON_CHARS} characters")


def _round_ref(r, limits: Limits) -> None:
    session_id(r.session_id)
    round_no(r.round, limits)


def _wait_round(r, limits: Limits) -> None:
    _round_ref(r, limits)
    wait_seconds(r.wait_seconds, limits)


CHECKS: dict[str, Callable[[Any, Limits], None]] = {
    "Register": _register, "GetParty": _get_party, "OpenSession": _open_session,
    "GetSession": _session_ref, "CloseSession": _session_ref, "GetMessage": _message_ref,
    "AckMessage": _message_ref, "ListWork": _list_work, "SubmitComparisons": _comparison_batch,
    "FinishRound": _finish_round, "AbortRound": _abort_round, "WaitRound": _wait_round,
    "FetchResults": _round_ref,
}


def check(method: str, request, limits: Limits) -> None:
    """Refuse ``request`` of ``method`` unless every field is well-formed and in range."""
    CHECKS[method](request, limits)
