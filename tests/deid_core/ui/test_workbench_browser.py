"""``deid ui`` end to end in a real browser: Debian's chromium driven by Playwright against the real
``deid ui`` process on a free loopback port. Adult is loaded, declared, assessed and searched (OLA, k = 5);
the picked node's release and policy must be byte-identical to ``deid search --method ola --out``
run with the spec downloaded from the page. Screenshots of each step go to the test's tmp folder (and to
``$DEID_UI_SCREENSHOTS`` when set, e.g. ``docs/ui`` to refresh the documentation's)."""
from __future__ import annotations

import http.client
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
ADULT_QIS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation"]
#: ARX's 5-anonymous node on Adult with 0 % suppression (docs/deid_search.md, "Measured")
ARX_NODE = "sex 1, age 2, race 1, marital-status 1, education 3, native-country 2, workclass 2, occupation 1"

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium is absent (apt-get install -y chromium)")


def adult_folder() -> Path:
    """The Adult data with ARX's hierarchies, where the deid tests find it."""
    for candidate in (REPO.parent / "shared", Path("/work/shared")):
        if (candidate / "data" / "adult").is_dir():
            return candidate / "data" / "adult"
    pytest.skip("the Adult data set (shared/data/adult) is absent")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def deid(*args: str, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "deid_core.cli", *args], env=env, capture_output=True, text=True,
                          timeout=120, **kwargs)


class Workbench:
    """A running ``deid ui`` process."""

    def __init__(self, port: int, *extra: str) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}/"
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        self.process = subprocess.Popen([sys.executable, "-m", "deid_core.cli", "ui", "--port", str(port), *extra],
                                        env=env, stderr=subprocess.PIPE, text=True)
        banner = self.process.stderr.readline()            # "deid ui: open http://...?token=... (...)"
        self.token = banner.split("?token=")[1].split()[0] if "?token=" in banner else ""
        self.url = f"http://127.0.0.1:{port}/?token={self.token}"
        deadline = time.monotonic() + 20
        while True:
            try:
                status, _ = self.get("/")
                if status == 200:
                    break
            except OSError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"deid ui did not start: {self.process.stderr.read()}")
            time.sleep(0.1)
        self.banner = ""

    def get(self, path: str, headers: dict | None = None, token: bool = True) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        cookie = {"Cookie": f"deid_ui_token={self.token}"} if token and getattr(self, "token", "") else {}
        conn.request("GET", path, headers={**cookie, **(headers or {})})
        response = conn.getresponse()
        return response.status, response.read()

    def stop(self) -> str:
        self.process.terminate()
        _, err = self.process.communicate(timeout=15)
        return err


@pytest.fixture(scope="module")
def workbench():
    server = Workbench(free_port(), "--max-upload-mb", "64")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()


class Shots:
    """Full-page screenshots into the test's folder (and ``$DEID_UI_SCREENSHOTS`` when set)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.docs = Path(os.environ["DEID_UI_SCREENSHOTS"]) if os.environ.get("DEID_UI_SCREENSHOTS") else None

    def take(self, page, name: str, section: str) -> Path:
        """The step's section of the page, whole (scrolled into view as needed)."""
        path = self.folder / name
        page.locator(section).screenshot(path=str(path))
        assert path.stat().st_size > 10_000
        if self.docs is not None:
            self.docs.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, self.docs / name)
        return path


def change(page, selector: str, value: str, endpoint: str = "/api/spec") -> None:
    """Choose ``value`` in a form select and wait for the page to re-render from the server's answer."""
    with page.expect_response(lambda r: r.url.endswith(endpoint)) as answer:
        page.select_option(selector, value)
    assert answer.value.status == 200, answer.value.text()


def download(page, selector: str, target: Path) -> Path:
    with page.expect_download() as info:
        page.click(selector)
    info.value.save_as(str(target))
    return target


