from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Mode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MODE_UNSPECIFIED: _ClassVar[Mode]
    JOIN: _ClassVar[Mode]
    DEDUP: _ClassVar[Mode]
    LOOKUP: _ClassVar[Mode]

class SessionStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SESSION_STATUS_UNSPECIFIED: _ClassVar[SessionStatus]
    OPEN: _ClassVar[SessionStatus]
    CLOSED: _ClassVar[SessionStatus]
    EXPIRED: _ClassVar[SessionStatus]

class RoundStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ROUND_STATUS_UNSPECIFIED: _ClassVar[RoundStatus]
    PENDING: _ClassVar[RoundStatus]
    DONE: _ClassVar[RoundStatus]
    ABORTED: _ClassVar[RoundStatus]
MODE_UNSPECIFIED: Mode
JOIN: Mode
DEDUP: Mode
LOOKUP: Mode
SESSION_STATUS_UNSPECIFIED: SessionStatus
OPEN: SessionStatus
CLOSED: SessionStatus
EXPIRED: SessionStatus
ROUND_STATUS_UNSPECIFIED: RoundStatus
PENDING: RoundStatus
DONE: RoundStatus
ABORTED: RoundStatus

class RegisterRequest(_message.Message):
    __slots__ = ("name", "x25519_public_key")
    NAME_FIELD_NUMBER: _ClassVar[int]
    X25519_PUBLIC_KEY_FIELD_NUMBER: _ClassVar[int]
    name: str
    x25519_public_key: bytes
    def __init__(self, name: _Optional[str] = ..., x25519_public_key: _Optional[bytes] = ...) -> None: ...

class RegisterReply(_message.Message):
    __slots__ = ("name", "token", "fingerprint")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    name: str
    token: str
    fingerprint: str
    def __init__(self, name: _Optional[str] = ..., token: _Optional[str] = ..., fingerprint: _Optional[str] = ...) -> None: ...

class GetPartyRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class PartyInfo(_message.Message):
    __slots__ = ("name", "x25519_public_key", "fingerprint", "registered_at", "table_rows", "matching")
    NAME_FIELD_NUMBER: _ClassVar[int]
    X25519_PUBLIC_KEY_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    REGISTERED_AT_FIELD_NUMBER: _ClassVar[int]
    TABLE_ROWS_FIELD_NUMBER: _ClassVar[int]
    MATCHING_FIELD_NUMBER: _ClassVar[int]
    name: str
    x25519_public_key: bytes
    fingerprint: str
    registered_at: float
    table_rows: int
    matching: _containers.RepeatedCompositeFieldContainer[MatchingAnnouncement]
    def __init__(self, name: _Optional[str] = ..., x25519_public_key: _Optional[bytes] = ..., fingerprint: _Optional[str] = ..., registered_at: _Optional[float] = ..., table_rows: _Optional[int] = ..., matching: _Optional[_Iterable[_Union[MatchingAnnouncement, _Mapping]]] = ...) -> None: ...

class MatchingAnnouncement(_message.Message):
    __slots__ = ("spec", "fields")
    SPEC_FIELD_NUMBER: _ClassVar[int]
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    spec: str
    fields: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, spec: _Optional[str] = ..., fields: _Optional[_Iterable[str]] = ...) -> None: ...

class OpenSessionRequest(_message.Message):
    __slots__ = ("mode", "holder", "key_bits", "ttl_seconds", "query_ciphertexts", "scheme")
    MODE_FIELD_NUMBER: _ClassVar[int]
    HOLDER_FIELD_NUMBER: _ClassVar[int]
    KEY_BITS_FIELD_NUMBER: _ClassVar[int]
    TTL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    QUERY_CIPHERTEXTS_FIELD_NUMBER: _ClassVar[int]
    SCHEME_FIELD_NUMBER: _ClassVar[int]
    mode: Mode
    holder: str
    key_bits: int
    ttl_seconds: int
    query_ciphertexts: int
    scheme: str
    def __init__(self, mode: _Optional[_Union[Mode, str]] = ..., holder: _Optional[str] = ..., key_bits: _Optional[int] = ..., ttl_seconds: _Optional[int] = ..., query_ciphertexts: _Optional[int] = ..., scheme: _Optional[str] = ...) -> None: ...

