"""This project's ``--preset person`` and ``person-typo`` (secure, real processes) next to splink and
anonlink + clkhash (each in its own environment) on FEBRL 1-4 and the generated sets, scored alike.

    python -m benchmarks.linkage_peers [--dataset febrl1 febrl2 febrl3 febrl4 corrupted slipped census kin] [--n 5000]
        [--system splink anonlink person person-typo] [--scheme ristretto]
        [--reference] [--precision P] [--one-to-one] [--peers /work/peers] [--json OUT]

Each dataset is loaded as ``benchmarks.fuzzy_quality`` loads it (FEBRL 1-3 split at random into two
registries, scored per querier record: "which of my records does the other registry hold"; FEBRL 4
and the generated sets scored per pair; ``kin``, benchmarks/kin_people.py, the held-out set) and written
once as text CSV; every system reads the same two
files.  The peers run as subprocesses of their own environments' python
(``PEERS/<name>/venv/bin/python benchmarks/peers/<name>_link.py``, installed as benchmarks/README.md
says) and write matched pairs; this process scores them against the same truth with
``party_client.matching.quality.quality``:

- splink: its FEBRL 4 example's model and training; pairs at match probability >= 0.99 (the threshold
  its example clusters at) and, labelled "best", the best F1 over a sweep of thresholds;
- anonlink: clkhash's tutorial schema, greedy one-to-one solution at the tutorial's final threshold
  (Dice 0.8) and, labelled "best", the best F1 over thresholds 0.75-0.99; on FEBRL 1-3, whose links
  are not one-to-one (a record may have several duplicates), also the candidate pairs unsolved;
- ``person`` / ``person-typo``: ``party join|dedup --preset`` through ``keyholder serve``, ``party hold``
  and the querier (``fuzzy_quality.run_secure``) under ``--scheme``; the rule file the preset writes
  out, so both parties use the same model; comparisons per querier record from the holder's summary,
  and whether the secure run found exactly the pairs of the model's plaintext reference.
  ``--reference`` scores the plaintext reference of the same model instead (the secure run returns
  the same pairs; tests/party_client/matching checks it): for quick diagnosis, labelled as such.
  ``--precision P``: the presets' threshold derived from that target (docs/linking.md, "A precision
  target"), as both parties derive it from the holder's announced size, instead of 12 bits.
  ``--one-to-one``: on the sets linked as two registries that each hold a person once (FEBRL 4, the
  generated sets), ``person`` runs ``party join --one-to-one --duplicate-free`` (its reference the same
  assignment), and splink's pairs at each threshold are solved by that assignment on its match weight
  as well (labelled "one-to-one"); FEBRL 1-3 (duplicates) are scored as without it.

"Best" thresholds are chosen on the true links, so they are an upper bound for the peer, not what a
user gets.  Wall time is each system's process (peers: reading, training, linking, writing).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.corrupted_people import COLUMNS, true_links
from benchmarks.fuzzy_quality import (DATASET_MAPS, DATASETS, PRESET_MAP, assigned_alike, dataset_mode, load_dataset,
                                      output_pairs, per_record, preset_reference, preset_rules, run_schemes)

#: Generated sets only this benchmark links (join mode, ``n`` rows a side): ``kin`` is held out, never used
#: to choose a prior, level, weight or threshold (benchmarks/README.md, "Name levels").
HELD_OUT = {"kin": "kin_people"}
HELD_OUT_MAPS = {"kin": "first=given_name,last=surname,sex=sex,dob=date_of_birth,postcode=postcode,city=suburb"}
ALL_DATASETS = DATASETS + tuple(HELD_OUT)

PEERS = {"splink": ("match_probability", 0.99, [0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95,
                                                0.99, 0.999, 0.9999]),
         "anonlink": ("similarity", 0.8, [round(t, 2) for t in np.arange(0.75, 0.995, 0.01)])}
SYSTEMS = ("splink", "anonlink", "person", "person-typo")
HERE = Path(__file__).resolve().parent


def run_peer(name: str, peers: Path, folder: Path) -> tuple[pd.DataFrame, float]:
    """The peer's pairs (rec_id_a, rec_id_b, score) and its process's wall time."""
    python = peers / name / "venv" / "bin" / "python"
    if not python.exists():
        raise SystemExit(f"{name}: no environment at {python.parent.parent} (benchmarks/README.md, 'Linkage peers')")
    out = folder / f"{name}.csv"
    started = time.perf_counter()
    done = subprocess.run([str(python), str(HERE / "peers" / f"{name}_link.py"), str(folder / "peer_a.csv"),
                           str(folder / "peer_b.csv"), str(out)], capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{name} failed:\n{done.stderr[-2000:]}")
    return pd.read_csv(out, dtype={"rec_id_a": str, "rec_id_b": str}, keep_default_na=False), seconds


def peer_quality(name: str, pairs: pd.DataFrame, a: pd.DataFrame, b: pd.DataFrame, truth: set, mode: str,
                 one_to_one: bool = False) -> dict:
    """The peer's quality at its documented threshold and the best over its sweep (chosen on the truth);
    with ``one_to_one`` (splink) the pairs at each threshold solved by ``party join --duplicate-free``'s
    assignment on the peer's match weight."""
    from party_client.matching.assignment import one_to_one as assigned
    from party_client.matching.quality import quality
    column, documented, sweep = PEERS[name]
    position_a = {rec: i for i, rec in enumerate(a["rec_id"])}
    position_b = {rec: i for i, rec in enumerate(b["rec_id"])}
    left = pairs["rec_id_a"].map(position_a).to_numpy()
    right = pairs["rec_id_b"].map(position_b).to_numpy()
    scores = pairs[column].to_numpy(dtype=float)
    solved = pairs["solved"].to_numpy(dtype=bool) if "solved" in pairs else np.ones(len(pairs), dtype=bool)
    weights = pairs["match_weight"].to_numpy(dtype=float) if one_to_one else None

    def at(threshold: float, chosen: np.ndarray = solved) -> dict:
        keep = (scores >= threshold) & chosen
        if weights is not None:
            kept = pd.DataFrame({"__record": left[keep], "__match": right[keep], "__weight": weights[keep]})
            kept = assigned(kept, duplicate_free=True)
            return quality(set(zip(kept["__record"].tolist(), kept["__match"].tolist())), truth)
        return quality(per_record(set(zip(left[keep].tolist(), right[keep].tolist())), mode), truth)
    best_threshold = max(sweep, key=lambda t: at(t)["f1"])
    out = {"threshold": documented, **at(documented), "best": {"threshold": best_threshold, **at(best_threshold)}}
    if "solved" in pairs and mode == "dedup":
        everything = np.ones(len(pairs), dtype=bool)
        best = max(sweep, key=lambda t: at(t, everything)["f1"])
        out["unsolved"] = {"threshold": documented, **at(documented, everything),
                           "best": {"threshold": best, **at(best, everything)}}
    return out


