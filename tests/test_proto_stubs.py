"""The committed gRPC/protobuf stubs must equal a fresh generation from the .proto files."""
import re
from pathlib import Path

import pytest

import proto
from proto.generate import generate


def without_versions(text: str) -> str:
    """The stubs minus the generator's version stamps (any grpcio-tools >= the runtime's may regenerate)."""
    text = re.sub(r"# Protobuf Python Version: .*", "", text)
    text = re.sub(r"ValidateProtobufRuntimeVersion\((?:[^()]|\([^()]*\))*\)", "", text)
    return re.sub(r"GRPC_GENERATED_VERSION = '[^']*'", "", text)


def test_committed_stubs_match_proto(tmp_path):
    pytest.importorskip("grpc_tools")
    committed = Path(proto.__file__).resolve().parent
    written = generate(tmp_path)
    assert written, "protoc wrote nothing"
    for path in written:
        assert without_versions((committed / path.name).read_text()) == without_versions(path.read_text()), \
            f"{path.name} is stale: run `python -m proto.generate`"


def test_no_decrypt_call_in_the_service():
    """K is never a decryption oracle: the service has no call that returns a plaintext."""
    from proto import linkage_pb2
    methods = {m.name for m in linkage_pb2.DESCRIPTOR.services_by_name["KeyHolder"].methods}
    assert not {m for m in methods if "decrypt" in m.lower()}
    assert "SubmitComparisons" in methods and "FetchResults" in methods