def test_adult_ola_release_matches_cli(workbench, browser, tmp_path):
    adult = adult_folder()
    shots = Shots(tmp_path / "screenshots")
    started = time.monotonic()
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(workbench.url)
    assert page.title() == "deid workbench"

    # 1 load: read as text, detector flags, safe examples
    page.set_input_files("#table-file", str(adult / "adult.csv"))
    page.wait_for_selector("#loaded")
    assert "30,162 records, 9 columns" in page.inner_text("#loaded")
    profile = page.inner_text("table.profile")
    assert "Male (20,380)" in profile  # examples: values held by at least 5 records, with their counts
    shots.take(page, "1-load.png", "#step-load")

    # 2 declare: eight quasi-identifiers with ARX's hierarchies (CSV uploads), salary-class sensitive
    for q in ADULT_QIS:
        change(page, f"select[name='role:{q}']", "quasi")
        change(page, f"select[name='builder:{q}']", "csv")
        with page.expect_response(lambda r: r.url.endswith("/api/hierarchy")) as answer:
            page.set_input_files(f"input[data-column='{q}']", str(adult / f"adult_hierarchy_{q}.csv"))
        assert answer.value.status == 200, answer.value.text()
    change(page, "select[name='role:salary-class']", "sensitive")
    page.wait_for_selector("#spec-ok")
    toml_text = page.inner_text("#spec-toml")
    assert '[columns]' in toml_text and 'salary-class = "sensitive"' in toml_text
    shots.take(page, "2-declare.png", "#step-declare")
    spec = download(page, "#download-spec-toml", tmp_path / "spec.toml")

    # a loaded spec fills the form (another tab: its own workspace)
    other = browser.new_page()
    other.goto(workbench.url)
    other.set_input_files("#table-file", str(adult / "adult.csv"))
    other.wait_for_selector("#loaded")
    with other.expect_response(lambda r: r.url.endswith("/api/spec-file")):
        other.set_input_files("input[aria-label='spec file']", str(spec))
    other.wait_for_selector("#spec-ok")
    assert other.inner_text("#spec-toml") == toml_text
    assert other.locator("select[name='role:occupation']").input_value() == "quasi"
    other.close()

    # 3 assess, then OLA k = 5 with progress, candidates
    page.click("#assess")
    page.wait_for_selector("#assess-body .verdict")
    assert page.get_attribute("#assess-body .verdict", "data-verdict") == "fail"
    assert "30,162" in page.inner_text("#assess-body")
    page.fill("#criterion-value", "5")
    page.click("#run-search")
    page.wait_for_selector("#search-done, #search-error, #step-search .message:not([hidden])", timeout=30_000)
    assert page.locator("#search-done").count() == 1, page.inner_text("#step-search")
    candidates = page.inner_text("table.candidates")
    assert ARX_NODE in candidates
    shots.take(page, "3-search.png", "#step-search")

    # 4 pick the chosen node, export
    page.click("#pick-0")
    page.wait_for_selector("#node-title")
    assert ARX_NODE in page.inner_text("#node-title")
    assert page.get_attribute("#node-body .verdict", "data-verdict") == "pass"
    shots.take(page, "4-release.png", "#step-node")
    release = download(page, "#download-release-csv", tmp_path / "ui_release.csv")
    policy = download(page, "#download-policy-json", tmp_path / "ui_policy.json")
    report = download(page, "#download-report-html", tmp_path / "ui_report.html")
    browser_seconds = time.monotonic() - started
    page.close()

    # the same search from the command line, with the downloaded spec
    cli = deid("search", "--input", str(adult / "adult.csv"), "--spec", str(spec), "--method", "ola", "--k", "5",
               "--report", str(tmp_path / "cli_result.json"), "--out", str(tmp_path / "cli_release.csv"),
               "--policy-out", str(tmp_path / "cli_policy.json"))
    assert cli.returncode == 0, cli.stderr
    assert release.read_bytes() == (tmp_path / "cli_release.csv").read_bytes()
    assert policy.read_bytes() == (tmp_path / "cli_policy.json").read_bytes()
    page_text = report.read_text()
    assert "De-identification report" in page_text and "data:image/png;base64," in page_text
    assert browser_seconds < 60, f"the browser flow took {browser_seconds:.1f} s"