def ours(preset: str, a: pd.DataFrame, b: pd.DataFrame, truth: set, mode: str, args, mapping: str) -> dict:
    """The preset over the dataset's roles (``mapping``), secure (or its plaintext reference with
    ``--reference``), scored."""
    from party_client.matching.quality import quality
    rules, rules_text = preset_rules(preset, mapping, args.precision)
    threshold = rules.for_holder(b).model.threshold
    solve = args.one_to_one and mode == "join"
    if args.reference:
        found, seconds = preset_reference(rules, a, b, one_to_one=solve)
        return {**quality(per_record(found, mode), truth), "seconds": round(seconds, 1), "secure": False,
                "comparisons_per_record": None, "threshold": threshold}
    report, holder_round, out, seconds = run_schemes(a, b, rules_text, mode, args, [args.scheme])[args.scheme]
    found = output_pairs(a, b, out, mode)
    if solve:        # equal weights may be assigned either way: the same optimum (fuzzy_quality.assigned_alike)
        same = assigned_alike(found, rules, a, b, report)
    else:
        same = found == per_record(preset_reference(rules, a, b, report)[0], mode)
    return {**quality(found, truth), "seconds": round(seconds, 1), "secure": True, "same_as_plaintext": same,
            "scheme": args.scheme, "comparisons": holder_round["comparisons"],
            "comparisons_per_record": round(holder_round["comparisons"] / len(a), 1),
            "compared_pairs": sum(holder_round["candidate_pairs"]), "threshold": threshold,
            "left_out": [p["left_out"] for p in report["passes"]]}


