"""Nothing parsed away silently: dates in mixed forms, a month-first format on day-first dates, and numbers
that are not numbers are counted per field; above 5 % the dry-run and the run warn, above half they are
refused (exit 2, one line, nothing written) unless ``--force``; an example value is printed only when
five records carry it.  Dates are read in the form their column shows (day first when its values say so),
stated by the dry-run, and a column whose day/month order no value shows is refused naming both readings."""
from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest

from party_client.errors import PartyError
from party_client.matching.parsing import check_unparsed, unparsed_fields
from party_client.matching.preset_roles import parse_map
from party_client.matching.presets import person_rules


def people(n: int, dob: list[str]) -> pd.DataFrame:
    return pd.DataFrame({"first": [f"anna{i % 17}" for i in range(n)], "last": [f"smith{i % 23}" for i in range(n)],
                         "dob": dob})


def day_first(n: int) -> list[str]:
    return [f"{1 + i % 28:02d}/{1 + i % 12:02d}/{1950 + i % 40}" for i in range(n)]


def test_a_month_first_format_on_day_first_dates_is_refused_and_forced_through():
    frame = people(200, day_first(200))
    rules = person_rules(parse_map("first=first,last=last,dob=dob"), "%m/%d/%Y")
    [found] = unparsed_fields(rules, frame)
    assert (found.field, found.present) == ("dob", 200)
    assert found.unparsed > 100                               # days above 12 do not fit as months
    with pytest.raises(PartyError, match=r"field 'dob' \(column 'dob'\): \d+ of 200 values \(\d+%\) could not be "
                                         r"read as date_format '%m/%d/%Y'.*--force"):
        check_unparsed([found])
    said = []
    assert check_unparsed([found], force=True, warn=said.append) == said and len(said) == 1


def test_mixed_date_forms_warn_and_examples_need_five_records():
    dob = [f"19{50 + i % 40}{1 + i % 12:02d}{1 + i % 28:02d}" for i in range(180)] + \
        ["1970-01-02"] * 6 + [f"1980-03-{10 + i}" for i in range(14)]          # 20 of 200 in another form
    frame = people(200, dob)
    rules = person_rules(parse_map("first=first,last=last,dob=dob"), "%Y%m%d")
    said = []
    check_unparsed(unparsed_fields(rules, frame), warn=said.append)
    assert len(said) == 1 and "20 of 200 values (10%)" in said[0]
    assert "'1970-01-02'" in said[0]                          # six records carry it
    assert "1980-03-1" not in said[0]                         # one record each: never printed
    quiet = []                                                # 2 of 200: below the warning
    check_unparsed(unparsed_fields(rules, people(200, dob[:180] + dob[:18] + ["x", "y"])), warn=quiet.append)
    assert quiet == []


def test_the_dry_run_refuses_then_warns_with_force(tmp_path):
    frame = people(200, day_first(200))
    frame.to_csv(tmp_path / "q.csv", index=False)
    command = [sys.executable, "-m", "party_client.cli", "join", "--dir", str(tmp_path / "p"), "--holder", "h", "--input", str(tmp_path / "q.csv"),
               "--preset", "person", "--map", "first=first,last=last,dob=dob", "--date-format", "%m/%d/%Y",
               "--dry-run", "--out", str(tmp_path / "out.csv")]
    refused = subprocess.run(command, capture_output=True, text=True)
    assert refused.returncode == 2, refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and "--force" in refused.stderr
    assert "Traceback" not in refused.stderr and not (tmp_path / "out.csv").exists()
    forced = subprocess.run(command + ["--force"], capture_output=True, text=True)
    assert forced.returncode == 0, forced.stderr
    assert "could not be read as date_format '%m/%d/%Y'" in forced.stderr