class SessionInfo(_message.Message):
    __slots__ = ("session_id", "mode", "querier", "holder", "key_bits", "public_key", "status", "created_at", "expires_at", "rounds", "max_query_bytes", "scheme", "holder_x25519_public_key")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    QUERIER_FIELD_NUMBER: _ClassVar[int]
    HOLDER_FIELD_NUMBER: _ClassVar[int]
    KEY_BITS_FIELD_NUMBER: _ClassVar[int]
    PUBLIC_KEY_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    ROUNDS_FIELD_NUMBER: _ClassVar[int]
    MAX_QUERY_BYTES_FIELD_NUMBER: _ClassVar[int]
    SCHEME_FIELD_NUMBER: _ClassVar[int]
    HOLDER_X25519_PUBLIC_KEY_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    mode: Mode
    querier: str
    holder: str
    key_bits: int
    public_key: bytes
    status: SessionStatus
    created_at: float
    expires_at: float
    rounds: int
    max_query_bytes: int
    scheme: str
    holder_x25519_public_key: bytes
    def __init__(self, session_id: _Optional[str] = ..., mode: _Optional[_Union[Mode, str]] = ..., querier: _Optional[str] = ..., holder: _Optional[str] = ..., key_bits: _Optional[int] = ..., public_key: _Optional[bytes] = ..., status: _Optional[_Union[SessionStatus, str]] = ..., created_at: _Optional[float] = ..., expires_at: _Optional[float] = ..., rounds: _Optional[int] = ..., max_query_bytes: _Optional[int] = ..., scheme: _Optional[str] = ..., holder_x25519_public_key: _Optional[bytes] = ...) -> None: ...

