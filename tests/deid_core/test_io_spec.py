"""I/O (separators, leading zeros, missing convention, Parquet, atomic writes) and spec validation."""
from __future__ import annotations

import pandas as pd
import pytest

import deid_core as dc
from deid_core.errors import DeidInputError
from deid_core.io import read_table, write_table


@pytest.mark.parametrize("sep", [",", ";", "\t"])
def test_separator_detection_and_leading_zeros(tmp_path, sep):
    p = tmp_path / "d.csv"
    p.write_text(sep.join(["mrn", "zip", "age"]) + "\n" + sep.join(["007", "02139", ""]) + "\n" + sep.join(["010", "NA", "45"]) + "\n")
    df = read_table(p)
    assert df["mrn"].astype(str).tolist() == ["007", "010"]
    assert df["zip"].astype(str).tolist() == ["02139", "NA"]  # "NA" is a value, not missing, by default
    assert pd.isna(df["age"].iloc[0])  # the empty string is the missing-value convention
    assert pd.isna(read_table(p, missing_values=["", "NA"])["zip"].iloc[1])


def test_parquet_roundtrip_and_marker_read_as_missing(tmp_path):
    df = pd.DataFrame({"zip": ["02139", dc.SUPPRESSED, None], "n": ["1", "2", "3"]})
    write_table(df, tmp_path / "d.parquet")
    back = read_table(tmp_path / "d.parquet")
    assert back["zip"].iloc[0] == "02139" and back["zip"].isna().tolist() == [False, True, True]
    assert isinstance(back["n"].dtype, pd.CategoricalDtype)


def test_atomic_write_leaves_no_partial_file(tmp_path):
    class Boom(pd.DataFrame):
        def to_csv(self, *a, **k):
            open(a[0], "w").write("partial")
            raise RuntimeError("disk full")
    with pytest.raises(RuntimeError):
        write_table(Boom({"a": [1]}), tmp_path / "out.csv")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("raw,msg", [
    ({"columns": {"a": "boss"}}, "unknown role"),
    ({"columns": {"a": "quasi"}, "types": {"b": "zip"}}, "unknown column 'b' in [types]"),
    ({"columns": {"a": "quasi"}, "release": {"threshold": -0.1}}, "outside (0, 1]"),
    ({"columns": {"a": "quasi"}, "release": {"type": "leaked"}}, "type"),
    ({"columns": {"a": "quasi"}, "risk": {"missing": "drop"}}, "missing must be"),
    ({"columns": {"a": "quasi"}, "hierarchies": {"a": {"builder": "magic"}}}, "unknown builder"),
])
def test_spec_validation(raw, msg):
    with pytest.raises(DeidInputError, match=msg.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[").replace("]", r"\]")):
        dc.parse_spec(raw)


def test_spec_minimal_form_from_issue(tmp_path):
    (tmp_path / "hierarchies").mkdir()
    (tmp_path / "hierarchies" / "race.csv").write_text("White;*\nBlack;*\n")
    p = tmp_path / "s.toml"
    p.write_text('[columns]\nname = "direct"\nzip = "quasi"\nage = "quasi"\nrace = "quasi"\ndisease = "sensitive"\n'
                 '[types]\nzip = "zip"\nage = "age"\n'
                 '[hierarchies]\nage = { builder = "interval", widths = [5, 10, 20], top_code = 90 }\n'
                 'zip = { builder = "prefix" }\nrace = { csv = "hierarchies/race.csv" }\n'
                 '[release]\ntype = "public"\nthreshold = 0.05\n')
    spec = dc.load_spec(p)
    assert spec.quasi == ["zip", "age", "race"] and spec.direct == ["name"]
    assert spec.hierarchies["race"].params["csv"] == str((tmp_path / "hierarchies" / "race.csv").resolve())
    df = pd.DataFrame({"name": ["a", "b"], "zip": ["02139", "02141"], "age": ["34", "91"], "race": ["White", "Black"],
                       "disease": ["x", "y"]})
    a = dc.assess(df, spec, levels={"age": 4, "zip": 2, "race": 1})
    assert a.summary["k_min"] == 2 and "name" not in a.output.columns
    assert a.attack["k_equivalent"] == 20 and not a.attack["meets_threshold"]  # public, 0.05: 1/2 is too high
    b = dc.assess(df, spec, levels={"age": 3})
    assert b.output["age"].astype(str).tolist() == ["20-39", "90+"] and b.summary["k_min"] == 1


