"""Report pages opened in a real browser (Debian's chromium driven by Playwright): every page is
screenshotted and checked — the verdict first, no JSON fragment or raw key, no number written with more
than 4 significant digits, every plot decoded. Screenshots go to the caller's folder, and to
``$DEID_PAGE_SCREENSHOTS`` when set (e.g. ``docs/pages`` to refresh the documentation's)."""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Iterable

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]

#: A decimal number as a page writes it (thousands separated, optional exponent).
DECIMAL = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)\.(\d+)(?:e[+-]?\d+)?(?![\w.])")
#: A JSON fragment: a brace, or a quoted key followed by a colon.
JSON_FRAGMENT = re.compile(r"[{}]|\"[A-Za-z_][\w ]*\"\s*:")
#: A raw key of a result dict (snake_case word) that is not a file name or a column of the data.
RAW_KEY = re.compile(r"(?<![\w./-])[a-z]+(?:_[a-z0-9]+)+(?![\w.])")


def significant_digits(integer: str, fraction: str) -> int:
    digits = (integer.replace(",", "") + fraction).lstrip("0")
    return len(digits)


def page_problems(text: str, allowed_words: Iterable[str] = ()) -> list[str]:
    """What is wrong with a page's visible text: JSON fragments, raw keys, over-long numbers."""
    problems = [f"JSON fragment {m.group(0)!r}" for m in JSON_FRAGMENT.finditer(text)]
    allowed = set(allowed_words)
    problems += [f"raw key {m.group(0)!r}" for m in RAW_KEY.finditer(text) if m.group(0) not in allowed]
    problems += [f"number {m.group(0)!r} has more than 4 significant digits" for m in DECIMAL.finditer(text)
                 if significant_digits(m.group(1), m.group(2)) > 4]
    return problems


def check_pages(pages: dict[str, Path], folder: Path, allowed_words: Iterable[str] = (),
                min_plots: dict[str, int] | None = None) -> dict[str, str]:
    """Open every page in one browser, screenshot it into ``folder`` (``<kind>.png``) and check it; returns
    each page's visible text. A failing release must never read as re-appliable as it is."""
    from playwright.sync_api import sync_playwright

    folder.mkdir(parents=True, exist_ok=True)
    texts = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            for kind, path in pages.items():
                page.goto(Path(path).resolve().as_uri())
                shot = folder / f"{kind}.png"
                page.screenshot(path=str(shot), full_page=True)
                headings = page.eval_on_selector_all("h2", "hs => hs.map(h => h.textContent)")
                assert headings and headings[0] == "Verdict", (kind, headings[:3])
                verdicts = page.eval_on_selector_all("div.verdict", "vs => vs.map(v => v.className)")
                assert verdicts, kind
                first_verdict = page.evaluate("document.querySelector('div.verdict').textContent")
                judged = "neutral" not in verdicts[0]                 # a step not judged on its own says so
                assert ("meet" in first_verdict) if judged else ("not judged" in first_verdict), (kind, first_verdict)
                images = page.eval_on_selector_all("img", "is => is.map(i => [i.complete, i.naturalWidth])")
                assert all(done and width > 0 for done, width in images), (kind, images)
                assert len(images) >= (min_plots or {}).get(kind, 0), (kind, len(images))
                text = page.inner_text("body")
                problems = page_problems(text, allowed_words)
                assert not problems, (kind, problems[:5])
                if "verdict fail" in " ".join(verdicts[:1]):
                    assert "can be released the same way" not in text, kind
                texts[kind] = text
                target = os.environ.get("DEID_PAGE_SCREENSHOTS")
                if target:  # 64 colours: a page's few colours survive, the file is a third of the size
                    from PIL import Image
                    Path(target).mkdir(parents=True, exist_ok=True)
                    Image.open(shot).convert("RGB").quantize(colors=64).save(Path(target) / shot.name, optimize=True)
        finally:
            browser.close()
    return texts
