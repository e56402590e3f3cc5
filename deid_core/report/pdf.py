"""A report page as a PDF for the ethics board's file: the same self-contained HTML printed by headless
Chromium (its print engine lays out exactly what the browser shows; no second renderer to keep in step)."""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from ..errors import DeidInputError

#: Browsers whose headless mode prints a page to PDF, looked up on PATH in this order.
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
#: Seconds a print may take before it is given up (a page with a dozen plots prints in about 2 s).
PRINT_SECONDS = 120


def browser() -> str:
    """The path of a Chromium-family browser, or one line saying none was found."""
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    raise DeidInputError("printing a page to PDF needs Chromium (e.g. apt-get install chromium): none found on PATH")


def check_page(page: str | Path) -> Path:
    """``page`` if it is a readable HTML page, else one line saying why not (before any browser starts)."""
    page = Path(page)
    if not page.is_file():
        raise DeidInputError(f"cannot read {str(page)!r}: " + ("a folder, not a file" if page.is_dir() else "no such file"))
    head = page.read_bytes()[:256].lstrip().lower()
    if not head.startswith((b"<!doctype html", b"<html")):
        raise DeidInputError(f"{str(page)!r} is not an HTML page (deid pdf prints the --html page of a deid command)")
    return page


def print_pdf(page: str | Path) -> bytes:
    """The PDF bytes of the HTML page at ``page`` (A4 by the browser's default, backgrounds printed, no
    header or footer)."""
    page = check_page(page)
    with tempfile.TemporaryDirectory(prefix="deid-pdf-") as scratch:
        out = Path(scratch) / "page.pdf"
        command = [browser(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                   "--disable-background-networking", "--no-pdf-header-footer", f"--user-data-dir={scratch}/profile",
                   f"--print-to-pdf={out}", page.resolve().as_uri()]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=PRINT_SECONDS)
        except subprocess.TimeoutExpired:
            raise DeidInputError(f"Chromium did not print {str(page)!r} within {PRINT_SECONDS} s") from None
        if done.returncode != 0 or not out.is_file() or not out.read_bytes().startswith(b"%PDF"):
            reason = " ".join((done.stderr or "no output").split())[-200:]
            raise DeidInputError(f"Chromium could not print {str(page)!r}: {reason}")
        return out.read_bytes()


__all__ = ["browser", "print_pdf"]
