"""A linked FEBRL file released with ``deid``: no identifier column leaves unflagged (docs/deid.md, "Identifier
detection") - surnames outside any one list's coverage, street addresses, house numbers and the match weight
a linkage computed from them."""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from deid_core.cli import main
from deid_core.cli.options import flagged
from deid_core.detect import check_release, column_findings, person_names, scan
from deid_core.errors import DeidInputError, ParameterError
from deid_core.ui.specform import SpecForm

FEBRL = Path(__file__).resolve().parents[1] / "data" / "febrl"
FLAGGED = {"given_name": "name", "surname": "name", "street_number": "street_number", "address_1": "address",
           "address_2": "address", "match_weight": "linkage"}
SPEC = """[columns]
rec_id = "direct"
given_name = "direct"
soc_sec_id = "direct"
address_2 = "direct"
surname = "other"
street_number = "other"
address_1 = "other"
match_weight = "other"
suburb = "other"
postcode = "quasi"
state = "quasi"
date_of_birth = "quasi"

[hierarchies]
postcode = { builder = "prefix", levels = 4 }
date_of_birth = { builder = "dates" }
state = { builder = "flat" }

[release]
type = "non-public"
threshold = 0.5
"""


@pytest.fixture(scope="module")
def linked() -> pd.DataFrame:
    df = pd.read_csv(FEBRL / "dataset4a.csv.gz", dtype=str, skipinitialspace=True)
    df["match_weight"] = np.round(np.random.default_rng(0).uniform(5, 30, len(df)), 2).astype(str)
    return df


def test_the_febrl_identifiers_are_detected_and_its_places_are_not(linked):
    found = {c: [f.kind for f in fs] for c, fs in scan(linked)[0].items()}
    assert {c: found.get(c, [None])[0] for c in FLAGGED} == FLAGGED
    assert not found.keys() & {"suburb", "postcode", "state"}          # places, governed by the measured risk


def test_surnames_do_not_hang_on_one_lists_coverage(linked):
    assert {"white", "green", "neumann"} <= person_names()
    surnames = linked["surname"]
    assert [f.kind for f in column_findings(surnames, "c7")] == ["name"]          # by the list alone
    # surnames no list holds: the column's name and the values' shape and number carry it
    rng = np.random.default_rng(1)
    made_up = pd.Series(["".join(rng.choice(list("bcdfgklmnprstvz"), 3)) + rng.choice(["ova", "ek", "quist", "adze"])
                         for _ in range(500)]).str.capitalize()
    assert made_up.str.lower().isin(person_names()).mean() < 0.05
    assert [f.kind for f in column_findings(made_up, "last_name")] == ["name"]
    assert column_findings(made_up, "c7") == []
    # categories of everyday words are no names, however many are listed surnames
    colours = pd.Series(rng.choice(["White", "Black", "Green", "Brown", "Gray", "Rose", "Other"], 500))
    assert column_findings(colours, "c8") == [] and column_findings(colours, "race") == []


WORDS = ("stanley", "pinkerton", "salkauskas", "macquoid", "randwick", "cutlack", "caley", "traeger", "giblin",
         "tullaroop", "goldfinch", "maltby", "ramsay", "dumas", "blacket", "neworra", "main", "high", "church", "park")


@pytest.mark.parametrize("form", ["{w} street", "{n} {w} St", "{n} o'{w} crescent", "unit {n}", "po box {n}",
                                  "{w}straße {n}", "{n}, rue de {w}", "Via {w} {n}", "Apt. {n}", "{w} utca {n}.",
                                  "ul. {w} {n}"])
def test_street_address_forms(form):
    rng = np.random.default_rng(2)
    values = pd.Series([form.format(n=n, w=w) for n, w in zip(rng.integers(1, 999, 300), rng.choice(WORDS, 300))])
    assert [f.kind for f in column_findings(values, "c1")][:1] == ["address"], values.head().tolist()
    mixed = pd.Series(["stanley street", "12 Main St", "4 o'connell crescent", "unit 3", "po box 12"] * 4)
    assert [f.kind for f in column_findings(mixed, "c1")] == ["address"]   # few distinct: the forms alone say it


def test_house_numbers_and_linkage_columns_by_name():
    numbers = pd.Series(np.random.default_rng(3).integers(1, 300, 200).astype(str))
    assert [f.kind for f in column_findings(numbers, "street_number")] == ["street_number"]
    assert [f.kind for f in column_findings(numbers, "house_no")] == ["street_number"]
    assert column_findings(numbers, "n_visits") == []
    for name in ("match_weight", "match_probability", "pair_id", "cluster_id", "linkage_id", "link_key"):
        assert [f.kind for f in column_findings(numbers, name)] == ["linkage"], name
    assert column_findings(pd.Series(["True", "False"] * 50), "matched") == []


@pytest.mark.parametrize("column", ["surname", "street_number", "address_1", "match_weight"])
def test_a_flagged_column_released_as_other_is_refused(linked, column):
    release = linked[[column, "postcode", "state"]]
    fates = {column: "other", "postcode": "quasi", "state": "quasi"}
    with pytest.raises(ParameterError, match=rf"'{column}' \(other\) looks like .*pass accepted NAME") as refused:
        check_release(release, fates, safe_harbor=False)
    assert refused.value.parameter == "accepted" and flagged(refused.value).endswith("pass --accept-column NAME:REASON")
    fates[column] = "sensitive"
    with pytest.raises(DeidInputError, match=rf"'{column}' \(sensitive\)"):
        check_release(release, fates, safe_harbor=False)
    check = check_release(release, {**fates, column: "other"}, safe_harbor=False, accepted={column: "test data"})
    assert check["accepted_columns"][column]["detected"] == [FLAGGED[column]]


def test_search_apply_best_refuses_the_linked_columns(linked, tmp_path, capsys):
    data, spec = tmp_path / "linked.csv", tmp_path / "release.toml"
    linked.head(400).to_csv(data, index=False)
    spec.write_text(SPEC)
    out, release = tmp_path / "r.json", tmp_path / "rel.csv"
    argv = ["search", "--input", str(data), "--spec", str(spec), "--method", "ola", "--max-suppression", "0.5",
            "--report", str(out), "--out", str(release)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "--accept-column" in err, err
    assert all(f"'{c}' (other)" in err for c in ("surname", "street_number", "address_1", "match_weight")), err
    assert "'suburb'" not in err and "neumann" not in err and not release.exists() and not out.exists()
    accept = [x for c in ("surname", "street_number", "address_1", "match_weight")
              for x in ("--accept-column", f"{c}:synthetic FEBRL records")]
    assert main(argv + accept) == 0
    assert json.loads(out.read_text())["accepted_columns"]["surname"] == {"reason": "synthetic FEBRL records",
                                                                          "detected": ["name"]}


def test_the_workbench_form_declares_the_flagged_columns_direct(linked):
    form = SpecForm.for_columns(list(linked.columns), scan(linked)[0])
    roles = {c: col.role for c, col in form.columns.items()}
    assert all(roles[c] == "direct" for c in FLAGGED), roles
    assert roles["suburb"] == roles["postcode"] == roles["state"] == "other"


def test_the_scan_of_100000_rows_stays_on_distinct_values(linked):
    big = linked.sample(n=100_000, replace=True, random_state=0).reset_index(drop=True)
    scan(big.head(1000))                              # the name list loads once, before the clock
    t0 = time.perf_counter()
    found, scanned = scan(big)
    assert time.perf_counter() - t0 < 20 and scanned["rows_scanned"] == 100_000 and FLAGGED.keys() <= found.keys()