class SessionRef(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class MessageChunk(_message.Message):
    __slots__ = ("header", "data", "round", "last")
    HEADER_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    LAST_FIELD_NUMBER: _ClassVar[int]
    header: MessageHeader
    data: bytes
    round: int
    last: bool
    def __init__(self, header: _Optional[_Union[MessageHeader, _Mapping]] = ..., data: _Optional[bytes] = ..., round: _Optional[int] = ..., last: _Optional[bool] = ...) -> None: ...

class MessageHeader(_message.Message):
    __slots__ = ("session_id", "kind", "recipient", "stream")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    RECIPIENT_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    kind: str
    recipient: str
    stream: bool
    def __init__(self, session_id: _Optional[str] = ..., kind: _Optional[str] = ..., recipient: _Optional[str] = ..., stream: _Optional[bool] = ...) -> None: ...

class MessageInfo(_message.Message):
    __slots__ = ("message_id", "session_id", "kind", "sender", "recipient", "size", "round")
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    SENDER_FIELD_NUMBER: _ClassVar[int]
    RECIPIENT_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    message_id: str
    session_id: str
    kind: str
    sender: str
    recipient: str
    size: int
    round: int
    def __init__(self, message_id: _Optional[str] = ..., session_id: _Optional[str] = ..., kind: _Optional[str] = ..., sender: _Optional[str] = ..., recipient: _Optional[str] = ..., size: _Optional[int] = ..., round: _Optional[int] = ...) -> None: ...

class MessageRef(_message.Message):
    __slots__ = ("message_id",)
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    message_id: str
    def __init__(self, message_id: _Optional[str] = ...) -> None: ...

class ListWorkRequest(_message.Message):
    __slots__ = ("wait_seconds", "table_rows", "matching", "known_message_ids")
    WAIT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    TABLE_ROWS_FIELD_NUMBER: _ClassVar[int]
    MATCHING_FIELD_NUMBER: _ClassVar[int]
    KNOWN_MESSAGE_IDS_FIELD_NUMBER: _ClassVar[int]
    wait_seconds: float
    table_rows: int
    matching: MatchingAnnouncement
    known_message_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, wait_seconds: _Optional[float] = ..., table_rows: _Optional[int] = ..., matching: _Optional[_Union[MatchingAnnouncement, _Mapping]] = ..., known_message_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class WorkItem(_message.Message):
    __slots__ = ("session", "round", "message_id", "querier", "received_seqs", "querier_x25519_public_key")
    SESSION_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    QUERIER_FIELD_NUMBER: _ClassVar[int]
    RECEIVED_SEQS_FIELD_NUMBER: _ClassVar[int]
    QUERIER_X25519_PUBLIC_KEY_FIELD_NUMBER: _ClassVar[int]
    session: SessionInfo
    round: int
    message_id: str
    querier: str
    received_seqs: _containers.RepeatedScalarFieldContainer[int]
    querier_x25519_public_key: bytes
    def __init__(self, session: _Optional[_Union[SessionInfo, _Mapping]] = ..., round: _Optional[int] = ..., message_id: _Optional[str] = ..., querier: _Optional[str] = ..., received_seqs: _Optional[_Iterable[int]] = ..., querier_x25519_public_key: _Optional[bytes] = ...) -> None: ...

class WorkList(_message.Message):
    __slots__ = ("items",)
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[WorkItem]
    def __init__(self, items: _Optional[_Iterable[_Union[WorkItem, _Mapping]]] = ...) -> None: ...

class ComparisonBatch(_message.Message):
    __slots__ = ("session_id", "round", "seq", "ciphertexts", "row_comparisons", "attachments", "rule", "round_comparisons")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    CIPHERTEXTS_FIELD_NUMBER: _ClassVar[int]
    ROW_COMPARISONS_FIELD_NUMBER: _ClassVar[int]
    ATTACHMENTS_FIELD_NUMBER: _ClassVar[int]
    RULE_FIELD_NUMBER: _ClassVar[int]
    ROUND_COMPARISONS_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    round: int
    seq: int
    ciphertexts: bytes
    row_comparisons: _containers.RepeatedScalarFieldContainer[int]
    attachments: _containers.RepeatedScalarFieldContainer[bytes]
    rule: PairRule
    round_comparisons: int
    def __init__(self, session_id: _Optional[str] = ..., round: _Optional[int] = ..., seq: _Optional[int] = ..., ciphertexts: _Optional[bytes] = ..., row_comparisons: _Optional[_Iterable[int]] = ..., attachments: _Optional[_Iterable[bytes]] = ..., rule: _Optional[_Union[PairRule, _Mapping]] = ..., round_comparisons: _Optional[int] = ...) -> None: ...

class PairRule(_message.Message):
    __slots__ = ("group_sizes", "terms", "weighted")
    GROUP_SIZES_FIELD_NUMBER: _ClassVar[int]
    TERMS_FIELD_NUMBER: _ClassVar[int]
    WEIGHTED_FIELD_NUMBER: _ClassVar[int]
    group_sizes: _containers.RepeatedScalarFieldContainer[int]
    terms: _containers.RepeatedCompositeFieldContainer[Conjunction]
    weighted: WeightedRule
    def __init__(self, group_sizes: _Optional[_Iterable[int]] = ..., terms: _Optional[_Iterable[_Union[Conjunction, _Mapping]]] = ..., weighted: _Optional[_Union[WeightedRule, _Mapping]] = ...) -> None: ...

class WeightedRule(_message.Message):
    __slots__ = ("group_fields", "group_weights", "field_else", "threshold")
    GROUP_FIELDS_FIELD_NUMBER: _ClassVar[int]
    GROUP_WEIGHTS_FIELD_NUMBER: _ClassVar[int]
    FIELD_ELSE_FIELD_NUMBER: _ClassVar[int]
    THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    group_fields: _containers.RepeatedScalarFieldContainer[int]
    group_weights: _containers.RepeatedScalarFieldContainer[int]
    field_else: _containers.RepeatedScalarFieldContainer[int]
    threshold: int
    def __init__(self, group_fields: _Optional[_Iterable[int]] = ..., group_weights: _Optional[_Iterable[int]] = ..., field_else: _Optional[_Iterable[int]] = ..., threshold: _Optional[int] = ...) -> None: ...

class Conjunction(_message.Message):
    __slots__ = ("groups",)
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    groups: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, groups: _Optional[_Iterable[int]] = ...) -> None: ...

