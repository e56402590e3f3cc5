"""The verdict every report page opens with: whether the release meets its threshold, which threshold,
and whether that threshold lies inside the range El Emam & Arbuckle recommend (ch. 2, "Risk Thresholds",
Table 2-1), flagged when it does not."""
from __future__ import annotations

from typing import Sequence

from ..risk import THRESHOLD_TABLE
from .document import Block, Paragraph, Section, Verdict
from .render import fmt


def recommended_range(release_type: str) -> tuple[float, float]:
    """(lowest, highest) threshold the book recommends: T4 for a public release, T1–T3 otherwise."""
    low_high = THRESHOLD_TABLE["T4" if release_type == "public" else "T1"]["range"]
    return min(low_high), max(low_high)


def threshold_note(threshold: float, release_type: str) -> Paragraph:
    """Whether ``threshold`` is inside the recommended range; outside it, a flagged paragraph.
    ``release_type`` ``"maximum"`` names the range of a maximum risk (T4) for a page without a spec."""
    low, high = recommended_range("public" if release_type == "maximum" else release_type)
    kind = "a maximum risk (T4)" if release_type == "maximum" else f"a {release_type} release"
    where = f"the recommended range {fmt(low)}–{fmt(high)} for {kind} (El Emam & Arbuckle, ch. 2, Table 2-1)"
    if low <= threshold <= high:
        return Paragraph(f"The threshold {fmt(threshold)} is inside {where}.")
    if threshold > high:
        return Paragraph(f"Flag: the threshold {fmt(threshold)} is above {where}. It accepts more risk than the "
                         "range allows: the ethics board should see why, or the release should be made again under a "
                         "threshold inside the range.", style="flag")
    return Paragraph(f"Flag: the threshold {fmt(threshold)} is below {where}: stricter than needed, so more "
                     "information is lost than the range asks for.", style="flag")


def verdict_section(ok: bool | None, text: str, *, threshold: float | None = None, release_type: str = "",
                    details: Sequence[Block] = ()) -> Section:
    """The first section of a page: the verdict box, the range check of ``threshold`` (the spec's
    ``[release]`` threshold, when the page knows it) and any ``details``."""
    blocks: list[Block] = [Verdict(ok, text)]
    if threshold is not None and release_type:
        blocks.append(threshold_note(threshold, release_type))
    return Section("Verdict", [*blocks, *details])


def meets_text(ok: bool, subject: str, threshold: float, measured: str = "") -> str:
    """"<subject> meets / does NOT meet the threshold T" with what was measured."""
    return (f"{subject} {'meet' if ok else 'do NOT meet'} the threshold {fmt(threshold)}"
            + (f": {measured}." if measured else "."))


__all__ = ["meets_text", "recommended_range", "threshold_note", "verdict_section"]
