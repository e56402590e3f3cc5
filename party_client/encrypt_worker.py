"""Encrypt a share of the querier's table in a second process.

gmpy2 holds the GIL for the comb's 4096-bit multiplications, so threads do
not speed up encryption (measured 0.93x); a process does.  Nothing is
pickled: the parent writes fixed-width raw bytes to the worker's stdin and
reads fixed-width ciphertexts from its stdout.

Input:  8-byte big-endian length of n, n, 4-byte item width w, then items of
        1 + w bytes (flag 0: encrypt a random value; flag 1: encrypt the
        big-endian integer that follows).
Output: one ciphertext of ``2 * ceil(|n| / 8)`` bytes per item, in order.
The worker draws its own obfuscator base: any valid encryption will do.
"""
from __future__ import annotations

import subprocess
import sys
import threading

from common.schemes.paillier import Encryptor, PublicKey

MIN_ITEMS_FOR_WORKERS = 20_000


def _read_exact(stream, size: int) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise EOFError("truncated input")
    return data


def serve(source, sink) -> int:
    n_length = int.from_bytes(_read_exact(source, 8), "big")
    key = PublicKey(_read_exact(source, n_length))
    width = int.from_bytes(_read_exact(source, 4), "big")
    encryptor = Encryptor(key)
    while True:
        item = source.read(1 + width)
        if not item:
            break
        if len(item) != 1 + width:
            raise EOFError("truncated item")
        value = encryptor.encrypt(int.from_bytes(item[1:], "big")) if item[0] else encryptor.encrypt_random()
        sink.write(key.to_bytes(value))
    sink.flush()
    return 0


def encrypt_in_worker(key: PublicKey, encodings: list[bytes | None], width: int) -> "WorkerJob":
    """Start a worker process on ``encodings``; ``result()`` returns the ciphertexts."""
    modulus = int(key.n).to_bytes((key.bits + 7) // 8, "big")
    payload = bytearray(len(modulus).to_bytes(8, "big") + modulus + width.to_bytes(4, "big"))
    zero = bytes(width)
    for x in encodings:
        payload += b"\x00" + zero if x is None else b"\x01" + x
    process = subprocess.Popen([sys.executable, "-m", "party_client.encrypt_worker"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return WorkerJob(process, bytes(payload), key.width, len(encodings))


class WorkerJob:
    def __init__(self, process: subprocess.Popen, payload: bytes, ciphertext_width: int, count: int) -> None:
        self.process, self.width, self.count = process, ciphertext_width, count
        self._output: list[bytes] = []
        self._thread = threading.Thread(target=self._run, args=(payload,), daemon=True)
        self._thread.start()

    def _run(self, payload: bytes) -> None:
        out, _ = self.process.communicate(payload)
        self._output.append(out)

    def result(self) -> list[bytes]:
        self._thread.join()
        out = self._output[0] if self._output else b""
        if self.process.returncode != 0 or len(out) != self.count * self.width:
            raise RuntimeError("the encryption worker failed")
        return [out[i:i + self.width] for i in range(0, len(out), self.width)]


if __name__ == "__main__":
    sys.exit(serve(sys.stdin.buffer, sys.stdout.buffer))
