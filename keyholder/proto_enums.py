"""The enum values of proto/linkage.proto that the key-holder core stores and compares, as plain ints.

The core and its store stay free of gRPC and protobuf; the servicer converts.  A test
(tests/keyholder/test_proto_enums.py) ties every value here to the generated ``linkage_pb2``.
"""
from __future__ import annotations

# SessionStatus
OPEN, CLOSED, EXPIRED = 1, 2, 3
# RoundStatus
PENDING, DONE, ABORTED = 1, 2, 3
# Mode: value -> the word used in the audit log and in messages
MODES = {1: "join", 2: "dedup", 3: "lookup"}
