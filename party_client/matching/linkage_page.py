"""The querier's HTML page of a linkage over comparison levels: m, u and weight per level, the weights of
its matches against the threshold, the model's estimated precision and recall at that threshold, and
borderline matches drawn from its own records only (splink's "match weights" and "m and u" charts,
UK Ministry of Justice, splink documentation, "Charts", are the anchor).

Estimates follow the Fellegi-Sunter model's own assumptions (fields independent given the match
status): recall = P(weight >= threshold | match) and the false-match rate P(weight >= threshold |
non-match) are exact sums over the model's weight distributions (missing left out); precision takes
the match prior from the matches found among all querier x holder pairs.  A table gives the same estimates
at whole bits around the threshold, under the prior a precision target's threshold was derived from
(:mod:`party_client.matching.precision`) when the run had one.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from deid_core.report import Document, Figure, Paragraph, Section, Table, render
from deid_core.report.figures import png
from party_client.matching.fellegi_sunter import ELSE_LEVEL, LevelModel
from party_client.matching.precision import (ASSUMED_OVERLAP, curve_rows, match_prior, precision_curve,
                                             weight_distribution)

BORDERLINE = 10                 # matches shown nearest the threshold
# How far the estimate was from the truth on sets with known links (benchmarks/README.md, "Three
# generators and FEBRL", the estimate beside the measured precision and recall): relatives at one
# address and namesakes break the independence the estimate assumes, so it errs on the bright side.
OPTIMISM = ("On test sets with known links this estimate was optimistic by up to 0.024 in precision and "
            "0.020 in recall (estimated 0.991, measured 0.967 on US names with nicknames, married names and "
            "twins): check a sample of the links by eye before relying on them.")
# The same at thresholds derived from a precision target (benchmarks/README.md, "A threshold from a precision
# target"): lower thresholds take in more of the pairs that break independence.
TARGET_OPTIMISM = ("At thresholds derived from --precision 0.99 the estimate was further off on a test set with "
                   "relatives at one address: estimated 0.990, measured 0.927 (6.6 bits; 0.994 at 12 bits).")


def estimated_quality(model: LevelModel, matches: int, pairs: int) -> dict:
    """Recall and precision the model expects at its threshold, given ``matches`` found among ``pairs``."""
    threshold = model.scaled()[2]
    reach = {}
    for name, probabilities in (("m", model.m), ("u", model.u)):
        distribution = weight_distribution(model, probabilities)
        reach[name] = sum(p for w, p in distribution.items() if w >= threshold)
    prior = min(max(matches / max(pairs, 1), 1e-12), 1.0)
    precision = prior * reach["m"] / (prior * reach["m"] + (1 - prior) * reach["u"]) if reach["m"] else 0.0
    return {"recall": reach["m"], "false_match_rate": reach["u"], "precision": precision, "prior": prior}


def _histogram(weights: np.ndarray, threshold: float) -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 3.2))
    if len(weights):
        ax.hist(weights, bins=40, color="#4472c4")
    ax.axvline(threshold, color="#c00000", ls="--", label=f"threshold {threshold:g} bits")
    ax.set_xlabel("match weight (bits)")
    ax.set_ylabel("matched pairs")
    ax.legend()
    out = png(fig)
    plt.close(fig)
    return out


def threshold_section(model: LevelModel, prior: float, target: float | None, target_rows: int | None) -> Section:
    """Where the threshold came from (a precision target and the holder's announced size, or as given) and
    the model's estimated precision and recall at whole bits around it, under ``prior``."""
    if target is not None:
        origin = (f"Threshold {model.threshold:g} bits: the lowest weight at which the model's estimated precision "
                  f"reaches the target {target:g}, for the holder's announced {target_rows:,} rows with "
                  f"{ASSUMED_OVERLAP:g} of your records assumed to match one of them (prior {prior:.3g} per pair; "
                  "docs/linking.md, \"A precision target\"). Both parties derived it before any comparison.")
    else:
        origin = (f"Threshold {model.threshold:g} bits, as given; the estimates below take the prior of the "
                  f"estimate above ({prior:.3g} per pair).")
    rows = [[f"{p.threshold:g}" + (" (this run)" if p.threshold == model.threshold else ""), f"{p.precision:.4f}",
             f"{p.recall:.4f}"] for p in curve_rows(precision_curve(model, prior), model.threshold)]
    return Section("Estimated precision and recall by threshold", [
        Paragraph(origin), Table(["threshold (bits)", "estimated precision", "estimated recall"], rows, numeric=(1, 2)),
        Paragraph(TARGET_OPTIMISM)])


def render_page(model: LevelModel, result: pd.DataFrame, weight_column: str, matched_column: str,
                own_columns: list[str], records: int, matched_records: int, holder_rows: int,
                target: float | None = None, target_rows: int | None = None) -> str:
    """The page for one linkage, drawn by the project's one report renderer (:mod:`deid_core.report`):
    ``result`` is the querier's output (its own columns, ``matched`` and ``match_weight``; a record with
    several matches has a row for each), ``records`` the querier's input records and ``matched_records``
    how many of them matched (as the run's report counts them); only the querier's own columns are
    shown for borderline pairs, under a warning that they identify people.  ``target``: the precision target
    the threshold was derived from, for a holder announcing ``target_rows`` rows."""
    matched = result[result[matched_column].astype(bool)]
    weights = matched[weight_column].to_numpy(dtype=np.float64)
    quality = estimated_quality(model, len(matched), records * max(holder_rows, 1)) if model.m and model.u else None
    levels = []
    for f in model.fields:
        meanings = [(level.name, level.meaning) for level in f.levels] + [(ELSE_LEVEL, "none of the levels above")]
        for name, meaning in meanings:
            levels.append([f.name, name, meaning, model.m.get(f.name, {}).get(name), model.u.get(f.name, {}).get(name),
                           f"{model.weights[f.name][name]:+.2f}"])
        levels.append([f.name, "missing", "no value on either side", None, None, "+0.00"])
    scaled = [f.name for f in model.fields
              if any(model.m.get(f.name, {}).get(name) and model.u.get(f.name, {}).get(name)
                     and abs(math.log2(model.m[f.name][name] / model.u[f.name][name]) - weight) > 0.01
                     for name, weight in model.weights[f.name].items())]
    caveat = ([Paragraph(f"The weights of {', '.join(scaled)} are not log2(m/u) of the m and u shown. With "
                         "--preset person, where a person lives counts once: each location role's log2(m/u) is "
                         "divided by the number of roles of its group mapped (postcode, city and state; street "
                         "number and address). A rules file may set any weights.")] if scaled else [])
    nearest = matched.assign(__gap=(matched[weight_column] - model.threshold).abs()).nsmallest(BORDERLINE, "__gap")
    shown = [c for c in own_columns if c in nearest.columns] + [weight_column]
    estimate = (f"Precision {quality['precision']:.3f}, recall {quality['recall']:.3f} (the model's own estimate: "
                "fields independent given the match status; false-match rate per pair "
                f"{quality['false_match_rate']:.2e}). {OPTIMISM}" if quality else
                "Not estimated: the rules give weights without m and u.")
    return render(Document("Linkage report", meta=(
        f"{len(matched):,} matched pairs for {matched_records:,} of your {records:,} records; "
        f"threshold {model.threshold:g} bits. The borderline matches below show your own records' identifiers: "
        "keep this page where your identified data are kept, and do not share it."), sections=[
        Section("Estimated quality at the threshold", [Paragraph(estimate)]),
        *([threshold_section(model, match_prior(target_rows) if target is not None else quality["prior"], target,
                             target_rows)] if quality else []),
        Section("m, u and weight per level", [Table(["field", "level", "agrees when", "m", "u", "weight (bits)"],
                                                    levels, numeric=(3, 4, 5)), *caveat]),
        Section("Match weights", [Figure(_histogram(weights, model.threshold),
                                         "histogram of the matches' weights, with the threshold")]),
        Section("Borderline matches (your own records only)", [
            Paragraph("Do not share: these rows are your own records with their identifiers, the matches "
                      "nearest the threshold, for you to check by eye."),
            Table(shown, [[None if pd.isna(v) else v if isinstance(v, float) else str(v) for v in row]
                          for row in nearest[shown].itertuples(index=False)])]),
    ]))