def test_year_first_dates_in_any_form_are_read_by_default_and_agree():
    """The default ``auto`` reads each party's year-first form: an ISO column and a compact one give the
    same codes, so the same person agrees on dob whatever form each registry writes."""
    iso = ["1967-08-18", "1970-01-02", "", "2001-12-31"]
    compact = ["19670818", "19700102", "", "20011231"]
    rules = person_rules(parse_map("first=first,last=last,dob=dob"))
    codes = [rules.codes(people(4, dob))["dob"].tolist() for dob in (iso, compact, [d.replace("-", "/")[:10] for d in iso])]
    assert codes[0] == codes[1] == codes[2] == ["19670818", "19700102", "", "20011231"]
    assert unparsed_fields(rules, people(4, iso)) == []
    timed = rules.codes(people(2, ["1967-08-18T10:00:00", "1970-01-02T00:00:00"]))["dob"].tolist()
    assert timed == ["19670818", "19700102"]
    partial = unparsed_fields(rules, people(3, ["1967", "1967-08", "1967-08-18"]))   # never a day of a year
    assert [(u.present, u.unparsed) for u in partial] == [(3, 2)]


def dry_run(tmp_path, dob: list[str], *extra: str) -> subprocess.CompletedProcess:
    people(len(dob), dob).to_csv(tmp_path / "q.csv", index=False)
    return subprocess.run([sys.executable, "-m", "party_client.cli", "join", "--dir", str(tmp_path / "p"), "--holder",
                           "h", "--input", str(tmp_path / "q.csv"), "--preset", "person",
                           "--map", "first=first,last=last,dob=dob", "--dry-run", "--out", str(tmp_path / "o.csv"),
                           *extra], capture_output=True, text=True)


def test_a_columns_day_month_order_is_read_from_its_values_and_stated_by_the_dry_run(tmp_path):
    """Without --date-format a day-first column is read day first when its values show it (a first number
    above 12), a month-first one month first, and the dry-run says which form it read and why; both give
    the same codes as the ISO form of the same dates."""
    iso = [f"{1950 + i % 40}-{1 + i % 12:02d}-{1 + i % 28:02d}" for i in range(50)]
    day = [f"{d[8:]}/{d[5:7]}/{d[:4]}" for d in iso]
    month = [f"{d[5:7]}-{d[8:]}-{d[:4]}" for d in iso]
    named = [pd.Timestamp(d).strftime("%d %b %Y") for d in iso]
    rules = person_rules(parse_map("first=first,last=last,dob=dob"))
    codes = [rules.codes(people(50, dob))["dob"].tolist() for dob in (iso, day, month, named)]
    assert codes[0] == codes[1] == codes[2] == codes[3] and "" not in codes[0]
    said = dry_run(tmp_path, day)
    assert said.returncode == 0, said.stderr
    assert "field 'dob' (column 'dob'): dates read as %d/%m/%Y (day first: 26 of 50 distinct values read only " \
        "day first)" in said.stdout
    assert "dates read as %m-%d-%Y (month first" in dry_run(tmp_path, month).stdout


def test_an_ambiguous_column_is_refused_naming_both_readings(tmp_path):
    """A column whose values all read both ways (days up to 12), or that shows its order by fewer than
    three values (one mistyped date never decides), is refused in one line naming the two readings and
    --date-format, quoting no one's date (exit 2, nothing written)."""
    ambiguous = [f"{1 + i % 12:02d}/{1 + i % 12:02d}/{1950 + i}" for i in range(40)] + ["03/04/1970"]
    for dob in (ambiguous, ambiguous + ["13/04/1971", "14/04/1971"]):
        refused = dry_run(tmp_path, dob)
        assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
        assert "dates like 'nn/nn/nnnn' read day first or month first (03/04/1970: 3 April 1970 under %d/%m/%Y, " \
            "4 March 1970 under %m/%d/%Y)" in refused.stderr
        assert "--date-format %d/%m/%Y or --date-format %m/%d/%Y" in refused.stderr
        assert "Traceback" not in refused.stderr and not (tmp_path / "o.csv").exists()
    assert "only 2 show which" in refused.stderr
    given = dry_run(tmp_path, ambiguous, "--date-format", "%m/%d/%Y")
    assert given.returncode == 0 and "dates read as" not in given.stdout


def test_a_column_in_no_known_form_is_refused_asking_for_the_format(tmp_path):
    refused = dry_run(tmp_path, ["1967 08 18"] * 3 + ["1970 01 02"] * 6)
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "dates like '1970 01 02' are in no form read without a format" in refused.stderr   # six records share it
