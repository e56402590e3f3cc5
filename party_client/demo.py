"""``party demo``: the whole story on one machine.

It starts a key holder on loopback with a development PKI (mTLS), creates a
hospital, a cancer registry, a second registry, an insurer and a research
cohort with synthetic data.  The hospital links with the registry and
releases a de-identified table with its report; the second registry
de-duplicates against both; the insurer looks up claimants; the cohort, which
has no health card numbers, joins the registry on names and dates of birth
(fuzzy rules, blocking in padded bins).  It then prints what each party learned.  The key holder runs as its own process
(``python -m keyholder.cli``): the party client never imports it.  Everything is written to one
folder (default ``./securelink-demo/``), which is kept for the user to open.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd

from common.schemes import SCHEME_NAMES
from party_client.api import Party
from party_client.errors import PartyError

DEFAULT_FOLDER = "securelink-demo"
#: What the demo writes in its folder: ``--force`` removes these (and nothing else) before a new run.
DEMO_ENTRIES = ("registry.csv", "hospital.csv", "claims.csv", "west.csv", "cohort.csv", "cohort_truth.csv",
                "keyholder-tls", "keyholder.port", "keyholder.log", "keyholder", "keyholder-audit.tsv",
                "registry", "hospital", "registry-west", "insurer", "cohort", "release.toml", "policy.json",
                "reports", "release.csv", "west_overlaps.csv", "cohort_linked.csv", "rules-registry.toml",
                "rules-cohort.toml")
PHASES = 7

FIRST = ["Ana", "Ben", "Chloé", "Dmitri", "Eve", "Farah", "Gus", "Hana", "Ivan", "Jo", "Kemal", "Lea"]
LAST = ["O'Brien", "Nguyen", "Smith", "Müller", "Tremblay", "Singh", "Roy", "Côté", "Li", "Martin"]


def synthetic_people(count: int, seed: int = 7) -> pd.DataFrame:
    """People with a 10-digit health card number, a given name, a surname and a date of birth."""
    rng = np.random.default_rng(seed)
    hcn = rng.choice(10 ** 10, size=count, replace=False)
    births = pd.Timestamp("1930-01-01") + pd.to_timedelta(rng.integers(0, 80 * 365, count), unit="D")
    return pd.DataFrame({
        "hcn": [f"{v:010d}" for v in hcn],
        "given": rng.choice(FIRST, count),
        "surname": rng.choice(LAST, count),
        "dob": births.strftime("%Y-%m-%d"),
    })


def _dashed(hcn: str) -> str:
    return f"{hcn[:4]}-{hcn[4:7]}-{hcn[7:]}"


def _respelled(name: str) -> str:
    """The same name spelled another way: a later vowel changed (Smith -> Smyth), as clerks do."""
    swap = {"a": "e", "e": "a", "i": "y", "y": "i", "o": "u", "u": "o"}
    for position in range(len(name) - 1, 0, -1):
        if name[position] in swap:
            return name[:position] + swap[name[position]] + name[position + 1:]
    return name


def cohort_of(registry: pd.DataFrame, outsiders: pd.DataFrame) -> pd.DataFrame:
    """A research cohort without health card numbers: 60 registry patients written the way a study
    clinic writes them (day/month/year, names respelled, a wrong day, year or swapped day and month),
    and 20 people the registry does not hold."""
    cases = registry.iloc[100:160][["given", "surname", "dob"]].reset_index(drop=True)
    born = pd.to_datetime(cases["dob"])
    written = []
    for i, date in enumerate(born):
        if i % 4 == 1:                                        # born a year later on the study form
            date = date.replace(year=date.year + 1) if not (date.month == 2 and date.day == 29) else date
        elif i % 4 == 2:                                      # a wrong day
            date = date.replace(day=date.day % 28 + 1)
        elif i % 4 == 3 and date.day <= 12:                   # day and month swapped
            date = date.replace(month=date.day, day=date.month)
        written.append(date.strftime("%d/%m/%Y"))
    cohort = pd.DataFrame({"first_name": cases["given"],
                           "last_name": [_respelled(n) if i % 2 else n for i, n in enumerate(cases["surname"])],
                           "birth_date": written})
    others = outsiders[["given", "surname", "dob"]].head(20)
    others = pd.DataFrame({"first_name": others["given"], "last_name": others["surname"],
                           "birth_date": pd.to_datetime(others["dob"]).dt.strftime("%d/%m/%Y")})
    study = pd.concat([cohort, others], ignore_index=True)
    return study.assign(participant=[f"P{i:03d}" for i in range(len(study))],
                        truly_in_registry=[i < len(cohort) for i in range(len(study))])


def build_data(rows: int, folder: Path) -> dict[str, Path]:
    rng = np.random.default_rng(11)
    people = synthetic_people(int(rows * 1.6))
    registry = people.iloc[: rows].copy()
    registry["site"] = rng.choice(["breast", "lung", "colorectal", "prostate", "melanoma"], len(registry))
    registry["stage"] = rng.choice(["I", "II", "III", "IV"], len(registry))
    hospital = people.iloc[rows // 2: rows // 2 + rows].copy()
    hospital["hcn"] = [_dashed(h) if i % 3 == 0 else h for i, h in enumerate(hospital["hcn"])]  # other format
    hospital.iloc[0, hospital.columns.get_loc("hcn")] = "  "                                  # a blank id
    hospital["los_days"] = rng.integers(1, 30, len(hospital))
    claims = pd.DataFrame({"claimant_hcn": [registry["hcn"].iloc[3], registry["hcn"].iloc[40 % rows],
                                            "9999999999"], "claim": ["C-1", "C-2", "C-3"]})
    west = pd.concat([people.iloc[rows - 50: rows + 40], people.iloc[int(1.5 * rows):]])[["hcn", "given", "surname",
                                                                                          "dob"]]
    cohort = cohort_of(registry, people.iloc[int(1.5 * rows):])
    paths = {"registry": folder / "registry.csv", "hospital": folder / "hospital.csv",
             "claims": folder / "claims.csv", "west": folder / "west.csv", "cohort": folder / "cohort.csv"}
    cohort.drop(columns="truly_in_registry").to_csv(paths["cohort"], index=False)
    cohort[["participant", "truly_in_registry"]].to_csv(folder / "cohort_truth.csv", index=False)
    west.to_csv(paths["west"], index=False)
    registry.to_csv(paths["registry"], index=False)
    hospital.to_csv(paths["hospital"], index=False)
    claims.to_csv(paths["claims"], index=False)
    return paths


def _keyholder(*args: str) -> list[str]:
    return [sys.executable, "-m", "keyholder.cli", *args]


def start_keyholder(folder: Path) -> tuple[subprocess.Popen, int, Path]:
    tls = folder / "keyholder-tls"
    subprocess.run(_keyholder("pki", "init", "--tls-dir", str(tls)), check=True, capture_output=True)
    port_file = folder / "keyholder.port"
    log = open(folder / "keyholder.log", "w")
    process = subprocess.Popen(_keyholder("serve", "--listen", "127.0.0.1:0", "--data-dir", str(folder / "keyholder"),
                                          "--tls-dir", str(tls), "--port-file", str(port_file)),
                               stdout=log, stderr=subprocess.STDOUT,
                               env={**os.environ, "KEYHOLDER_PASSPHRASE": os.urandom(16).hex()})
    deadline = time.monotonic() + 30
    while not port_file.exists() or not port_file.read_text().strip():
        if process.poll() is not None or time.monotonic() > deadline:
            raise PartyError(f"the demo key holder did not start (see {folder / 'keyholder.log'})")
        time.sleep(0.1)
    return process, int(port_file.read_text()), tls


def make_party(folder: Path, name: str, tls: Path, address: str, progress: bool | None = False) -> Party:
    directory = folder / name
    Party.init(directory, name)
    subprocess.run(_keyholder("pki", "issue", "--tls-dir", str(tls), "--name", name,
                              "--out", str(directory / "tls")), check=True, capture_output=True)
    party = Party(directory, keyholder=address, progress=progress)
    party.register()
    return party


RELEASE_SPEC = """
[columns]
hcn = "direct"
given = "direct"
surname = "direct"
dob = "quasi"
los_days = "other"
site = "sensitive"
stage = "sensitive"
matched = "other"
[types]
dob = "dob"
[hierarchies]
dob = { builder = "dates" }   # day, week, month, quarter, year, 5 years, 10 years, *
[release]
type = "non-public"
threshold = 0.2
"""


FUZZY_RULES = """# the {who}'s rules file: its own columns and date format; the rest must agree with the other party's
[[field]]
name = "sn"
column = "{surname}"
encoder = "soundex"
[[field]]
name = "gn"
column = "{given}"
encoder = "nysiis"
[[field]]
name = "dob"
column = "{dob}"
encoder = "dob_ndi"
date_format = "{date_format}"
transposed = true          # also match day and month swapped
[rule]
match = "sn and gn and dob"
[[blocking]]
fields = ["sn", "gn"]      # padded bins: the holder learns nothing about which blocks the querier holds
"""


def write_fuzzy_rules(folder: Path) -> dict[str, Path]:
    """The registry's and the cohort's rules files (same fields, rule and blocking; own columns)."""
    paths = {"registry": folder / "rules-registry.toml", "cohort": folder / "rules-cohort.toml"}
    paths["registry"].write_text(FUZZY_RULES.format(who="registry", surname="surname", given="given", dob="dob",
                                                    date_format="%Y-%m-%d"))
    paths["cohort"].write_text(FUZZY_RULES.format(who="cohort", surname="last_name", given="first_name",
                                                  dob="birth_date", date_format="%d/%m/%Y"))
    return paths


def run_fuzzy_step(registry: Party, cohort: Party, paths: dict[str, Path], folder: Path) -> dict:
    """The cohort (no health card numbers) joins the registry on names and dates of birth; the
    same rules applied in plaintext give the check."""
    from party_client.matching.quality import plaintext_pairs
    from party_client.matching.rules_file import load_rules
    from party_client.files import read_table, write_table
    rules = write_fuzzy_rules(folder)
    stop = threading.Event()
    served: list[dict] = []
    server = _serve(registry.prepare_holder(paths["registry"], release_columns=["site"], rules=rules["registry"]), stop,
                    served)
    started = time.perf_counter()
    try:
        result = cohort.join("registry", paths["cohort"], rules=rules["cohort"], term_column="matched_by",
                             scheme="ristretto")     # the fast scheme: the fuzzy join compares many pairs
    finally:
        stop.set()
        server.join(timeout=30)
    seconds = time.perf_counter() - started
    write_table(result.frame, folder / "cohort_linked.csv")
    study, held = read_table(paths["cohort"]), read_table(paths["registry"])
    def unblocked(path: Path):                       # plaintext check over all pairs: no blocking passes
        document = tomllib.loads(path.read_text())
        return load_rules({key: value for key, value in document.items() if key != "blocking"})
    plain = plaintext_pairs(unblocked(rules["cohort"]).querier_keys(study),
                            unblocked(rules["registry"]).holder_keys(held))
    truth = read_table(folder / "cohort_truth.csv").set_index("participant")["truly_in_registry"] == "True"
    linked = set(result.frame.loc[result.frame["matched"], "participant"])
    block = result.report["passes"][0]
    return {"participants": len(study), "linked": len(linked), "pairs": int(result.frame["matched"].sum()),
            "plaintext_pairs": len(plain), "true_linked": int(truth[list(linked)].sum()),
            "in_registry": int(truth.sum()), "seconds": seconds, "bins": block["bins"], "capacity": block["capacity"],
            "candidate_pairs": sum(served[0]["candidate_pairs"]),   # the registry's count
            "matched_by": result.frame.loc[result.frame["matched"], "matched_by"].str.split("|").explode()
                                      .value_counts().sort_index().to_dict()}


def compare_schemes(querier: Party, table: Path) -> dict[str, dict]:
    """One exact join per comparison scheme, timed end to end (docs/protocol.md, "Comparison schemes")."""
    rows = {}
    for name in SCHEME_NAMES:
        started = time.perf_counter()
        result = querier.join("registry", table, "hcn", scheme=name, timeout=120)
        rows[name] = {"seconds": time.perf_counter() - started, "matched": int(result.frame["matched"].sum())}
    return rows


def _serve(holder, stop: threading.Event, served: list[dict] | None = None) -> threading.Thread:
    """Serve from a thread until ``stop``; ``served`` receives the holder's summary of each round."""
    rounds = served if served is not None else []
    thread = threading.Thread(target=lambda: rounds.extend(holder.serve(once=False, poll_seconds=1.0,
                                                                        stop=stop.is_set)), daemon=True)
    thread.start()
    return thread


