"""Benchmarks: exact join/dedup against the gmpy2 floor and OpenMined PSI, lookup latency,
cuckoo failure rates.  See benchmarks/README.md."""
