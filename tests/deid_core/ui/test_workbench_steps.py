"""The workbench's steps without a browser: progress reported by the search, another OLA node picked and
released (re-assessed, its policy re-appliable), workspaces kept apart and removed, and no file read or
written on the server but the uploads (a spec naming a file, a crafted upload name, a symlink)."""
from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import pandas as pd
import pytest

from deid_core.algorithm.result import progress_sink
from deid_core.errors import DeidInputError
from deid_core.io import read_table
from deid_core.transform.policy import Policy
from deid_core.ui import views
from deid_core.ui.app import create_app
from deid_core.ui.workflow import (export_path, load_table, pick_node, spec_status, start_search, update_form,
                                   upload_hierarchy, upload_spec)
from deid_core.ui.workspace import Workspaces

QIS = ["sex", "age", "race", "marital-status", "education", "native-country", "workclass", "occupation"]


def adult() -> Path:
    for candidate in (Path(__file__).resolve().parents[4] / "shared", Path("/work/shared")):
        if (candidate / "data" / "adult").is_dir():
            return candidate / "data" / "adult"
    pytest.skip("the Adult data set (shared/data/adult) is absent")


@pytest.fixture
def workspaces():
    spaces = Workspaces()
    yield spaces
    spaces.close()
    assert not spaces.root.exists()


def declared(workspaces, folder: Path, name: str = "a" * 32):
    ws = workspaces.get(name)
    load_table(ws, folder / "adult.csv", "adult.csv")
    update_form(ws, {**{f"role:{q}": "quasi" for q in QIS}, "role:salary-class": "sensitive"})
    for q in QIS:
        upload_hierarchy(ws, q, folder / f"adult_hierarchy_{q}.csv", f"adult_hierarchy_{q}.csv")
    return ws


def finished(ws):
    deadline = time.monotonic() + 60
    while not ws.job.finished:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert ws.job.error is None, ws.job.error
    return ws.job


def test_search_reports_progress_and_another_node_can_be_released(workspaces):
    folder = adult()
    ws = declared(workspaces, folder)
    start_search(ws, {"method": "ola", "criterion": "k", "value": "5", "top": "5"})
    job = finished(ws)
    assert job.total == 2 * 5 * 2 * 3 * 4 * 3 * 3 * 3 and 0 < job.done <= job.total  # nodes of Adult's lattice
    assert progress_sink.get() is None  # set in the search's own thread only
    second = job.result["policies"][1]
    node = pick_node(ws, 1)
    assert node["report"]["steps"]["5_evidence"]["risk_after"]["k_min"] >= 5
    policy = Policy.load(ws.path("policy.json"))
    levels = {s["column"]: s["level"] for s in policy.steps if s["op"] == "generalize"}
    assert levels == {q: lvl for q, lvl in second["levels"].items() if lvl}
    again, _ = policy.apply(read_table(folder / "adult.csv"))
    assert again.to_csv(index=False) == read_table(ws.path("release.csv")).to_csv(index=False)


def test_workspaces_are_apart_and_capped():
    spaces = Workspaces(limit=2, idle_seconds=0)
    try:
        a, b = spaces.get("a" * 32), spaces.get("b" * 32)
        assert a is not b and a.folder != b.folder and spaces.get("a" * 32) is a
        spaces.get("c" * 32)
        assert len(spaces) == 2 and not b.folder.exists()  # the least recently used idle one went, with its files
        with pytest.raises(ValueError, match="workspace id"):
            spaces.get("../etc")
    finally:
        spaces.close()


