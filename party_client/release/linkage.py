"""What a linked release says about its linkage: the typed summary of the join (:class:`LinkageSummary`)
and its prose for the report (the table, what each party learned, and the page's "Linkage" section,
passed to :func:`deid_core.report.render_html` as a preface; El Emam & Arbuckle, ch. 12, "Secure Linking")."""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Mapping

from common.schemes import Scheme, get_scheme
from deid_core.report import Paragraph, Section, Table, fmt

#: How a linked release blocks: it does not (every holder row is compared, tables padded).
NO_BLOCKING = "none: every holder row is compared with padded tables, nothing travels in the clear"


@dataclass(frozen=True)
class LinkageSummary:
    """The join behind a release, as its report records it (the first fields come from the join's report)."""

    mode: str | None
    querier: str | None
    holder: str | None
    session_id: str | None
    scheme: Scheme
    key_bits: int | None
    records: int | None
    matched_records: int | None
    output_rows: int | None
    release_columns: list[str] | None
    blank_identifiers: int | None
    tables: Any
    seconds: dict[str, float] | None
    matching: str                       # "rules" or "exact on COLUMN"
    blocking: str = NO_BLOCKING
    linked_seconds: float | None = None  # link and release, end to end
    assignment: str | None = None       # the choice among a record's matches (--one-to-one), if any
    records_matched_more_than_once: int | None = None   # without one: each appears once per match
    records_kept_of_tied_rows: int | None = None        # with one: kept one of rows of the very same weight

    @classmethod
    def from_join(cls, report: Mapping[str, Any], *, matching: str) -> "LinkageSummary":
        """The summary of a join from the report :meth:`party_client.api.Party.join` returns."""
        own = {"matching", "blocking", "linked_seconds", "scheme"}
        scheme = report.get("scheme")       # a Scheme from Party.join; a name (or none) from a file
        return cls(**{f.name: report.get(f.name) for f in fields(cls) if f.name not in own}, matching=matching,
                   scheme=scheme if isinstance(scheme, Scheme) else get_scheme(scheme))

    def to_dict(self) -> dict[str, Any]:
        """The summary for the JSON report (the scheme by its name)."""
        return dict(asdict(self), scheme=self.scheme.name)


def linkage_prose(link: LinkageSummary) -> dict[str, Any]:
    """The linkage part of the report: the rows of its table, a sentence, and what each party learned."""
    seconds = link.seconds or {}
    released = ", ".join(link.release_columns or []) or "none"
    table = {
        "querier (ran the join, wrote this report)": link.querier, "holder": link.holder,
        "key holder": "K: registers parties, relays sealed messages, decides which blinded comparisons are zero",
        "scheme": f"{link.scheme.title}, {link.key_bits}-bit keys",
        "mode": link.mode, "matching": link.matching, "blocking": link.blocking,
        "querier's records": link.records, "matched records": link.matched_records,
        "matches per record": link.assignment and link.assignment + (
            f"; {link.records_kept_of_tied_rows} record(s) kept one of two or more holder rows of the very same "
            "weight (which one is not fixed)" if link.records_kept_of_tied_rows else "") or (
            f"every match: {link.records_matched_more_than_once} record(s) matched more than one holder row and "
            "appear once per match" if link.records_matched_more_than_once else "every match"),
        "blank identifiers (never match)": link.blank_identifiers,
        "columns received from the holder": released,
        "time": "; ".join(f"{k.replace('_', ' ')} {fmt(v)} s" for k, v in seconds.items()) + "; "
                f"link and release {fmt(link.linked_seconds)} s",
        "session": link.session_id,
    }
    learned = {
        f"querier ({link.querier})": {
            "learned": f"which of its {link.records} records matched ({link.matched_records}); "
                       f"the holder's columns {released} for the matched rows only, kept in memory",
            "never": "the holder's row count, its non-matching rows, anything about records it does not hold"},
        f"holder ({link.holder})": {
            "learned": "the padded size of the querier's table",
            "never": "which of its rows matched, the querier's identifiers"},
        "key holder": {
            "learned": "which parties take part; mode, key size, padded table size, number of comparisons, how many "
                       "rows matched; sizes of relayed blobs",
            "never": "an identifier, an encoding, a bin position, a released value"},
    }
    summary = (f"{link.querier} linked its records with {link.holder}'s by secure matching (El Emam & Arbuckle, "
               "ch. 12, “Secure Linking”): identifiers were compared only under encryption, and no identifier was "
               "written to disk on the querier's side.")
    return {"table": table, "learned": learned, "summary": summary}


def linkage_section(prose: Mapping[str, Any]) -> Section:
    """The page's "Linkage" section (placed before the five steps of the de-identification report)."""
    blocks: list[Any] = [
        Paragraph(str(prose.get("summary", "")) + " The data were linked before they were de-identified, so the "
                  "risk measured below is that of the linked table."),
        Table(["", "value"], [[k, v] for k, v in prose.get("table", {}).items()])]
    learned = prose.get("learned") or {}
    if learned:
        blocks.append(Section("What each party learned", [
            Table(["party", "learned", "never learned"], [[p, v["learned"], v["never"]] for p, v in learned.items()])]))
    return Section("Linkage", blocks)
