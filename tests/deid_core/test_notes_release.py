"""Notes in a release: a column declared ``text`` is de-identified in every release path (deid search
--out, deid apply with the policy it wrote, deid assess --out, deid safe-harbor), with the row's
own identifiers searched in its note first, and a path that did not treat it fails closed."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from deid_core.cli import main
from deid_core.detect import check_release
from deid_core.errors import DeidInputError
from deid_core.io import read_table
from deidspecs import NOTE_FIRST, NOTE_LAST, NOTES_SPEC

FIRST, LAST, SPEC = NOTE_FIRST, NOTE_LAST, NOTES_SPEC.format(mode="tag")


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    folder = tmp_path_factory.mktemp("notes")
    rng = np.random.default_rng(5)
    rows = []
    for i in range(240):
        first, last = FIRST[i % 8], LAST[(i * 3) % 8]
        mrn = f"{rng.integers(10**6, 10**7):07d}"
        rows.append({"patient": f"{first} {last}", "mrn": mrn, "age": str(rng.integers(20, 90)),
                     "zip": f"0213{rng.integers(0, 10)}",
                     "note": f"{last}, {first} (MRN {mrn}) seen 2/03/2019; pt {first.lower()} reports less pain."})
    pd.DataFrame(rows).to_csv(folder / "visits.csv", index=False)
    (folder / "spec.toml").write_text(SPEC)
    return folder, pd.DataFrame(rows)


def assert_clean(release: pd.DataFrame, source: pd.DataFrame) -> None:
    """No note of the release holds its patient's name, MRN or the visit date; each is tagged."""
    notes = " ".join(release["note"].astype(str))
    for word in [*FIRST, *LAST, *source["mrn"], "2/03/2019"]:
        assert word.lower() not in notes.lower(), word
    assert "<LAST_NAME:1>" in notes and "<MRN:1>" in notes


def test_notes_are_de_identified_in_every_release_path(registry, tmp_path, capsys):
    folder, source = registry
    spec = ["--input", str(folder / "visits.csv"), "--spec", str(folder / "spec.toml")]
    assert main(["search", *spec, "--method", "ola", "--k", "3", "--report", str(tmp_path / "r.json"),
                 "--out", str(tmp_path / "searched.csv"), "--policy-out", str(tmp_path / "policy.json")]) == 0
    assert_clean(read_table(tmp_path / "searched.csv"), source)
    result = json.loads((tmp_path / "r.json").read_text())
    counts = result["identifier_check"]["notes"]["note"]
    assert counts["documents"] == 240 and counts["documents_with_phi"] == 240 and counts["found"]["MRN"] == 240
    assert json.loads((tmp_path / "policy.json").read_text())["text"] == {"mode": "tag",
                                                                          "hints": {"name": "patient", "mrn": "mrn"}}
    assert main(["apply", "--input", str(folder / "visits.csv"), "--policy", str(tmp_path / "policy.json"),
                 "--out", str(tmp_path / "applied.csv")]) == 0
    assert_clean(read_table(tmp_path / "applied.csv"), source)
    assert main(["assess", *spec, "--report", str(tmp_path / "a.json"), "--out", str(tmp_path / "assessed.csv")]) == 0
    assert_clean(read_table(tmp_path / "assessed.csv"), source)
    (folder / "sh.toml").write_text(SPEC.replace('age = "quasi"', 'age = "quasi"').split("[hierarchies]")[0]
                                    + '[types]\nzip = "zip"\nage = "age"\n[text]\nhints = { name = "patient" }\n')
    assert main(["safe-harbor", "--input", str(folder / "visits.csv"), "--spec", str(folder / "sh.toml"),
                 "--out", str(tmp_path / "harbor.csv")]) == 0, capsys.readouterr().err
    harbor = read_table(tmp_path / "harbor.csv")
    assert all(name.lower() not in " ".join(harbor["note"]).lower() for name in [*FIRST, *LAST])


def test_a_path_that_did_not_treat_the_notes_fails_closed(registry):
    _, source = registry
    with pytest.raises(DeidInputError, match="declared text are in the release without their notes de-identified"):
        check_release(source.drop(columns=["patient", "mrn"]), {"note": "text", "age": "quasi", "zip": "quasi"},
                      safe_harbor=False)


def test_the_release_page_says_what_happened_to_the_notes_per_type_and_shows_none(registry, tmp_path):
    folder, source = registry
    assert main(["assess", "--input", str(folder / "visits.csv"), "--spec", str(folder / "spec.toml"),
                 "--report", str(tmp_path / "a.json"), "--out", str(tmp_path / "r.csv"),
                 "--html", str(tmp_path / "page.html")]) == 0
    page = (tmp_path / "page.html").read_text()
    assert "Free-text notes, de-identified note by note" in page and "&lt;LAST_NAME:1&gt;" in page
    assert not any(name in page for name in LAST) and "2/03/2019" not in page
    fate = next(f for f in json.loads((tmp_path / "a.json").read_text())["report"]["steps"]["4_transformation"]
                ["columns"] if f["column"] == "note")
    assert fate["fate"] == "masked" and "example" not in fate
    # what was found, per type, on the page the ethics board reads (counts only, never a value)
    assert fate["notes"]["found"]["MRN"] == 240 and fate["notes"]["documents"] == 240
    said = " ".join(page.split())
    assert "Of 240 notes, 240 held an identifier; found, by type: " in said and "mrn 240" in said