def test_new_tabs_never_push_out_a_tab_in_use():
    """Sixteen new workspace ids used to evict an open tab's table (the least recently used went, idle or
    not).  Now only a workspace idle for ``idle_seconds`` makes room; past the cap a new tab is refused."""
    spaces = Workspaces(limit=16, idle_seconds=60)
    try:
        tab = spaces.get("a" * 32)
        tab.table = pd.DataFrame({"zip": ["02139"]})
        made = [spaces.get(f"{i:032x}") for i in range(1, 16)]             # another client's tabs
        with pytest.raises(DeidInputError, match="16 tabs in use"):
            spaces.get("f" * 32)
        assert spaces.get("a" * 32) is tab and tab.table is not None and tab.folder.exists()
        for ws in made:                                                     # those tabs left an hour ago
            ws.used -= 3600
        assert spaces.get("f" * 32) is not tab and spaces.get("a" * 32) is tab and len(spaces) == 16
    finally:
        spaces.close()


# ---------------------------------------------------------------- the workbench reads only what is uploaded

#: A private key and a bearer token on the server, outside any workspace: never to be shown.
SECRET = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC-s3cr3t-token\n-----END PRIVATE KEY-----\n"
MARKER = "s3cr3t-token"
REFUSED = "may not name files"
SMALL_TABLE = "sex,age\n" + "F,34\nM,51\n" * 6


def secret_file(tmp_path: Path) -> Path:
    path = tmp_path / "secret" / "key.pem"
    path.parent.mkdir()
    path.write_text(SECRET)
    return path


def attack_paths(secret: Path, specs: Path) -> dict[str, str]:
    """Ways a spec uploaded into ``specs`` could name ``secret``: absolute, ``../``, URL-encoded, a symlink
    inside the uploads pointing outside."""
    specs.mkdir(exist_ok=True)
    (specs / "link.csv").symlink_to(secret)
    relative = os.path.relpath(secret, specs)
    return {"absolute": str(secret), "relative": relative, "dot-relative": "./" + relative,
            "url-encoded": relative.replace("../", "%2e%2e%2f"), "url-encoded-upper": relative.replace("/", "%2F"),
            "symlink": "link.csv", "file-url": f"file://{secret}"}


def attack_spec(path: str) -> str:
    return f'[columns]\nsex = "quasi"\nage = "other"\n[hierarchies]\nsex = {{ csv = {json.dumps(path)} }}\n'


def test_a_spec_naming_a_file_is_refused_and_nothing_outside_the_uploads_is_read(workspaces, tmp_path):
    secret = secret_file(tmp_path)
    (tmp_path / "table.csv").write_text(SMALL_TABLE)
    ws = workspaces.get("d" * 32)
    load_table(ws, tmp_path / "table.csv", "table.csv")
    for label, path in attack_paths(secret, ws.path("specs")).items():
        for spec in (attack_spec(path), attack_spec(path).replace("{ csv =", '{ rows = [["F", "*"]], csv =')):
            (ws.path("specs") / "spec.toml").write_text(spec)
            with pytest.raises(DeidInputError, match=REFUSED) as refused:
                upload_spec(ws, ws.path("specs") / "spec.toml")
            assert "\n" not in str(refused.value) and MARKER not in str(refused.value), label
            text, error = spec_status(ws)  # the form is the one before: the page and the download show it
            page = views.declare_view(ws, text, error)
            download = export_path(ws, "spec.toml").read_text()
            assert MARKER not in page + text + download and "[hierarchies]" not in download, label
    assert secret.read_text() == SECRET