def load_any(name: str, n: int) -> tuple[pd.DataFrame, pd.DataFrame, set]:
    """A dataset as ``fuzzy_quality.load_dataset`` loads it, or a held-out generator's two registries
    (its default seed; ``n`` rows each, four fifths of them linked)."""
    if name not in HELD_OUT:
        return load_dataset(name, n)
    from importlib import import_module
    a, b = import_module(f"benchmarks.{HELD_OUT[name]}").generate(persons=n * 4 // 5, others=n - n * 4 // 5)
    return a, b, true_links(a, b)


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", nargs="+", choices=ALL_DATASETS, default=list(DATASETS[1:4]) + ["febrl4", "corrupted"])
    parser.add_argument("--n", type=int, default=5000, help="records per side (FEBRL 1-3: at most half the file)")
    parser.add_argument("--system", nargs="+", choices=SYSTEMS, default=list(SYSTEMS))
    parser.add_argument("--scheme", choices=("ristretto",), default="ristretto")
    parser.add_argument("--reference", action="store_true",
                        help="score our presets' plaintext reference instead of the secure run (diagnosis)")
    parser.add_argument("--precision", type=float, metavar="P",
                        help="our presets' threshold from this precision target (docs/linking.md), not 12 bits")
    parser.add_argument("--one-to-one", action="store_true",
                        help="two registries holding each person once: party join --one-to-one --duplicate-free, "
                             "and splink's pairs solved by the same assignment (join-mode sets only)")
    parser.add_argument("--peers", default="/work/peers", help="folder of the peers' environments")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    args.key_bits = 2048                                     # what fuzzy_quality.run_secure reads
    results = {"load_average_start": load_average(), "scheme": args.scheme, "precision": args.precision,
               "one_to_one": args.one_to_one, "datasets": {}}
    for dataset in args.dataset:
        a, b, truth = load_any(dataset, args.n)
        mode = "join" if dataset in HELD_OUT else dataset_mode(dataset)
        truth = per_record(truth, mode)
        solve = args.one_to_one and mode == "join"
        entry = {"records": [len(a), len(b)], "mode": mode, "true": len(truth), "systems": {}}
        with tempfile.TemporaryDirectory(prefix="linkage-peers-") as tmp:
            folder = Path(tmp)
            a.to_csv(folder / "a.csv", index=False)
            b.to_csv(folder / "b.csv", index=False)
            # the peers' documented models read FEBRL's columns and one date form: their files carry those
            # columns only, and B's dates in A's form (YYYYMMDD)
            a[list(COLUMNS)].to_csv(folder / "peer_a.csv", index=False)
            b.assign(date_of_birth=b["date_of_birth"].str.replace(r"[-/]", "", regex=True))[list(COLUMNS)].to_csv(
                folder / "peer_b.csv", index=False)
            for system in args.system:
                if system in PEERS:
                    pairs, seconds = run_peer(system, Path(args.peers), folder)
                    entry["systems"][system] = {**peer_quality(system, pairs, a, b, truth, mode),
                                                "seconds": round(seconds, 1)}
                    if solve and system == "splink":
                        entry["systems"]["splink one-to-one"] = peer_quality(system, pairs, a, b, truth, mode, True)
                else:
                    entry["systems"][system] = ours(system, a, b, truth, mode, args,
                                                    {**DATASET_MAPS, **HELD_OUT_MAPS}.get(dataset, PRESET_MAP))
                entry["systems"][system]["load_average"] = load_average()
                print(dataset, system, json.dumps(entry["systems"][system]), file=sys.stderr, flush=True)
        results["datasets"][dataset] = entry
    results["load_average_end"] = load_average()
    print(table(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


def table(results: dict) -> str:
    """One Markdown table: dataset x system -> precision, recall, F1, wall time, comparisons per record."""
    lines = ["| dataset | system | precision | recall | F1 | wall (s) | comparisons / record |",
             "|---|---|---|---|---|---|---|"]
    for dataset, entry in results["datasets"].items():
        for system, r in entry["systems"].items():
            if system in PEERS or system == "splink one-to-one":
                label = {"splink": f"splink, p >= {r['threshold']}", "anonlink": f"anonlink, Dice >= {r['threshold']}",
                         "splink one-to-one": f"splink, p >= {r['threshold']}, one-to-one"}
                lines.append(f"| {dataset} | {label[system]} | {r['precision']:.4f} | {r['recall']:.4f} | "
                             f"**{r['f1']:.4f}** | {r['seconds'] if 'seconds' in r else ''} | |")
                best = r["best"]
                lines.append(f"| {dataset} | {system} best (threshold {best['threshold']}, chosen on the truth) | "
                             f"{best['precision']:.4f} | {best['recall']:.4f} | {best['f1']:.4f} | | |")
                for name, v in ([("unsolved", r["unsolved"]), ("unsolved best", r["unsolved"]["best"])]
                                if "unsolved" in r else []):
                    lines.append(f"| {dataset} | {system} {name} (Dice >= {v['threshold']}, all candidate pairs) | "
                                 f"{v['precision']:.4f} | {v['recall']:.4f} | {v['f1']:.4f} | | |")
            else:
                how = (f"secure, {r['scheme']}" + ("" if r["same_as_plaintext"] else ", NOT the plaintext pairs")
                       if r["secure"] else "plaintext reference")
                per = "" if r["comparisons_per_record"] is None else f"{r['comparisons_per_record']:.1f}"
                how += f", {r['threshold']:g} bits" + (f" from --precision {results['precision']:g}"
                                                       if results.get("precision") else "")
                how += ", one-to-one" if results.get("one_to_one") and entry["mode"] == "join" else ""
                lines.append(f"| {dataset} | --preset {system} ({how}) | {r['precision']:.4f} | {r['recall']:.4f} | "
                             f"**{r['f1']:.4f}** | {r['seconds']:.1f} | {per} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