def test_parquet_types_read_as_their_text(tmp_path):
    """A string column keeps its text (``007``); a number has no leading zeros to keep (int 7 -> ``7``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"code": pa.array(["007", "NA", None]), "n": pa.array([7, 10, None], pa.int64()),
                             "x": pa.array([7.0, float("nan"), 0.5]), "flag": pa.array([True, False, None])}),
                   tmp_path / "t.parquet")
    for categorical in (True, False):
        df = read_table(tmp_path / "t.parquet", categorical=categorical)
        rows = [[None if pd.isna(v) else v for v in r] for r in df.astype(object).itertuples(index=False)]
        assert rows == [["007", "7", "7", "true"], ["NA", "10", None, "false"], [None, None, "0.5", None]]


def test_na_like_words_are_text_and_written_back_exactly(tmp_path):
    words = ["NA", "null", "None", "nan", "N/A", "NaN", "#N/A", "<NA>", "1.0", "TRUE"]
    p = tmp_path / "w.csv"
    p.write_text("a;b\n" + "".join(f"{w};0{i}\n" for i, w in enumerate(words)))
    df = read_table(p)
    assert df["a"].tolist() == words and df["b"].tolist() == [f"0{i}" for i in range(len(words))]
    write_table(df, tmp_path / "o.csv", sep=";")
    assert (tmp_path / "o.csv").read_text() == p.read_text()


def test_one_column_table_keeps_blank_values(tmp_path):
    df = pd.DataFrame({"a": ["x", None, " ", "y\r"]})
    write_table(df, tmp_path / "o.csv")
    assert read_table(tmp_path / "o.csv")["a"].astype(object).where(lambda s: s.notna(), None).tolist() == ["x", None, " ", "y\r"]


def test_hierarchy_csv_keeps_text_and_quoted_separators(tmp_path):
    from deid_core.hierarchy import from_csv

    p = tmp_path / "h.csv"
    p.write_text('02139;021**;*\n"a;b";NA;*\n\n007;00*;*\n')
    h = from_csv(p)
    assert h.rows() == [["02139", "021**", "*"], ["a;b", "NA", "*"], ["007", "00*", "*"]]
    (tmp_path / "bad.csv").write_bytes(b"\xff\xfe;*\n")
    with pytest.raises(DeidInputError, match="not UTF-8"):
        from_csv(tmp_path / "bad.csv")


def test_categories_built_across_chunks(tmp_path, monkeypatch):
    """Chunked reading (a small chunk here) gives the same values and categories as one chunk."""
    import deid_core.io as dio

    p = tmp_path / "c.csv"
    p.write_text("zip,n\n02139,1\n,2\n02139,3\n00501,\n2139,5\nNA,6\n00501,7\n")
    whole = read_table(p)
    monkeypatch.setattr(dio, "CHUNK_ROWS", 2)
    chunked = read_table(p)
    pd.testing.assert_frame_equal(chunked, whole)
    assert chunked["zip"].iloc[0] == "02139" and pd.isna(chunked["zip"].iloc[1])
    assert chunked["zip"].tolist()[2:] == ["02139", "00501", "2139", "NA", "00501"]
    assert list(chunked["zip"].cat.categories) == ["02139", "00501", "2139", "NA"]
    (tmp_path / "h.csv").write_text("a,b\n")
    assert read_table(tmp_path / "h.csv").shape == (0, 2)


def test_parquet_read_in_batches(tmp_path, monkeypatch):
    import pyarrow as pa
    import pyarrow.parquet as pq

    import deid_core.io as dio

    values = ["02139", None, "02139", "00501", "2139", "NA", "nan"]
    pq.write_table(pa.table({"zip": pa.array(values), "x": pa.array([0.5, float("nan"), 1, 2, 3, 4, 5])}),
                   tmp_path / "b.parquet", row_group_size=3)
    whole = read_table(tmp_path / "b.parquet")
    monkeypatch.setattr(dio, "CHUNK_ROWS", 2)
    for categorical in (True, False):
        df = read_table(tmp_path / "b.parquet", categorical=categorical)
        assert [None if pd.isna(v) else v for v in df["zip"].astype(object)] == values
        assert [None if pd.isna(v) else v for v in df["x"].astype(object)] == ["0.5", None, "1", "2", "3", "4", "5"]
    pd.testing.assert_frame_equal(read_table(tmp_path / "b.parquet"), whole)


def test_tables_as_users_have_them(tmp_path, caplog):
    """A gzip, bzip2, xz or single-file zip CSV reads as the plain file does, codes kept; spaces around
    column names are removed (once, said on stderr); a spreadsheet, a zip of several files and text that
    is not UTF-8 are refused in one line saying where and what to do; the input is never modified."""
    import bz2
    import gzip
    import logging
    import lzma
    import zipfile

    text = b"rec_id,  given_name ,zip \n007,  ann,02139\n"
    packed = {"t.csv.gz": gzip.compress(text), "t.csv.bz2": bz2.compress(text), "t.csv.xz": lzma.compress(text)}
    for name, data in packed.items():
        (tmp_path / name).write_bytes(data)
    with zipfile.ZipFile(tmp_path / "t.zip", "w") as archive:
        archive.writestr("t.csv", text)
    with caplog.at_level(logging.WARNING, logger="deid_core.io"):
        for name in [*packed, "t.zip"]:
            df = read_table(tmp_path / name, categorical=False)
            assert list(df.columns) == ["rec_id", "given_name", "zip"], name
            assert df.iloc[0].tolist() == ["007", "  ann", "02139"], name          # values stay exact
    assert "spaces around 2 column name(s) removed" in caplog.text
    # FEBRL's ", " between fields: the spaces after each separator belong to no value (a blank date is missing)
    (tmp_path / "febrl.csv").write_bytes(b"rec_id, given_name, date_of_birth\nrec-1-org, ann, \nrec-2-org,  bo, 19700102\n")
    with caplog.at_level(logging.WARNING, logger="deid_core.io"):
        febrl = read_table(tmp_path / "febrl.csv", categorical=False)
    assert list(febrl.columns) == ["rec_id", "given_name", "date_of_birth"]
    assert febrl["given_name"].tolist() == ["ann", "bo"] and febrl["date_of_birth"].isna().tolist() == [True, False]
    assert "fields are separated by ', '" in caplog.text
    with zipfile.ZipFile(tmp_path / "book.xlsx", "w") as archive:
        archive.writestr("[Content_Types].xml", "x")
        archive.writestr("xl/workbook.xml", "x")
    (tmp_path / "old.xls").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(100))
    with zipfile.ZipFile(tmp_path / "two.zip", "w") as archive:
        archive.writestr("a.csv", "x\n1\n")
        archive.writestr("b.csv", "y\n2\n")
    (tmp_path / "latin.csv").write_bytes(b"id,name\n1,Ann\n2,Jos\xe9\n")
    (tmp_path / "latin.csv.gz").write_bytes(gzip.compress(b"id,name\n1,Ann\n2,Jos\xe9\n"))
    refusals = {"book.xlsx": "a spreadsheet: save it as CSV (UTF-8)", "old.xls": "a spreadsheet: save it as CSV",
                "two.zip": "a zip archive of 2 files",
                "latin.csv": "not UTF-8 text (byte 19 of its text, line 3: 0xe9); if it is Latin-1 or Windows-1252, "
                             "convert it first, e.g. iconv -f cp1252 -t utf-8 latin.csv > latin-utf8.csv",
                "latin.csv.gz": "zcat latin.csv.gz | iconv -f cp1252 -t utf-8 > latin-utf8.csv"}
    for name, message in refusals.items():
        before = (tmp_path / name).read_bytes()
        with pytest.raises(DeidInputError) as caught:
            read_table(tmp_path / name)
        assert message in str(caught.value) and "\n" not in str(caught.value), (name, caught.value)
        assert (tmp_path / name).read_bytes() == before

