"""The plots of report pages, drawn with matplotlib (Agg) as base64 PNGs: records by equivalence class size
and risk per record before and after a release, and the policies a search found (risk against loss)."""
from __future__ import annotations

import base64
import io
from typing import Any, Sequence


import numpy as np
import pandas as pd

from ..assess import Assessment
from ..risk import attack_probabilities, release_conditional_threshold
from .render import fmt


def png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _plain_ticks(axis: Any) -> None:
    """Ticks of a log axis as plain numbers with thousands separators (1, 10, 1,000; no 2×10⁰), called
    once the data are drawn: 1-2-5 steps over at most two decades, else one tick a decade (every other
    decade past six), labels turned 30° so that neighbours never run into each other ("5001,000")."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

    lo, hi = sorted(axis.get_view_interval())
    lo = max(lo, 1e-12)
    first, last = int(np.floor(np.log10(lo))), int(np.ceil(np.log10(max(hi, lo))))
    decades = last - first
    subs = (1.0, 2.0, 5.0) if decades <= 2 else (1.0,)
    step = 1 if decades <= 6 else 2
    ticks = [m * 10.0 ** e for e in range(first, last + 1, step) for m in subs if lo <= m * 10.0 ** e <= hi]
    axis.set_major_locator(FixedLocator(ticks))
    axis.set_major_formatter(FuncFormatter(lambda v, _: tick_label(v)))
    axis.set_minor_locator(NullLocator())
    axis.set_minor_formatter(NullFormatter())
    for label in axis.get_ticklabels():
        label.set_rotation(30)
        label.set_horizontalalignment("right")


def tick_label(v: float) -> str:
    """A tick's label: a whole number with thousands separators from 1 up, else 4 significant digits."""
    return f"{v:,.0f}" if v >= 1 else f"{v:g}"