def test_bad_uploads_get_a_message_never_a_traceback(workbench, browser, tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    binary = tmp_path / "image.csv"
    binary.write_bytes(bytes(range(256)) * 64)
    huge = tmp_path / "huge.csv"
    with open(huge, "wb") as fh:  # 2 GB, sparse: nothing is written to disk
        fh.truncate(2 * 2**30)
    header_only = tmp_path / "header.csv"
    header_only.write_text("a,b\n")
    page = browser.new_page()
    page.goto(workbench.url)
    message = page.locator("#step-load .message")
    expected = {empty: "is empty", binary: "cannot read", huge: "larger than the upload limit of 64 MB",
                header_only: "no records"}
    for path, words in expected.items():
        page.set_input_files("#table-file", str(path))
        page.wait_for_function("document.querySelector('#step-load .message').textContent.length > 0")
        text = message.inner_text()
        assert words in text.lower() or words in text, text
        assert "Traceback" not in page.content()
        page.evaluate("document.querySelector('#step-load .message').textContent = ''")
    page.close()
    # the server refuses an oversized body by its declared length, before reading it
    conn = http.client.HTTPConnection("127.0.0.1", workbench.port, timeout=10)
    conn.putrequest("POST", "/api/load")
    conn.putheader("Content-Type", "multipart/form-data; boundary=x")
    conn.putheader("Content-Length", str(2 * 2**30))
    conn.putheader("X-Workspace", "ab" * 16)
    conn.putheader("Cookie", f"deid_ui_token={workbench.token}")
    conn.endheaders()
    response = conn.getresponse()
    assert response.status == 400 and b"larger than the upload limit" in response.read()


def test_two_tabs_keep_their_own_workspace(workbench, browser, tmp_path):
    small = tmp_path / "small.csv"
    small.write_text("zip,sex\n" + "".join(f"0213{i % 3},{'MF'[i % 2]}\n" for i in range(40)))
    adult = adult_folder()
    context = browser.new_context()
    first, second = context.new_page(), context.new_page()
    first.goto(workbench.url)
    second.goto(workbench.url)
    first.set_input_files("#table-file", str(adult / "adult.csv"))
    second.set_input_files("#table-file", str(small))
    first.wait_for_selector("#loaded")
    second.wait_for_selector("#loaded")
    assert "40 records, 2 columns" in second.inner_text("#loaded")
    with first.expect_response(lambda r: r.url.endswith("/api/spec")):
        first.select_option("select[name='role:sex']", "quasi")
    first.click("#assess")
    first.wait_for_selector("#assess-body .verdict")
    assert "30,162" in first.inner_text("#assess-body")
    assert "02130" in second.inner_text("table.profile")
    context.close()


def test_loopback_only_and_host_header_checked(workbench):
    refused = deid("ui", "--host", "0.0.0.0", "--port", str(free_port()))
    assert refused.returncode == 2 and "--allow-remote" in refused.stderr and "Traceback" not in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    status, _ = workbench.get("/", {"Host": f"attacker.example:{workbench.port}"})
    assert status == 403
    status, _ = workbench.get("/", {"Host": f"localhost:{workbench.port}"})
    assert status == 200


def test_a_local_process_without_the_token_can_neither_read_nor_evict_a_tab(workbench):
    """On loopback every request needs the token printed at start: 16 new workspace ids from another local
    process evicted an open tab's table ("load a table first") when loopback had no token."""
    for n in range(17):
        status, body = workbench.get("/api/progress", {"X-Workspace": f"{n:032x}"}, token=False)
        assert status == 403 and b"needs its token" in body
    status, _ = workbench.get("/", token=False)
    assert status == 403
    assert workbench.get("/")[0] == 200


def test_remote_needs_the_token(tmp_path):
    port = free_port()
    server = Workbench.__new__(Workbench)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    server.port = port
    server.process = subprocess.Popen([sys.executable, "-m", "deid_core.cli", "ui", "--host", "127.0.0.1", "--port",
                                       str(port), "--allow-remote"], env=env, stderr=subprocess.PIPE, text=True)
    banner = server.process.stderr.readline()
    token = banner.split("?token=")[1].split()[0]
    folder = Path(banner.split("in ")[-1].split(",")[0])
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                status, _ = server.get("/")
                break
            except OSError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        assert status == 403
        status, _ = server.get(f"/?token={token}")
        assert status == 200
        status, _ = server.get("/?token=wrong")
        assert status == 403
        assert folder.is_dir()
    finally:
        server.stop()
    assert not folder.exists(), "the temp folder outlives the server"