class Page:
    """The workbench's ASGI application called in process (no network, no browser): a post or a download
    as the page makes it, answering (status, body text)."""

    HOST = [(b"host", b"127.0.0.1:8000")]

    def __init__(self, workspace: str = "e" * 32) -> None:
        self.app = create_app()
        self.workspace = workspace
        self.bodies: list[str] = []

    def ws(self):
        return self.app.workspaces.get(self.workspace)

    def call(self, method: str, path: str, body: bytes = b"", headers: list | None = None,
             query: str = "") -> tuple[int, str]:
        sent, pending = [], [body]

        async def receive() -> dict:
            if pending:
                return {"type": "http.request", "body": pending.pop(), "more_body": False}
            await asyncio.Event().wait()  # no disconnect until the response is sent

        async def send(message: dict) -> None:
            sent.append(message)

        headers = self.HOST + [(b"x-workspace", self.workspace.encode()),
                               (b"content-length", str(len(body)).encode())] + (headers or [])
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
                 "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": query.encode(),
                 "root_path": "", "headers": headers, "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 8000)}
        asyncio.run(self.app(scope, receive, send))
        status = next(m["status"] for m in sent if m["type"] == "http.response.start")
        text = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body").decode()
        self.bodies.append(text)
        return status, text

    def upload(self, action: str, disposition: str, content: bytes, **fields: str) -> tuple[int, dict]:
        """A multipart post of one file; ``disposition`` is the file part's ``filename=`` parameter as sent."""
        boundary = "deid-test-boundary"
        parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode()
                 for k, v in fields.items()]
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="file"; {disposition}\r\n'
                     f"Content-Type: application/octet-stream\r\n\r\n".encode() + content + b"\r\n")
        body = b"".join(parts) + f"--{boundary}--\r\n".encode()
        status, text = self.call("POST", f"/api/{action}", body,
                                 [(b"content-type", f"multipart/form-data; boundary={boundary}".encode())])
        return status, json.loads(text)

    def close(self) -> None:
        self.app.workspaces.close()


def test_the_workbench_reads_and_writes_no_file_outside_its_uploads(tmp_path):
    secret = secret_file(tmp_path)
    page = Page()
    try:
        relative = os.path.relpath(secret, page.ws().path("input"))
        for name in (f'filename="{relative}"', f'filename="{secret}"',
                     f'filename="{relative.replace("../", "%2e%2e%2f")}"',
                     f"filename*=UTF-8''{relative.replace('/', '%2F')}",
                     f'filename="{relative.replace("/", chr(92))}"'):
            status, answer = page.upload("load", name, SMALL_TABLE.encode())
            assert (status, answer["error"]) == (200, None) or status == 400 and answer["error"], (name, answer)
            assert secret.read_text() == SECRET, name  # stored inside the workspace, whatever the name says
        assert all(p.parent == page.ws().path("input") for p in page.ws().path("input").iterdir())
        for label, path in attack_paths(secret, page.ws().path("specs")).items():
            status, answer = page.upload("spec-file", 'filename="spec.toml"', attack_spec(path).encode())
            assert status == 400 and REFUSED in answer["error"], (label, answer)
        # an upload whose name is a symlink already in the uploads: replaced, never written through
        page.ws().path("hierarchies").mkdir()
        (page.ws().path("hierarchies") / "sex.csv").symlink_to(secret)
        status, answer = page.upload("hierarchy", 'filename="sex.csv"', b"F;*\nM;*\n", column="sex")
        assert status == 200 and answer["error"] is None, answer
        assert secret.read_text() == SECRET and not (page.ws().path("hierarchies") / "sex.csv").is_symlink()
        page.call("POST", "/api/spec", b"role%3Asex=quasi&role%3Aage=other",
                  [(b"content-type", b"application/x-www-form-urlencoded")])
        # a search field cannot smuggle in another file (the options are parsed by deid search's parser)
        status, text = page.call("POST", "/api/search", f"method=ola&criterion=k&value=--population%3D{secret}".encode(),
                                 [(b"content-type", b"application/x-www-form-urlencoded")])
        assert status == 400 and json.loads(text)["error"], text
        status, text = page.call("GET", "/download/spec.toml", query=f"ws={page.workspace}")
        assert status == 200 and 'sex = "quasi"' in text, text
        for name in ("..%2f..%2fsecret%2fkey.pem", f"..%2F{secret.name}"):
            status, _ = page.call("GET", f"/download/{name}", query=f"ws={page.workspace}")
            assert status in (400, 404), name
        assert all(MARKER not in body and "PRIVATE KEY" not in body for body in page.bodies)
        assert secret.read_text() == SECRET
    finally:
        page.close()
