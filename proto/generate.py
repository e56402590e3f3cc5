"""Regenerate the committed gRPC/protobuf stubs from ``linkage.proto``.

Run ``python -m proto.generate`` after editing the ``.proto`` file (needs the
``test`` extra: ``grpcio-tools``).  ``tests/test_proto_stubs.py`` checks that
the committed stubs equal a fresh generation.
"""
from __future__ import annotations

import sys
from pathlib import Path

PROTO_DIR = Path(__file__).resolve().parent
PROTO_FILES = ("linkage.proto",)


def generate(out_root: Path) -> list[Path]:
    """Write ``proto/*_pb2.py`` and ``proto/*_pb2_grpc.py`` under ``out_root``."""
    from grpc_tools import protoc  # imported lazily: only needed to regenerate

    (out_root / "proto").mkdir(parents=True, exist_ok=True)
    include = str(PROTO_DIR.parent)
    args = ["grpc_tools.protoc", f"-I{include}", f"--python_out={out_root}",
            f"--grpc_python_out={out_root}", f"--pyi_out={out_root}"]
    args += [str(Path("proto") / name) for name in PROTO_FILES]
    if protoc.main(args) != 0:
        raise RuntimeError("protoc failed")
    return sorted((out_root / "proto").glob("*_pb2*.py*"))


if __name__ == "__main__":
    written = generate(PROTO_DIR.parent)
    print("\n".join(str(p) for p in written))
    sys.exit(0)
