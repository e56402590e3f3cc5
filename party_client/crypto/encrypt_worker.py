"""Encrypt a share of the querier's table in a second process, or on the querier's Dask cluster.

gmpy2 holds the GIL for the comb's multiplications, so threads do not speed up
encryption (measured 0.93x); a process does.  Nothing is pickled: the parent
writes fixed-width raw bytes to the worker's stdin and reads fixed-width
ciphertexts from its stdout.  The worker calls :func:`encrypt_items`, the pure batch function that
a Dask worker runs for ``party join|dedup --dask`` (docs/protocol.md, "Scaling out"), on batches of
the same framing.

Input:  2-byte length of the scheme name, the name (ASCII), 8-byte big-endian
        length of the public key, the public key, 4-byte item width w, then
        items of 1 + w bytes (flag 0: encrypt a random value, i.e. padding;
        flag 1: encrypt the w-byte encoding that follows).
Output: one ciphertext of ``scheme.ciphertext_width(public)`` bytes per item, in order.
The worker's encryptions are as good as the parent's: any valid encryption will do.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from typing import BinaryIO, Sequence

from common.schemes import Scheme, get_scheme

MIN_ITEMS_FOR_WORKERS = 20_000
BATCH_ITEMS = 1024
READ_POLL_SECONDS = 0.005   # how often the parent looks for a worker's next ciphertexts


def _read_exact(stream: BinaryIO, size: int) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise EOFError("truncated input")
    return data


def frame_items(encodings: Sequence[bytes | None], width: int) -> bytes:
    """Items of 1 + ``width`` bytes: flag 0 and zeros for padding (``None``), flag 1 and the encoding."""
    zero = bytes(width)
    return b"".join(b"\x00" + zero if x is None else b"\x01" + x for x in encodings)


def encrypt_items(scheme_name: str, public: bytes, width: int, items: bytes) -> bytes:
    """The ciphertexts of framed items (:func:`frame_items`), concatenated: a pure function of bytes,
    ints and a name (the scheme crosses processes by its name)."""
    step = 1 + width
    if len(items) % step:
        raise ValueError(f"items of {step} bytes expected, got {len(items)} bytes")
    return get_scheme(scheme_name).encrypt(public, [items[i + 1:i + step] if items[i] else None
                                                     for i in range(0, len(items), step)])


def serve(source: BinaryIO, sink: BinaryIO) -> int:
    name = _read_exact(source, int.from_bytes(_read_exact(source, 2), "big")).decode("ascii")
    public = _read_exact(source, int.from_bytes(_read_exact(source, 8), "big"))
    width = int.from_bytes(_read_exact(source, 4), "big")
    while True:
        items = source.read(BATCH_ITEMS * (1 + width))
        if len(items) % (1 + width):
            raise EOFError("truncated item")
        if not items:
            break
        sink.write(encrypt_items(name, public, width, items))
        sink.flush()                     # the parent reads each batch as it is written
    return 0


def encrypt_in_worker(scheme: Scheme, public: bytes, encodings: Sequence[bytes | None],
                      width: int) -> "WorkerJob":
    """Start a worker process on ``encodings`` (each ``width`` bytes, or None); ``result()`` returns
    the ciphertexts.  The scheme crosses to the worker by its name."""
    name = scheme.name.encode("ascii")
    payload = (len(name).to_bytes(2, "big") + name + len(public).to_bytes(8, "big") + public
               + width.to_bytes(4, "big") + frame_items(encodings, width))
    # Input and output go through unlinked temporary files rather than pipes fed by a thread of this
    # process: such a thread waits for the GIL while this process encrypts its own share, and the
    # worker then starves (measured: the worker finished 2.2 s after the parent on 27,807 slots).
    source = tempfile.TemporaryFile()
    source.write(payload)
    source.seek(0)
    sink = tempfile.TemporaryFile()
    process = subprocess.Popen([sys.executable, "-m", "party_client.crypto.encrypt_worker"], stdin=source,
                               stdout=sink, stderr=subprocess.DEVNULL)
    source.close()
    return WorkerJob(process, sink, scheme.ciphertext_width(public), len(encodings))


class WorkerJob:
    """A running encryption worker: :meth:`read` returns its ciphertexts as they are written,
    :meth:`result` all of them."""

    def __init__(self, process: subprocess.Popen, sink: BinaryIO, ciphertext_width: int, count: int) -> None:
        self.process, self.sink, self.width, self.count = process, sink, ciphertext_width, count

    def read(self, first: int, count: int) -> bytes:
        """Ciphertexts ``first`` to ``first + count`` of the worker's items, once written (it
        writes them in order); ``RuntimeError`` if the worker ended without them."""
        need, fd = (first + count) * self.width, self.sink.fileno()
        while os.fstat(fd).st_size < need:
            if self.process.poll() is not None and os.fstat(fd).st_size < need:
                raise RuntimeError("the encryption worker failed")
            time.sleep(READ_POLL_SECONDS)
        return os.pread(fd, count * self.width, first * self.width)

    def result(self) -> list[bytes]:
        self.process.wait()
        out = self.read(0, self.count) if self.process.returncode == 0 else b""
        self.sink.close()
        if len(out) != self.count * self.width:
            raise RuntimeError("the encryption worker failed")
        return [out[i:i + self.width] for i in range(0, len(out), self.width)]

    def stop(self) -> None:
        """End the worker if it still runs (the query it encrypts for was abandoned)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.sink.close()


if __name__ == "__main__":
    sys.exit(serve(sys.stdin.buffer, sys.stdout.buffer))
