"""The documentation site builds: ``mkdocs build --strict`` over docs/ (mkdocs-material, the theme the site
is made with), and every page of docs/ is reachable from the site's navigation."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_site_builds_strict_and_every_page_is_in_the_navigation(tmp_path):
    config = (REPO / "mkdocs.yml").read_text()
    listed = set(re.findall(r":\s*([\w./-]+\.md)\s*$", config, flags=re.MULTILINE))
    pages = {p.name for p in (REPO / "docs").glob("*.md")}
    assert pages == listed, f"not in the nav: {sorted(pages - listed)}; in the nav, no file: {sorted(listed - pages)}"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=REPO, capture_output=True, text=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert all((tmp_path / "site" / page.removesuffix(".md") / "index.html").exists()
               for page in pages if page != "index.md")
    assert (tmp_path / "site" / "index.html").exists()


def test_the_readme_stays_short_and_points_into_the_site():
    """The README says what the product is, the two commands, the trust tables and where to go next
    (splink's and Presidio's model); the reference lives on the site."""
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 150
    linked = set(re.findall(r"\]\(docs/([\w./-]+\.md)", readme))
    assert {"first_linkage.md", "linking.md", "trust.md", "deidentify.md", "text.md"} <= linked
