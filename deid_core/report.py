"""The report: the book's five steps (B:1030–1237, DEID.md §5) as JSON and HTML.

Sections: 1 identifiers and why; 2 threshold and why (attack, Pr(T),
metric); 3 plausible attacks; 4 what was done (hierarchies, levels,
suppression — and the policy in re-appliable form); 5 evidence (risk
before/after vs threshold, information loss) and a re-assessment date
18–24 months ahead (B:2310).
"""
from __future__ import annotations

import base64
import datetime as _dt
import html
import io
import json
from typing import Any

import numpy as np

from .assess import Assessment
from .risk import THRESHOLD_TABLE

WHY_DIRECT = "Direct identifiers can identify a person on their own (B:1043–1082); they are masked or removed."
WHY_QUASI = ("Quasi-identifiers can be known to an adversary (acquaintance, public registries such as voter lists) "
             "and combined to single people out (B:1043–1082); they are de-identified and measured.")


def _add_months(d: _dt.date, months: int) -> _dt.date:
    y, m = divmod(d.month - 1 + months, 12)
    day = min(d.day, 28)
    return _dt.date(d.year + y, m + 1, day)


def build_report(a: Assessment, input_name: str = "", today: _dt.date | None = None) -> dict:
    """The five-step report as a JSON-ready dict (the ``report`` key of the assess JSON)."""
    today = today or _dt.date.today()
    spec, rel = a.spec, a.spec.release
    steps = {
        "1_identifiers": {
            "direct": spec.direct, "quasi": spec.quasi, "sensitive": spec.role("sensitive"), "other": spec.role("other"),
            "why": {"direct": WHY_DIRECT, "quasi": WHY_QUASI},
        },
        "2_threshold": {
            "release_type": rel.type, "threshold": rel.threshold, "k_equivalent": a.attack["k_equivalent"],
            "metric": "maximum risk (T4, public)" if rel.type == "public" else "strict average risk x Pr(T) (T1-T3)",
            "threshold_table": {t: {"metric": v["metric"], "range": list(v["range"])} for t, v in THRESHOLD_TABLE.items()},
            "why": ("Public releases face a demonstration attack: maximum risk, 0.09-0.05 (B:1675-1695)." if rel.type == "public"
                    else "Non-public releases: deliberate attempt, acquaintance, breach; average risk 0.1-0.05 (B:1675-1695)."),
        },
        "3_attacks": a.attack["attacks"],
        "4_transformation": {
            "levels": a.levels, "record_suppression": a.summary.get("suppressed_records", 0),
            "hierarchies": {q: h.to_dict() for q, h in spec.hierarchies.items()},
            "missing_values": spec.missing, "policy": a.policy.to_dict(),
        },
        "5_evidence": {
            "risk_before": a.before, "risk_after": {k: v for k, v in a.summary.items()},
            "meets_threshold": a.attack["meets_threshold"], "overall_risk": a.attack["overall_risk"],
            "information_loss": a.loss,
            "reassess_between": [_add_months(today, 18).isoformat(), _add_months(today, 24).isoformat()],
        },
    }
    return {"input": input_name, "generated": today.isoformat(), "steps": steps}


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def plots(a: Assessment) -> dict[str, str]:
    """EC-size histogram and per-record risk plot as base64 PNGs (matplotlib Agg)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = {}
    fig, ax = plt.subplots(figsize=(6, 3.2))
    sizes = a.ec_sizes if len(a.ec_sizes) else np.array([0])
    bins = np.unique(np.round(np.logspace(0, np.log10(max(sizes.max(), 2)), 30)))
    ax.hist(sizes, bins=bins, color="#4472c4")
    ax.set_xscale("log")
    ax.set_xlabel("equivalence class size")
    ax.set_ylabel("classes")
    ax.axvline(a.attack["k_equivalent"], color="#c00000", ls="--", label=f"k = {a.attack['k_equivalent']}")
    ax.legend()
    out["ec_histogram"] = _png(fig)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(6, 3.2))
    for col, color in (("prosecutor", "#4472c4"), ("journalist", "#ed7d31"), ("instance_disclosure", "#70ad47")):
        if col in a.per_record:
            r = np.sort(a.per_record[col].dropna().to_numpy())[::-1]
            ax.plot(np.arange(1, len(r) + 1), r, label=col, color=color)
    ax.axhline(a.spec.release.threshold, color="#c00000", ls="--", label="threshold")
    ax.set_xscale("log")
    ax.set_xlabel("records (sorted by risk)")
    ax.set_ylabel("risk per record")
    ax.legend()
    out["risk_per_record"] = _png(fig)
    plt.close(fig)
    return out


def render_html(report: dict, a: Assessment) -> str:
    """A self-contained HTML page (plots embedded as base64 PNG)."""
    imgs = plots(a)
    s = report["steps"]
    esc = html.escape

    def table(d: dict) -> str:
        rows = "".join(f"<tr><th>{esc(str(k))}</th><td>{esc(_fmt(v))}</td></tr>" for k, v in d.items())
        return f"<table>{rows}</table>"

    ev = s["5_evidence"]
    verdict = "meets" if ev["meets_threshold"] else "does NOT meet"
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>De-identification report</title>",
        "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}table{border-collapse:collapse}"
        "th,td{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}pre{background:#f6f6f6;padding:1em;overflow:auto}</style>",
        "</head><body>",
        f"<h1>De-identification report</h1><p>Input: {esc(report['input'])} — generated {esc(report['generated'])}</p>",
        "<h2>1. Identifiers</h2>", table({k: ", ".join(v) for k, v in s["1_identifiers"].items() if k != "why"}),
        f"<p>{esc(s['1_identifiers']['why']['direct'])} {esc(s['1_identifiers']['why']['quasi'])}</p>",
        "<h2>2. Threshold</h2>", table({k: v for k, v in s["2_threshold"].items() if k != "threshold_table"}),
        "<h2>3. Plausible attacks</h2>",
        table({t: f"Pr(T) = {v['pr_t']:.4g}; Pr(re-id|T) = {v['pr_reid_given_t']:.4g}; Pr(re-id,T) = {v['pr_reid']:.4g}; "
                  f"meets: {v['meets_threshold']}" for t, v in s["3_attacks"].items()}),
        "<h2>4. What was done</h2>", table({"levels": s["4_transformation"]["levels"],
                                            "suppressed records": s["4_transformation"]["record_suppression"],
                                            "missing values": s["4_transformation"]["missing_values"]}),
        "<p>Re-appliable policy (<code>deid apply --policy</code>):</p>",
        f"<pre>{esc(json.dumps(s['4_transformation']['policy'], indent=2))}</pre>",
        f"<h2>5. Evidence</h2><p>The released data <b>{verdict}</b> the threshold "
        f"{ev['overall_risk']:.4g} vs {s['2_threshold']['threshold']}.</p>",
        "<h3>Risk before / after</h3>", table({"before": _brief(ev["risk_before"]), "after": _brief(ev["risk_after"])}),
        "<h3>Information loss</h3>", table({k: v for k, v in ev["information_loss"].items() if k != "numeric"}),
        f"<img alt='EC size histogram' src='data:image/png;base64,{imgs['ec_histogram']}'>",
        f"<img alt='risk per record' src='data:image/png;base64,{imgs['risk_per_record']}'>",
        f"<p>Re-assess between {ev['reassess_between'][0]} and {ev['reassess_between'][1]} (18–24 months, B:2310), "
        "or earlier if quasi-identifiers are added or changed.</p></body></html>",
    ]
    return "\n".join(parts)


def _brief(s: dict) -> dict:
    keys = ("records", "equivalence_classes", "k_min", "prosecutor", "journalist", "marketer", "instance_disclosure", "suppressed_records")
    return {k: s[k] for k in keys if k in s}


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, dict):
        return json.dumps(v, default=float)
    return str(v)


def search_plot(result: dict) -> str:
    """Risk vs information loss of the policies a search found (issue 4 §6), best one marked; base64 PNG."""
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
    thr = result.get("threshold", (result.get("criterion") or {}).get("threshold"))
    if thr:
        ax.axhline(thr, color="#c00000", ls="--", label="threshold")
    ax.set_xlabel(f"information loss ({result.get('loss', '')})")
    ax.set_ylabel("risk")
    ax.set_title(f"deid search --method {result.get('method', '')}")
    ax.legend(fontsize=8)
    out = _png(fig)
    plt.close(fig)
    return out


def render_search_html(result: dict) -> str:
    """A self-contained page: the search's settings, the policies plot and the best policy."""
    esc = html.escape
    meta = {k: v for k, v in result.items() if k not in ("policies", "best_policy")}
    rows = "".join(f"<tr><th>{esc(str(k))}</th><td>{esc(_fmt(v))}</td></tr>" for k, v in meta.items())
    best = result["policies"][0] if result.get("policies") else {}
    return "\n".join([
        "<!doctype html><html><head><meta charset='utf-8'><title>Policy search</title>",
        "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}table{border-collapse:collapse}"
        "th,td{border:1px solid #ccc;padding:2px 6px;text-align:left}pre{background:#f6f6f6;padding:1em;overflow:auto}</style>",
        "</head><body><h1>De-identification policy search</h1>", f"<table>{rows}</table>",
        f"<img alt='risk vs information loss' src='data:image/png;base64,{search_plot(result)}'>",
        "<h2>Best policy</h2>", f"<pre>{esc(json.dumps(best, indent=2, default=float)[:20000])}</pre>",
        "</body></html>",
    ])
