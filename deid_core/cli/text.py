"""``deid text``: de-identify a notes column of a CSV or Parquet table, or a folder of ``.txt`` notes (redact, tag,
surrogate, generalize; docs/text.md).

Every other column is written unchanged, as read (as text: ``007`` keeps its zeros); the table is streamed in
chunks of rows (:mod:`deid_core.text.table`) and the output moved into place only at the end, so memory stays
flat in the number of notes and bad input leaves no partial file.
"""
from __future__ import annotations

import argparse
import gc
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ..errors import DeidInputError
from .masking import KEY_HELP, owner_key
from .options import guard_outputs, summary_line

#: Bytes read to tell a binary file (a NUL byte in them, and no compressed-file signature).
SNIFF_BYTES = 8192


def parse_hints(text: str | None) -> dict[str, str]:
    """``--hints name=COL,mrn=COL,dob=COL`` -> {hint key: column}."""
    from ..text.hints import KEYS

    out: dict[str, str] = {}
    for item in filter(None, (text or "").split(",")):
        key, eq, column = item.partition("=")
        if not eq or not key.strip() or not column.strip():
            raise DeidInputError(f"--hints: {item!r} is not KEY=COLUMN (e.g. name=patient_name,mrn=mrn)")
        if key.strip() not in KEYS:
            raise DeidInputError(f"--hints: unknown key {key.strip()!r}: use one of {', '.join(KEYS)}")
        out[key.strip()] = column.strip()
    return out


def refuse_binary(path: str) -> None:
    """A file that is neither text nor a known compressed or Parquet file is refused in one line."""
    from ..io import MAGIC, is_parquet

    try:
        head = Path(path).read_bytes()[:SNIFF_BYTES] if Path(path).is_file() else None
    except OSError as exc:
        raise DeidInputError(f"cannot read {path!r}: {exc.strerror or exc}") from None
    if head is None:
        raise DeidInputError(f"cannot read {path!r}: no such file")
    if not head:
        raise DeidInputError(f"cannot read {path!r}: empty file")
    if is_parquet(path) or any(head.startswith(magic) for magic, _ in MAGIC):
        return
    if b"\x00" in head:
        raise DeidInputError(f"cannot read {path!r}: a binary file, not CSV text")


@contextmanager
def settled() -> Iterator[None]:
    """Load the detector's lists now and, while the block runs, leave every object this process holds so far (the
    modules, the lists: some 60,000 objects that outlive the block) out of the garbage collector's walks
    (``gc.freeze``): each collection of its oldest generation walks every object not frozen, and the notes' spans
    bring one on every few thousand notes. About 5 % of ``deid text``'s time on a column (docs/text.md,
    "Measured"). Undone after the block (``gc.unfreeze``), so a caller of the command in its own process keeps its
    collector as it was; a process that already keeps frozen objects is left as it is."""
    from ..text import detect

    detect("Dr. Smith seen 2/03.")
    if gc.get_freeze_count():  # the process's owner froze objects of its own: that choice stands
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _layout(args: argparse.Namespace) -> bool:
    """Whether the command de-identifies a folder (``--input-dir``, ``--out-dir``) rather than a table
    (``--input``, ``--column``, ``--out``); a mix of the two is refused naming the flag out of place."""
    from ..text.folder import PATIENT_KEYS

    folder = args.input_dir is not None or args.out_dir is not None
    wanted, other = (("--input-dir", "--out-dir"), ("--input", "--column", "--out", "--hints")) if folder else (
        ("--input", "--column", "--out"), ())
    for flag in wanted:
        if getattr(args, flag[2:].replace("-", "_")) is None:
            raise DeidInputError(f"deid text needs {flag} (a table: --input, --column, --out; a folder of .txt notes: "
                                 "--input-dir, --out-dir)")
    for flag in other:
        if getattr(args, flag[2:].replace("-", "_")) is not None:
            raise DeidInputError(f"{flag} is for a table, not a folder of notes (--input-dir)")
    if folder and args.patient not in (None, *PATIENT_KEYS):
        raise DeidInputError(f"--patient with --input-dir is one of {', '.join(PATIENT_KEYS)}, got {args.patient!r}")
    return folder