class BatchAck(_message.Message):
    __slots__ = ("seq", "comparisons", "duplicate")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    COMPARISONS_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    seq: int
    comparisons: int
    duplicate: bool
    def __init__(self, seq: _Optional[int] = ..., comparisons: _Optional[int] = ..., duplicate: _Optional[bool] = ...) -> None: ...

class FinishRoundRequest(_message.Message):
    __slots__ = ("session_id", "round", "batches", "holder_note", "last_batch")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    BATCHES_FIELD_NUMBER: _ClassVar[int]
    HOLDER_NOTE_FIELD_NUMBER: _ClassVar[int]
    LAST_BATCH_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    round: int
    batches: int
    holder_note: bytes
    last_batch: ComparisonBatch
    def __init__(self, session_id: _Optional[str] = ..., round: _Optional[int] = ..., batches: _Optional[int] = ..., holder_note: _Optional[bytes] = ..., last_batch: _Optional[_Union[ComparisonBatch, _Mapping]] = ...) -> None: ...

class AbortRoundRequest(_message.Message):
    __slots__ = ("session_id", "round", "reason")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    round: int
    reason: str
    def __init__(self, session_id: _Optional[str] = ..., round: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...

class RoundRef(_message.Message):
    __slots__ = ("session_id", "round")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    round: int
    def __init__(self, session_id: _Optional[str] = ..., round: _Optional[int] = ...) -> None: ...

class WaitRoundRequest(_message.Message):
    __slots__ = ("session_id", "round", "wait_seconds")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    WAIT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    round: int
    wait_seconds: float
    def __init__(self, session_id: _Optional[str] = ..., round: _Optional[int] = ..., wait_seconds: _Optional[float] = ...) -> None: ...

class RoundInfo(_message.Message):
    __slots__ = ("session_id", "round", "status", "comparisons", "matched_rows", "holder_note", "reason", "progress_percent", "comparing")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    COMPARISONS_FIELD_NUMBER: _ClassVar[int]
    MATCHED_ROWS_FIELD_NUMBER: _ClassVar[int]
    HOLDER_NOTE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_PERCENT_FIELD_NUMBER: _ClassVar[int]
    COMPARING_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    round: int
    status: RoundStatus
    comparisons: int
    matched_rows: int
    holder_note: bytes
    reason: str
    progress_percent: int
    comparing: bool
    def __init__(self, session_id: _Optional[str] = ..., round: _Optional[int] = ..., status: _Optional[_Union[RoundStatus, str]] = ..., comparisons: _Optional[int] = ..., matched_rows: _Optional[int] = ..., holder_note: _Optional[bytes] = ..., reason: _Optional[str] = ..., progress_percent: _Optional[int] = ..., comparing: _Optional[bool] = ...) -> None: ...

class Match(_message.Message):
    __slots__ = ("match_indices", "attachment")
    MATCH_INDICES_FIELD_NUMBER: _ClassVar[int]
    ATTACHMENT_FIELD_NUMBER: _ClassVar[int]
    match_indices: _containers.RepeatedScalarFieldContainer[int]
    attachment: bytes
    def __init__(self, match_indices: _Optional[_Iterable[int]] = ..., attachment: _Optional[bytes] = ...) -> None: ...

class ResultBatch(_message.Message):
    __slots__ = ("matches",)
    MATCHES_FIELD_NUMBER: _ClassVar[int]
    matches: _containers.RepeatedCompositeFieldContainer[Match]
    def __init__(self, matches: _Optional[_Iterable[_Union[Match, _Mapping]]] = ...) -> None: ...

class TableSpec(_message.Message):
    __slots__ = ("name", "bins", "hash_functions", "stash")
    NAME_FIELD_NUMBER: _ClassVar[int]
    BINS_FIELD_NUMBER: _ClassVar[int]
    HASH_FUNCTIONS_FIELD_NUMBER: _ClassVar[int]
    STASH_FIELD_NUMBER: _ClassVar[int]
    name: str
    bins: int
    hash_functions: int
    stash: int
    def __init__(self, name: _Optional[str] = ..., bins: _Optional[int] = ..., hash_functions: _Optional[int] = ..., stash: _Optional[int] = ...) -> None: ...

class QueryHeader(_message.Message):
    __slots__ = ("session_secret", "mode", "key_bits", "key_spec", "tables", "lookup_buckets", "entries", "records_per_chunk", "passes", "pair_layout", "scheme")
    SESSION_SECRET_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    KEY_BITS_FIELD_NUMBER: _ClassVar[int]
    KEY_SPEC_FIELD_NUMBER: _ClassVar[int]
    TABLES_FIELD_NUMBER: _ClassVar[int]
    LOOKUP_BUCKETS_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    RECORDS_PER_CHUNK_FIELD_NUMBER: _ClassVar[int]
    PASSES_FIELD_NUMBER: _ClassVar[int]
    PAIR_LAYOUT_FIELD_NUMBER: _ClassVar[int]
    SCHEME_FIELD_NUMBER: _ClassVar[int]
    session_secret: bytes
    mode: Mode
    key_bits: int
    key_spec: str
    tables: _containers.RepeatedCompositeFieldContainer[TableSpec]
    lookup_buckets: int
    entries: int
    records_per_chunk: int
    passes: _containers.RepeatedCompositeFieldContainer[BlockingPassSpec]
    pair_layout: str
    scheme: str
    def __init__(self, session_secret: _Optional[bytes] = ..., mode: _Optional[_Union[Mode, str]] = ..., key_bits: _Optional[int] = ..., key_spec: _Optional[str] = ..., tables: _Optional[_Iterable[_Union[TableSpec, _Mapping]]] = ..., lookup_buckets: _Optional[int] = ..., entries: _Optional[int] = ..., records_per_chunk: _Optional[int] = ..., passes: _Optional[_Iterable[_Union[BlockingPassSpec, _Mapping]]] = ..., pair_layout: _Optional[str] = ..., scheme: _Optional[str] = ...) -> None: ...

class BlockingPassSpec(_message.Message):
    __slots__ = ("name", "buckets", "records")
    NAME_FIELD_NUMBER: _ClassVar[int]
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    name: str
    buckets: int
    records: int
    def __init__(self, name: _Optional[str] = ..., buckets: _Optional[int] = ..., records: _Optional[int] = ...) -> None: ...

class CiphertextChunk(_message.Message):
    __slots__ = ("ciphertexts", "buckets", "blocks")
    CIPHERTEXTS_FIELD_NUMBER: _ClassVar[int]
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    BLOCKS_FIELD_NUMBER: _ClassVar[int]
    ciphertexts: bytes
    buckets: _containers.RepeatedScalarFieldContainer[int]
    blocks: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, ciphertexts: _Optional[bytes] = ..., buckets: _Optional[_Iterable[int]] = ..., blocks: _Optional[_Iterable[str]] = ...) -> None: ...

class RowAttachment(_message.Message):
    __slots__ = ("positions", "values", "row_tag")
    POSITIONS_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    ROW_TAG_FIELD_NUMBER: _ClassVar[int]
    positions: _containers.RepeatedScalarFieldContainer[int]
    values: _containers.RepeatedScalarFieldContainer[str]
    row_tag: bytes
    def __init__(self, positions: _Optional[_Iterable[int]] = ..., values: _Optional[_Iterable[str]] = ..., row_tag: _Optional[bytes] = ...) -> None: ...

class HolderNote(_message.Message):
    __slots__ = ("release_columns",)
    RELEASE_COLUMNS_FIELD_NUMBER: _ClassVar[int]
    release_columns: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, release_columns: _Optional[_Iterable[str]] = ...) -> None: ...
