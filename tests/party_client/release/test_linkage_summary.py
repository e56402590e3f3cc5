"""The typed linkage summary of a linked release: built from a join's report by its fields, recorded in the
report JSON under the same keys in the same order as before, and drawn as the page's "Linkage" section
by party_client (deid_core's page knows nothing of linkage)."""
from __future__ import annotations

from dataclasses import replace

from deid_core.report import Section, Table, render
from deid_core.report.document import Document
from party_client.release.linkage import LinkageSummary, linkage_prose, linkage_section

JOIN_REPORT = {"mode": "join", "querier": "hospital", "holder": "registry", "session_id": "s1", "scheme": "ristretto",
               "key_bits": 256, "records": 50, "matched_records": 7, "output_rows": 50,
               "release_columns": ["diagnosis"], "blank_identifiers": 1, "tables": 2,
               "seconds": {"encode": 0.1, "total": 0.5}, "note": "not part of a release summary",
               "matched_output_rows": 7}


def test_summary_from_a_join_report_keeps_the_release_keys_in_order():
    link = replace(LinkageSummary.from_join(JOIN_REPORT, matching="exact on hcn"), linked_seconds=1.25)
    assert list(link.to_dict()) == ["mode", "querier", "holder", "session_id", "scheme", "key_bits", "records",
                                    "matched_records", "output_rows", "release_columns", "blank_identifiers",
                                    "tables", "seconds", "matching", "blocking", "linked_seconds", "assignment",
                                    "records_matched_more_than_once", "records_kept_of_tied_rows"]
    assert (link.matched_records, link.matching, link.linked_seconds) == (7, "exact on hcn", 1.25)
    assert link.blocking.startswith("none: every holder row is compared")


def test_prose_and_section_say_what_each_party_learned():
    link = replace(LinkageSummary.from_join(JOIN_REPORT, matching="rules"), linked_seconds=1.25)
    prose = linkage_prose(link)
    assert prose["table"]["scheme"] == "exponential ElGamal on ristretto255, 256-bit keys"
    assert prose["table"]["time"] == "encode 0.1 s; total 0.5 s; link and release 1.25 s"
    assert "which of its 50 records matched (7)" in prose["learned"]["querier (hospital)"]["learned"]
    unnamed = LinkageSummary.from_join(dict(JOIN_REPORT, scheme=""), matching="rules")
    assert linkage_prose(unnamed)["table"]["scheme"].startswith("Paillier")  # the default scheme
    section = linkage_section(prose)
    assert isinstance(section, Section) and section.title == "Linkage"
    assert isinstance(section.blocks[1], Table) and section.blocks[2].title == "What each party learned"
    page = render(Document("t", sections=[section]))
    assert "<h2>Linkage</h2>" in page and "<h3>What each party learned</h3>" in page and "registry" in page


def test_the_release_says_how_many_matches_each_record_kept():
    """A record matched by two holder rows appears twice in the linked table (and so in the release):
    the page says so, or names the choice made among them, and the command to apply the policy again
    makes the same choice."""
    from pathlib import Path
    from party_client.api import ASSIGNMENTS
    from party_client.release.linked_release import _reapply_command
    several = LinkageSummary.from_join(dict(JOIN_REPORT, records_matched_more_than_once=2), matching="rules")
    assert linkage_prose(several)["table"]["matches per record"] == (
        "every match: 2 record(s) matched more than one holder row and appear once per match")
    assert "--one-to-one" not in _reapply_command(several, None, object(), Path("p.json"))
    one = LinkageSummary.from_join(dict(JOIN_REPORT, assignment=ASSIGNMENTS["assignment"]), matching="rules")
    assert linkage_prose(one)["table"]["matches per record"] == ASSIGNMENTS["assignment"]
    tied = LinkageSummary.from_join(dict(JOIN_REPORT, assignment=ASSIGNMENTS["assignment"], records_kept_of_tied_rows=1),
                                    matching="rules")
    assert linkage_prose(tied)["table"]["matches per record"].endswith(
        "; 1 record(s) kept one of two or more holder rows of the very same weight (which one is not fixed)")
    assert "--rules RULES.toml --one-to-one --duplicate-free" in _reapply_command(one, None, object(), Path("p.json"))
    heaviest = LinkageSummary.from_join(dict(JOIN_REPORT, assignment=ASSIGNMENTS["heaviest"]), matching="rules")
    assert _reapply_command(heaviest, None, object(), Path("p.json")).count("--one-to-one --spec") == 1
    alone = LinkageSummary.from_join(dict(JOIN_REPORT, records_matched_more_than_once=0), matching="exact on hcn")
    assert linkage_prose(alone)["table"]["matches per record"] == "every match"
