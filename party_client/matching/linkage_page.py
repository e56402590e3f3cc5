"""The querier's HTML page of a linkage over comparison levels: m, u and weight per level, the weights of
its matches against the threshold, the model's estimated precision and recall at that threshold, and
borderline matches drawn from its own records only (splink's "match weights" and "m and u" charts,
UK Ministry of Justice, splink documentation, "Charts", are the anchor).

Estimates follow the Fellegi-Sunter model's own assumptions (fields independent given the match
status): recall = P(weight >= threshold | match) and the false-match rate P(weight >= threshold |
non-match) are exact sums over the model's weight distributions (missing left out); precision takes
the match prior from the matches found among all querier x holder pairs.
"""
from __future__ import annotations

import base64
import html
import io
from collections import defaultdict

import numpy as np
import pandas as pd

from party_client.matching.fellegi_sunter import ELSE_LEVEL, LevelModel

BORDERLINE = 10                 # matches shown nearest the threshold


def weight_distribution(model: LevelModel, probabilities: dict[str, dict[str, float]]) -> dict[int, float]:
    """P(weight = w) in thousandths of a bit under m (or u), fields independent."""
    scaled, otherwise, _ = model.scaled()
    total: dict[int, float] = {0: 1.0}
    for index, f in enumerate(model.fields):
        weights = {level.name: scaled[index][i] for i, level in enumerate(f.levels)}
        weights[ELSE_LEVEL] = otherwise[index]
        step: dict[int, float] = defaultdict(float)
        for w0, p0 in total.items():
            for name, p in probabilities[f.name].items():
                step[w0 + weights[name]] += p0 * p
        total = dict(step)
    return total


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
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def render_page(model: LevelModel, result: pd.DataFrame, weight_column: str, matched_column: str,
                own_columns: list[str], holder_rows: int) -> str:
    """The page for one linkage: ``result`` is the querier's output (its own columns, ``matched`` and
    ``match_weight``); only the querier's own columns are shown for borderline pairs."""
    matched = result[result[matched_column].astype(bool)]
    weights = matched[weight_column].to_numpy(dtype=np.float64)
    quality = estimated_quality(model, int(matched.index.nunique()), len(result) * max(holder_rows, 1)) \
        if model.m and model.u else None
    rows = []
    for f in model.fields:
        for name in [level.name for level in f.levels] + [ELSE_LEVEL]:
            rows.append(f"<tr><td>{html.escape(f.name)}</td><td>{html.escape(name)}</td>"
                        f"<td>{model.m.get(f.name, {}).get(name, float('nan')):.4f}</td>"
                        f"<td>{model.u.get(f.name, {}).get(name, float('nan')):.6f}</td>"
                        f"<td>{model.weights[f.name][name]:+.2f}</td></tr>")
        rows.append(f"<tr><td>{html.escape(f.name)}</td><td>missing</td><td>–</td><td>–</td><td>+0.00</td></tr>")
    nearest = matched.assign(__gap=(matched[weight_column] - model.threshold).abs()).nsmallest(BORDERLINE, "__gap")
    shown = [c for c in own_columns if c in nearest.columns] + [weight_column]
    borderline = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>"
                         for row in nearest[shown].itertuples(index=False))
    return "\n".join([
        "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Linkage report</title>",
        "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}</style></head><body>",
        "<h1>Linkage report</h1>",
        f"<p>{len(matched):,} matched pairs for {int(matched.index.nunique()):,} of your {len(result):,} rows; "
        f"threshold {model.threshold:g} bits.</p>",
        "<h2>Estimated quality at the threshold</h2>",
        (f"<p>Precision {quality['precision']:.3f}, recall {quality['recall']:.3f} (the model's own estimate: fields "
         f"independent given the match status; false-match rate per pair {quality['false_match_rate']:.2e}).</p>"
         if quality else "<p>Not estimated: the rules give weights without m and u.</p>"),
        "<h2>m, u and weight per level</h2><table><tr><th>field</th><th>level</th><th>m</th><th>u</th>"
        "<th>weight (bits)</th></tr>" + "".join(rows) + "</table>",
        "<h2>Match weights</h2>",
        f"<img alt='histogram of match weights' src='data:image/png;base64,{_histogram(weights, model.threshold)}'>",
        "<h2>Borderline matches (your own records only)</h2>",
        "<table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in shown) + "</tr>" + borderline + "</table>",
        "</body></html>"])