def prepare_folder(out: str | Path | None, force: bool) -> Path:
    """The demo's folder: created, or emptied of an earlier demo's files with ``force``; a folder
    holding anything else is refused without ``force`` (nothing is overwritten)."""
    folder = Path(out or DEFAULT_FOLDER)
    if folder.exists() and not folder.is_dir():
        raise PartyError(f"{folder} exists and is not a folder: choose another --out")
    if folder.is_dir() and any(folder.iterdir()):
        if not force:
            raise PartyError(f"{folder} is not empty: add --force to replace an earlier demo's files, or "
                             "choose another --out")
        for name in DEMO_ENTRIES:
            entry = folder / name
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            elif entry.exists() or entry.is_symlink():
                entry.unlink()
    folder.mkdir(parents=True, exist_ok=True)
    return folder.resolve()                 # absolute paths in what the demo prints


def phase(number: int, text: str) -> None:
    print(f"[{number}/{PHASES}] {text}...", flush=True)


def run_demo(out: str | None = None, rows: int = 300, force: bool = False) -> int:
    from party_client.release import dedup_many, link_release
    folder = prepare_folder(out, force)
    print(f"demo folder: {folder} (kept after the run)", flush=True)
    phase(1, "synthetic tables, a key holder with mTLS, five parties registering")
    paths = build_data(rows, folder)
    process, port, tls = start_keyholder(folder)
    address = f"127.0.0.1:{port}"
    print(f"      key holder: pid {process.pid}, mTLS on {address}, data in {folder / 'keyholder'}", flush=True)
    stop = threading.Event()
    try:
        registry = make_party(folder, "registry", tls, address)
        hospital = make_party(folder, "hospital", tls, address, progress=None)   # bars on a terminal
        west = make_party(folder, "registry-west", tls, address, progress=None)
        insurer = make_party(folder, "insurer", tls, address, progress=None)
        cohort = make_party(folder, "cohort", tls, address, progress=None)
        servers = [_serve(registry.prepare_holder(paths["registry"], "hcn", ["site", "stage"]), stop),
                   _serve(hospital.prepare_holder(paths["hospital"], "hcn", []), stop)]
        (folder / "release.toml").write_text(RELEASE_SPEC)
        (folder / "reports").mkdir(exist_ok=True)

        started = time.perf_counter()
        import deid_core
        spec = deid_core.load_spec(folder / "release.toml")
        policy = deid_core.full_domain_policy(spec.hierarchies, {"dob": 6}, drop=spec.direct, suppress_k=5,
                                              qis=spec.quasi)   # birth dates to 10-year bands, k = 5
        (folder / "policy.json").write_text(policy.to_json())
        phase(2, "hospital joins the registry and releases a de-identified table (exact on health card "
                 "numbers, Paillier 2048-bit)")
        released = link_release(hospital, "registry", paths["hospital"], spec=folder / "release.toml",
                                method="policy", policy=str(folder / "policy.json"), out=folder / "release.csv",
                                report_dir=folder / "reports", id_column="hcn")
        phase(3, "registry-west de-duplicates against the registry and the hospital (exact, Paillier 2048-bit)")
        overlaps, per_registry = dedup_many(west, ["registry", "hospital"], paths["west"], id_column="hcn")
        overlaps.to_csv(folder / "west_overlaps.csv", index=False)
        phase(4, "insurer looks 3 claimants up in the registry (keyed buckets sized for the registry's table and a "
                 "population of 1,000,000)")
        looked = insurer.lookup("registry", paths["claims"], "claimant_hcn", population=1_000_000)
        elapsed = time.perf_counter() - started
        phase(5, "hospital joins the registry again under each comparison scheme (Paillier 2048-bit and "
                 "ElGamal on ristretto255)")
        schemes = compare_schemes(hospital, paths["hospital"])
        stop.set()
        for server in servers:
            server.join(timeout=30)
        phase(6, "cohort joins the registry on names and dates of birth (fuzzy rules, blocking in padded bins, "
                 "ElGamal on ristretto255)")
        fuzzy = run_fuzzy_step(registry, cohort, paths, folder)
        phase(7, "checking every result against plaintext; reading the key holder's audit log")

        from party_client.files import read_table
        registry_ids = set(read_table(paths["registry"])["hcn"])
        hospital_ids = set(read_table(paths["hospital"])["hcn"].str.replace("-", ""))
        expected = len(hospital_ids & registry_ids)
        west_ids = read_table(paths["west"])["hcn"]
        expected_west = {"registry": int(west_ids.isin(registry_ids).sum()),
                         "hospital": int(west_ids.isin(hospital_ids).sum())}
        report = json.loads(Path(released["report"]).read_text())
        linkage = report["linkage"]
        print()
        print("What each party learned")
        print(f"- hospital (querier, link-release): {linkage['matched_records']} of its {linkage['records']} "
              f"patients are in the registry (plaintext check: {expected}); it received the registry's released "
              f"columns {linkage['release_columns']} for those rows only, in memory; it wrote only the "
              f"de-identified release ({released['records']} rows, birth dates in 10-year bands, max risk "
              f"{released['max_risk']:.3f}, meets 0.2: {released['meets_threshold']}) -> {released['release']}")
        print(f"  report for the ethics board: {released['html']}")
        print("  (1 blank id never matches; ids written as 1234-567-890 matched after normalization)")
        print(f"- registry-west (querier, dedup-many): of its {len(overlaps)} cases, "
              f"{per_registry['registry']['matched_records']} are also in the registry and "
              f"{per_registry['hospital']['matched_records']} at the hospital (plaintext check: "
              f"{expected_west['registry']}, {expected_west['hospital']}); nothing about records it does not hold "
              f"-> {folder / 'west_overlaps.csv'}")
        lookup = looked.report
        print(f"- insurer (querier, lookup): claims matched = {looked.frame['matched'].tolist()} "
              f"through {lookup['buckets']} keyed buckets, sized by the {lookup['decided_by']} (each holds about "
              f"{lookup['holder_people'] // lookup['buckets']} or more of the registry's people: re-identification risk "
              f"of the revealed bucket {lookup['holder_risk']:.4f} among them, {lookup['risk']:.6f} in a population "
              f"of 1,000,000; both <= 0.05)")
        print(f"- cohort (querier, fuzzy join without health card numbers): {fuzzy['linked']} of its "
              f"{fuzzy['participants']} participants linked to the registry ({fuzzy['pairs']} pairs; plaintext "
              f"with the same rules: {fuzzy['plaintext_pairs']}; {fuzzy['true_linked']} of the "
              f"{fuzzy['in_registry']} truly there) on soundex(surname), nysiis(given name) and the NDI "
              f"date-of-birth rules, in {fuzzy['seconds']:.1f} s -> {folder / 'cohort_linked.csv'}")
        print(f"  blocking on sn+gn in {fuzzy['bins']} padded bins of {fuzzy['capacity']} entries (the registry "
              f"cannot tell which bins hold a participant): the registry compared {fuzzy['candidate_pairs']} pairs, "
              f"2 bins per row with that key, whatever they held (its own count; the cohort is not told); pairs "
              f"per rule term: " +
              ", ".join(f"{term} {count}" for term, count in fuzzy["matched_by"].items()))
        print("- the same join under each comparison scheme (same matches, the key holder learns the same): " +
              ", ".join(f"{name} {row['seconds']:.2f} s ({row['matched']} matched)" for name, row in schemes.items()) +
              "; against paillier: " + ", ".join(
                  f"{name} {schemes['paillier']['seconds'] / max(row['seconds'], 1e-9):.0f}x faster"
                  for name, row in schemes.items() if name != "paillier") +
              " (party join --scheme ristretto)")
        print("- registry and hospital (holders): they saw padded, encrypted tables and bins and one keyed bucket "
              "per claim; they never learn which of their rows matched")
        print("- key holder: counts, and for the fuzzy join which rule terms held for each compared pair; never "
              "an identifier, an encoding or a released value; its audit log:")
        audit = subprocess.run(_keyholder("audit", "--data-dir", str(folder / "keyholder")),
                               capture_output=True, text=True, check=True).stdout
        (folder / "keyholder-audit.tsv").write_text(audit)
        rows_json = subprocess.run(_keyholder("audit", "--data-dir", str(folder / "keyholder"), "--json"),
                                   capture_output=True, text=True, check=True).stdout
        actions: dict[tuple[str, str], int] = {}
        for line in rows_json.splitlines():
            row = json.loads(line)
            actions[(row["party"] or "", row["action"])] = actions.get((row["party"] or "", row["action"]), 0) + 1
        for (party, action), count in sorted(actions.items()):
            print(f"    {party or '-':14s} {action:15s} x{count}")
        print(f"\n{linkage['key_bits']}-bit Paillier, mTLS; link-release, dedup-many and lookup took {elapsed:.1f} s")
        print(f"\nOpen (everything stays in {folder}):")
        print(f"  release report (HTML) for the ethics board: {released['html']}")
        print(f"  joined tables: {released['release']} (de-identified), {folder / 'cohort_linked.csv'}, "
              f"{folder / 'west_overlaps.csv'}")
        print(f"  the key holder's audit log: {folder / 'keyholder-audit.tsv'} "
              f"(or: keyholder audit --data-dir {folder / 'keyholder'})")
        ok = (linkage["matched_records"] == expected and looked.frame["matched"].tolist() == [True, True, False]
              and fuzzy["pairs"] == fuzzy["plaintext_pairs"]
              and len({row["matched"] for row in schemes.values()}) == 1 and schemes["paillier"]["matched"] > 0
              and all(per_registry[r]["matched_records"] == expected_west[r] for r in expected_west))
        return 0 if ok else 1
    finally:
        stop.set()
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