def plots(a: Assessment, before: Assessment | None = None) -> dict[str, str]:
    """Class sizes and risk per record (per person with ``[longitudinal]``) of the release, and of the
    original when ``before`` is given, as base64 PNGs (matplotlib Agg)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    unit = "persons" if a.person_index is not None else "records"
    out = {}
    fig, ax = plt.subplots(figsize=(6, 3.2))
    sizes = a.ec_sizes if len(a.ec_sizes) else np.array([0])
    prior = (before.ec_sizes if before is not None else None)
    top = max(sizes.max(), prior.max() if prior is not None and len(prior) else 0, 2)
    # one bar per size when sizes are small (1, 2, 3, ... apart), else 30 bins spread on the log scale
    bins = np.arange(0.5, top + 1.5) if top <= 20 else np.unique(np.round(np.logspace(0, np.log10(top), 30)))
    ax.hist(sizes, bins=bins, weights=sizes, color="#4472c4", alpha=0.85, label="released")
    if prior is not None and len(prior):  # an outline on top: visible where the release has the same sizes
        ax.hist(prior, bins=bins, weights=prior, histtype="step", linewidth=2, color="#555555", label="original")
    ax.set_xscale("log")
    _plain_ticks(ax.xaxis)
    ax.set_xlabel(f"size of the equivalence class ({unit} alike on the quasi-identifiers)")
    ax.set_ylabel(unit)
    ax.axvline(a.attack["k_equivalent"], color="#c00000", ls="--", label=f"k = {a.attack['k_equivalent']}")
    ax.legend(fontsize=8)
    out["ec_histogram"] = png(fig)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(6, 3.2))
    for col, color in (("prosecutor", "#4472c4"), ("journalist", "#ed7d31"), ("instance_disclosure", "#70ad47")):
        if col in a.per_record:
            r = np.sort(a.per_record[col].dropna().to_numpy())[::-1]
            ax.plot(np.arange(1, len(r) + 1), r, label=f"{col.replace('_', ' ')} (released)", color=color)
    if before is not None and "prosecutor" in before.per_record:
        r = np.sort(before.per_record["prosecutor"].dropna().to_numpy())[::-1]
        ax.plot(np.arange(1, len(r) + 1), r, label="prosecutor (original)", color="#999999", ls=":")
    rel = a.spec.release  # a record's risk is Pr(re-id | T): its line is the threshold over the largest Pr(T)
    cond = release_conditional_threshold(rel)
    ax.axhline(cond, color="#c00000", ls="--", label=f"threshold {fmt(rel.threshold)}" if cond == rel.threshold else
               f"threshold {fmt(rel.threshold)} / Pr(T) {fmt(max(attack_probabilities(rel).values()))} = {fmt(cond)}")
    ax.set_xscale("log")
    _plain_ticks(ax.xaxis)
    ax.set_xlabel(f"{unit} (sorted by risk, highest first)")
    ax.set_ylabel(f"risk per {unit[:-1]}")
    ax.legend(fontsize=8)
    out["risk_per_record"] = png(fig)
    plt.close(fig)
    return out


def search_plot(result: dict, threshold: float | None = None) -> str:
    """Risk vs information loss of the policies a search found, best one marked, the threshold (the
    result's, or ``threshold``) dashed; base64 PNG."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pols = result.get("policies", [])
    fig, ax = plt.subplots(figsize=(6, 3.6))
    if pols:
        loss = np.array([p["information_loss"] for p in pols], dtype=float)
        risk = np.array([p["risk"] for p in pols], dtype=float)
        ax.scatter(loss, risk, s=18, color="#4472c4", label=f"{len(pols)} policies")
        ax.scatter(loss[:1], risk[:1], s=60, facecolors="none", edgecolors="#c00000", label="best")
    thr = threshold if threshold is not None else result.get("threshold", (result.get("criterion") or {}).get("threshold"))
    if thr:
        ax.axhline(thr, color="#c00000", ls="--", label="threshold")
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    for axis in (ax.xaxis, ax.yaxis):  # at most 5 ticks of at most 4 significant digits: no overlap
        axis.set_major_locator(MaxNLocator(5))
        axis.set_major_formatter(FuncFormatter(lambda v, _: fmt(float(v))))
    ax.set_xlabel(f"information loss ({result.get('loss', '')})")
    ax.set_ylabel("risk")
    ax.set_title(f"deid search --method {result.get('method', '')}")
    ax.legend(fontsize=8)
    out = png(fig)
    plt.close(fig)
    return out


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _finished(fig: Any, ax: Any, xlabel: str, ylabel: str) -> str:
    """The plot's axis labels and legend, then the figure as a base64 PNG (and closed)."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)
    out = png(fig)
    _pyplot().close(fig)
    return out


def bars_before_after(labels: Sequence[str], before: Sequence[float], after: Sequence[float], *, xlabel: str,
                      ylabel: str, k: float | None = None) -> str:
    """Side-by-side bars of a count per category before and after a step (at most 30 categories, labels
    turned when they would overlap), with the k every bar needs dashed; base64 PNG."""
    plt = _pyplot()
    labels, before, after = list(labels)[:30], list(before)[:30], list(after)[:30]
    x = np.arange(len(labels))
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    ax.bar(x - 0.2, before, width=0.4, color="#bbbbbb", label="before")
    ax.bar(x + 0.2, after, width=0.4, color="#4472c4", label="after")
    if k is not None:
        ax.axhline(k, color="#c00000", ls="--", label=f"k = {fmt(k)}")
    ax.set_xticks(x)
    ax.set_xticklabels(labels, rotation=45 if len(labels) > 6 else 0, ha="right" if len(labels) > 6 else "center",
                       fontsize=8)
    return _finished(fig, ax, xlabel, ylabel)


def distribution_before_after(before: np.ndarray, after: np.ndarray, *, xlabel: str, ylabel: str,
                              k: float | None = None, labels: tuple[str, str] = ("before", "after")) -> str:
    """Histograms of a size (people per area, per cluster) before and after, log-scaled, k dashed."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    top = max(float(np.max(before)) if len(before) else 1, float(np.max(after)) if len(after) else 1, 10)
    low = max(min(float(np.min(before)) if len(before) else 1, float(np.min(after)) if len(after) else 1), 1)
    bins = np.logspace(np.log10(low), np.log10(top), 25)
    ax.hist(before, bins=bins, color="#bbbbbb", label=labels[0])
    ax.hist(after, bins=bins, color="#4472c4", alpha=0.85, label=labels[1])
    if k is not None:
        ax.axvline(k, color="#c00000", ls="--", label=f"k = {fmt(k)}")
    ax.set_xscale("log")
    _plain_ticks(ax.xaxis)
    return _finished(fig, ax, xlabel, ylabel)


def probes_plot(probes: Sequence[dict], threshold: float, *, quantile: float, unit: str) -> str:
    """``deid subsample --find-fraction``: the risk of each probed fraction (its quantile over the draws,
    the median, the 5–95 % band) against the threshold; base64 PNG."""
    plt = _pyplot()
    pts = sorted(probes, key=lambda p: p["fraction"])
    f = np.array([p["fraction"] for p in pts])
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    ax.fill_between(f, [p["p5"] for p in pts], [p["p95"] for p in pts], color="#c9d6ee", label="5–95 % of the draws")
    ax.plot(f, [p["median"] for p in pts], color="#4472c4", marker="o", ms=3, label="median")
    ax.plot(f, [p["quantile_risk"] for p in pts], color="#ed7d31", ls="-.", label=f"{fmt(quantile)} quantile")
    ax.axhline(threshold, color="#c00000", ls="--", label=f"threshold {fmt(threshold)}")
    return _finished(fig, ax, f"sampling fraction (share of the {unit} drawn)", "journalist risk of the sample")
