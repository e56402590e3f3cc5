"""Surrogates in a release: ``[text] mode = "surrogate"`` replaces each identifier in a notes column by a
realistic keyed value on every release path (deid search --out, deid assess --out, deid safe-harbor, deid
apply with the saved policy, party link-release's de-identification), with one date shift per patient
(the ``mrn`` hint's value).  Without the data owner's key a release is refused in one line naming
--key-file; the saved policy records the key's check value, so another key is refused and writes nothing
(as fpe steps are: docs/masking.md, "A wrong key never yields an identity")."""
from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from deid_core.cli import main
from deid_core.errors import ParameterError
from deid_core.io import read_table
from deid_core.releasing import deidentify_text_columns
from deid_core.spec import load_spec
from deidspecs import NOTE_FIRST, NOTE_LAST, NOTES_SPEC

FIRST, LAST, SPEC = NOTE_FIRST, NOTE_LAST, NOTES_SPEC.format(mode="surrogate")
DATE = re.compile(r"\b(\d{1,2})/(\d{2})/(\d{4})\b")


@pytest.fixture(scope="module")
def visits(tmp_path_factory):
    folder = tmp_path_factory.mktemp("surrogates")
    rows = []
    for i in range(120):          # 40 patients, three visits each, on three dates
        p = i % 40
        first, last, mrn = FIRST[p % 8], LAST[(p * 3 + p // 8) % 8], f"{1_000_000 + 7919 * p:07d}"
        rows.append({"patient": f"{first} {last}", "mrn": mrn, "age": str(30 + p % 50), "zip": f"0213{p % 10}",
                     "note": f"{last}, {first} (MRN {mrn}) seen {1 + i // 40}/03/2019; pt reports less pain."})
    pd.DataFrame(rows).to_csv(folder / "visits.csv", index=False)
    (folder / "spec.toml").write_text(SPEC)
    (folder / "owner.key").write_text("the data owner's secret masking key")
    (folder / "other.key").write_text("somebody else's secret masking key")
    return folder, pd.DataFrame(rows)


def assert_surrogates(release: pd.DataFrame, source: pd.DataFrame) -> None:
    """Each note lost its own patient's name, MRN and visit date; the surrogate dates of a patient's three
    visits keep their intervals (one shift per patient), and the MRN is replaced digit for digit."""
    shifts: dict[str, set] = {}
    for note, (_, row) in zip(release["note"], source.iterrows()):
        first, last = row["patient"].split()
        assert first not in note and last not in note and row["mrn"] not in note, note
        found = DATE.search(note)
        assert found is not None and found.group(0) != DATE.search(row["note"]).group(0), note
        month, day, year = map(int, found.groups())                  # read month first, as the detector does
        written, original = pd.Timestamp(year, month, day), pd.Timestamp(2019, int(DATE.search(row["note"])[1]), 3)
        shifts.setdefault(row["mrn"], set()).add((written - original).days)
        assert re.search(r"MRN \d{7}\)", note), note
    assert all(len(days) == 1 for days in shifts.values())          # one shift per patient
    assert len({next(iter(days)) for days in shifts.values()}) > 1  # not one shift for all


def test_without_the_key_the_library_names_the_parameter(visits):
    folder, source = visits
    spec = load_spec(folder / "spec.toml")
    with pytest.raises(ParameterError) as refused:
        deidentify_text_columns(source, spec.fates(source.columns), spec.text.to_dict())
    assert refused.value.parameter == "key"


def test_every_deid_path_replaces_with_surrogates_and_the_policy_refuses_another_key(visits, tmp_path, capsys):
    folder, source = visits
    spec = ["--input", str(folder / "visits.csv"), "--spec", str(folder / "spec.toml")]
    key, other = ["--key-file", str(folder / "owner.key")], ["--key-file", str(folder / "other.key")]
    search = ["search", *spec, "--method", "ola", "--k", "3", "--report", str(tmp_path / "r.json"),
              "--out", str(tmp_path / "searched.csv"), "--policy-out", str(tmp_path / "policy.json")]
    capsys.readouterr()
    assert main(search) == 2                                       # no key: one line, nothing written
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--key-file" in err, err
    assert not any(tmp_path.iterdir())
    assert main([*search, *key]) == 0, capsys.readouterr().err
    searched = read_table(tmp_path / "searched.csv")
    assert_surrogates(searched, source)
    text = json.loads((tmp_path / "policy.json").read_text())["text"]
    assert text["mode"] == "surrogate" and re.fullmatch(r"[0-9a-f]{32}", text["key_check"])
    apply = ["apply", "--input", str(folder / "visits.csv"), "--policy", str(tmp_path / "policy.json"),
             "--out", str(tmp_path / "applied.csv")]
    capsys.readouterr()
    assert main([*apply, *other]) == 2 and not (tmp_path / "applied.csv").exists()
    assert "the key is not the one that masked it" in capsys.readouterr().err
    assert main(apply) == 2 and not (tmp_path / "applied.csv").exists()          # no key at all
    assert main([*apply, *key]) == 0
    applied = read_table(tmp_path / "applied.csv")
    assert applied["note"].tolist() == searched["note"].tolist()             # the same key, the same surrogates
    assert main(["assess", *spec, *key, "--report", str(tmp_path / "a.json"), "--out", str(tmp_path / "as.csv")]) == 0
    assert_surrogates(read_table(tmp_path / "as.csv"), source)
    (folder / "sh.toml").write_text(SPEC.split("[hierarchies]")[0] + '[types]\nzip = "zip"\nage = "age"\n'
                                    + SPEC[SPEC.index("[text]"):])
    assert main(["safe-harbor", "--input", str(folder / "visits.csv"), "--spec", str(folder / "sh.toml"), *key,
                 "--out", str(tmp_path / "harbor.csv"), "--policy-out", str(tmp_path / "sh.json")]) == 0
    assert_surrogates(read_table(tmp_path / "harbor.csv"), source)
    assert json.loads((tmp_path / "sh.json").read_text())["text"]["key_check"] == text["key_check"]
    secret = (folder / "owner.key").read_bytes().strip()
    assert not [f.name for f in tmp_path.iterdir() if secret in f.read_bytes()]   # the key is written nowhere


def test_link_release_de_identification_takes_the_owner_key(visits):
    from party_client.errors import ParameterError as PartyParameterError
    from party_client.release.deidentification import deidentify
    folder, source = visits
    spec = load_spec(folder / "spec.toml")
    with pytest.raises(PartyParameterError) as refused:
        deidentify(source, spec, method="threshold", threshold=0.5)
    assert "key" in refused.value.names
    release = deidentify(source, spec, method="threshold", threshold=0.5,
                         key=(folder / "owner.key").read_bytes().strip())
    assert_surrogates(release.output, source)
    assert release.method_info["policy"]["text"]["mode"] == "surrogate"
