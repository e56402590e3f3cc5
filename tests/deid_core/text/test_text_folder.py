"""``deid text --input-dir --out-dir`` (docs/text.md, "A folder of notes"): each ``.txt`` note de-identified at the
same path, read and written exactly (line ends, byte-order mark), the date shift per file or per folder, and bad
input one line, exit 2, no output folder and the input folder untouched."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from deid_core.cli import main
from deid_core.text import detect, transform
from deid_core.text.folder import deidentify_folder, note_files

KEY = "a test key of 32 bytes, not real"
NOTES = {
    "P1/a.txt": b"Seen by Dr. Villegas on 2/03/2019.\r\nCall 617-555-0199.\r\n",
    "P1/b.txt": b"\xef\xbb\xbfFollow-up: Villegas, Yosef on 3/14/2019.\n",
    "P2/c.txt": "Mrs. Hautam\u00e4ki seen at Mercy Clinic on March 3, 2019.".encode("utf-8"),
    "top.txt": b"",
}


def tree(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (relative path -> hash of its bytes)."""
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    folder = tmp_path / "in"
    for name, data in NOTES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    (folder / "P2" / "scan.csv").write_bytes(b"not a note")
    return folder


def test_each_note_is_done_at_its_path_with_its_bytes_kept(notes, tmp_path, capsys):
    before = tree(notes)
    out = tmp_path / "out"
    assert main(["text", "--input-dir", str(notes), "--out-dir", str(out), "--mode", "tag"]) == 0
    assert tree(notes) == before  # the input folder is never written to
    assert sorted(tree(out)) == ["P1/a.txt", "P1/b.txt", "P2/c.txt", "top.txt"]  # only the .txt notes
    for name, data in NOTES.items():
        text = data.decode("utf-8")
        assert (out / name).read_bytes() == transform(text, detect(text), "tag").text.encode("utf-8")
    assert (out / "P1/a.txt").read_bytes().count(b"\r\n") == 2 and (out / "P1/b.txt").read_bytes()[:3] == b"\xef\xbb\xbf"
    assert not any(b"Villegas" in (out / n).read_bytes() for n in ("P1/a.txt", "P1/b.txt"))
    assert "4 notes" in capsys.readouterr().out


def test_one_date_shift_per_folder_with_patient_folder(notes, tmp_path, monkeypatch):
    """The two notes of P1 hold 2/03/2019 and 3/14/2019: shifted by one shift they keep their 39 days apart."""
    import datetime as dt
    import re

    monkeypatch.setenv("DEID_KEY", KEY)

    def dates(folder: Path) -> list[dt.date]:
        found = [re.search(r"\d+/\d+/\d{4}", (folder / name).read_text(encoding="utf-8-sig")).group()
                 for name in ("P1/a.txt", "P1/b.txt")]
        return [dt.datetime.strptime(d, "%m/%d/%Y").date() for d in found]

    for patient, out in (("folder", tmp_path / "by_folder"), ("file", tmp_path / "by_file")):
        assert main(["text", "--input-dir", str(notes), "--out-dir", str(out), "--mode", "surrogate",
                     "--patient", patient]) == 0
    first, second = dates(tmp_path / "by_folder")
    assert (second - first).days == 39 and first != dt.date(2019, 2, 3)
    assert dates(tmp_path / "by_file") != dates(tmp_path / "by_folder")  # each file its own shift (this key)


@pytest.mark.parametrize("args, message", [
    (["--out-dir", "{tmp}/in/inside"], "inside the input folder"),
    (["--out-dir", "{tmp}/exists"], "it exists"),
    (["--out-dir", "{tmp}/nowhere/out"], "does not exist"),
    ([], "needs --out-dir"),
    (["--out-dir", "{tmp}/o", "--column", "note"], "--column is for a table"),
    (["--out-dir", "{tmp}/o", "--hints", "name=name"], "--hints is for a table"),
    (["--out-dir", "{tmp}/o", "--patient", "mrn"], "file, folder"),
    (["--out-dir", "{tmp}/o", "--report", "{tmp}/in/r.json"], "inside the input folder"),
])
def test_bad_folders_and_flags_are_one_line_and_write_nothing(notes, tmp_path, capsys, args, message):
    (tmp_path / "exists").mkdir()
    before, listing = tree(notes), sorted(os.listdir(tmp_path))
    argv = ["text", "--input-dir", str(notes), "--mode", "tag", *(a.format(tmp=tmp_path) for a in args)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and "Traceback" not in err
    assert tree(notes) == before and sorted(os.listdir(tmp_path)) == listing


@pytest.mark.parametrize("bad, message", [(b"caf\xe9 Dr. Smith", "not UTF-8"), (b"\x00\x01\x02", "binary")])
def test_a_bad_note_anywhere_leaves_no_output(notes, tmp_path, capsys, bad, message):
    (notes / "P2" / "zz.txt").write_bytes(bad)  # the last file read: the others are done by then
    before, listing = tree(notes), sorted(os.listdir(tmp_path))
    assert main(["text", "--input-dir", str(notes), "--out-dir", str(tmp_path / "out"), "--mode", "tag"]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "zz.txt" in err and "\n" not in err
    assert tree(notes) == before and sorted(os.listdir(tmp_path)) == listing  # no output, no temporary folder


def test_a_folder_without_notes_and_links_left_alone(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["text", "--input-dir", str(empty), "--out-dir", str(tmp_path / "o"), "--mode", "tag"]) == 2
    assert "no .txt notes" in capsys.readouterr().err
    (empty / "real.txt").write_text("Dr. Smith", encoding="utf-8")
    (empty / "link.txt").symlink_to(empty / "real.txt")
    (empty / "sub").symlink_to(empty, target_is_directory=True)  # a loop, never followed
    assert note_files(empty) == [Path("real.txt")]


def test_chunks_give_the_same_output(notes, tmp_path):
    one, many = tmp_path / "one", tmp_path / "many"
    a = deidentify_folder(notes, one, "tag", chunk_files=1)
    b = deidentify_folder(notes, many, "tag")
    assert tree(one) == tree(many) and a.summary() == b.summary() and a.documents == 4


def test_progress_is_told_the_files_done_and_the_files_in_all(notes, tmp_path):
    calls = []
    deidentify_folder(notes, tmp_path / "out", "tag", chunk_files=3, progress=lambda done, files: calls.append((done, files)))
    assert calls == [(3, 4), (4, 4)]