def cmd_text(args: argparse.Namespace) -> int:
    from ..io import write_json
    from ..text.folder import deidentify_folder
    from ..text.second_pass import SecondPass
    from tqdm import tqdm

    from ..text.table import deidentify_table, table_rows
    from ..text.transforms import Surrogates

    folder = _layout(args)
    source, target = (args.input_dir, args.out_dir) if folder else (args.input, args.out)
    guard_outputs([args.input, args.key_file], [args.out, args.report])
    hint_columns = parse_hints(args.hints)
    key = owner_key(args.key_file, required=args.mode == "surrogate")
    if args.workers < 1:
        raise DeidInputError(f"--workers must be 1 or more, got {args.workers}")
    if folder and args.report and Path(args.input_dir).resolve() in Path(args.report).resolve().parents:
        raise DeidInputError(f"--report {args.report!r} is inside the input folder, which is never written to")
    if not folder:
        refuse_binary(args.input)
    surrogates = Surrogates(key) if args.mode == "surrogate" else None
    second_pass = SecondPass(args.second_pass) if args.second_pass else None
    # notes done, shown after two seconds (an estimate of the time left only where the count of notes is known
    # before they are read: a folder's files, a Parquet table's rows)
    with settled(), tqdm(total=None if folder else table_rows(source), unit="note", delay=2, leave=False,
                         desc="deid text") as bar:
        t0 = time.perf_counter()
        if folder:
            date_shift_key = args.patient or "file"

            def progress(done: int, files: int) -> None:
                bar.total = files
                bar.update(done - bar.n)

            result = deidentify_folder(source, target, args.mode, patient=date_shift_key, surrogates=surrogates,
                                       workers=args.workers, second_pass=second_pass, progress=progress)
        else:
            date_shift_key = args.patient or hint_columns.get("mrn")
            result = deidentify_table(source, args.column, target, args.mode, hint_columns=hint_columns,
                                      patient_column=date_shift_key, workers=args.workers, surrogates=surrogates,
                                      second_pass=second_pass, progress=lambda done: bar.update(done - bar.n))
    seconds = time.perf_counter() - t0
    where = {"input_dir": str(source)} if folder else {"input": str(source), "column": args.column}
    report = {**where, "mode": args.mode, "hints": hint_columns, "second_pass": args.second_pass,
              "date_shift_key": date_shift_key or "row number", **result.summary(), "seconds": round(seconds, 3),
              "workers": args.workers}
    if args.report:
        write_json(report, args.report)
    summary_line("text", [target, args.report], f"{result.documents} notes, {sum(result.found.values())} PHI spans "
                 f"replaced ({args.mode}), {sum(result.tagged.values())} tagged without a surrogate")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """``deid text``."""
    from ..text.transforms import MODES

    p = sub.add_parser("text", help="de-identify a free-text column (clinical notes) of a CSV or Parquet table, or a "
                                    "folder of .txt notes")
    p.add_argument("--input", help="the table (CSV or .parquet); every value is read as text")
    p.add_argument("--column", help="the column holding the notes")
    p.add_argument("--out", help="the table written (CSV or .parquet), other columns unchanged")
    p.add_argument("--input-dir", metavar="DIR",
                   help="instead of a table: a folder of notes, one per .txt file (subfolders included), read as "
                        "written")
    p.add_argument("--out-dir", metavar="DIR",
                   help="with --input-dir: the folder written, each note at the same path (it must not exist yet)")
    p.add_argument("--mode", required=True, choices=MODES,
                   help="redact: ***; tag: <LAST_NAME:1>; surrogate: realistic keyed replacements (needs a key); "
                        "generalize: dates to year, ages over 89 to 90+, ZIP to 3 digits, the rest tagged")
    p.add_argument("--hints", metavar="KEY=COL,...",
                   help="columns of the same row whose values are searched in the note first, "
                        "e.g. name=patient_name,mrn=mrn,dob=birth_date")
    p.add_argument("--patient", metavar="COL",
                   help="the patient id column keying the date shift of surrogate mode (default: the mrn hint "
                        "column, else the row number); with --input-dir, file or folder: the file, or the folder "
                        "holding it, keys the shift (default: file)")
    p.add_argument("--key-file", help=KEY_HELP)
    p.add_argument("--report", help="JSON: notes, PHI spans per type, values tagged for want of a surrogate")
    p.add_argument("--second-pass", metavar="MODULE:FUNCTION",
                   help="your function that rejects detections to raise precision (docs/text.md, \"A second pass\"): "
                        "module:function or file.py:function; off unless given")
    p.add_argument("--workers", type=int, default=1, metavar="N",
                   help="processes sharing a column of 1 MB of notes or more, in consecutive slices (the output is "
                        "the same, in the same order)")
    p.set_defaults(run=cmd_text)
