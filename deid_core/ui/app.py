"""The workbench's web application (Starlette): the page, its JSON actions, downloads, and the guard that
keeps it local (loopback Host header, optional token for ``--allow-remote``, same-origin posts, upload cap)."""
from __future__ import annotations

import re
import secrets
import sys
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path
from typing import Any, Awaitable, Callable
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from common.cli import UsageError
from ..errors import DeidInputError
from . import views, workflow
from .workspace import Workspace, Workspaces, busy

PACKAGE = resources.files(__package__)
#: Default cap on one uploaded file (``deid ui --max-upload-mb``).
DEFAULT_MAX_UPLOAD_MB = 256
TOKEN_COOKIE = "deid_ui_token"
UPLOAD_NAME = re.compile(r"[^A-Za-z0-9._-]+")
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


class Guard:
    """ASGI middleware: the Host header must name this server (no DNS rebinding); with a token every request
    carries it (cookie, or ``?token=`` on the first page); a POST must come from the page's own origin."""

    def __init__(self, app: Any, hosts: set[str] | None, token: str | None) -> None:
        self.app, self.hosts, self.token = app, hosts, token

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        host = headers.get("host", "")
        refusal = None
        if self.hosts is not None and host not in self.hosts:
            refusal = f"host {host!r} is not this workbench's address"
        elif self.token is not None and not self._has_token(scope, headers):
            refusal = "this workbench needs its token: open the address deid ui printed"
        elif scope["method"] == "POST" and headers.get("origin") not in (None, f"http://{host}"):
            refusal = "posts come only from the workbench's own page"
        if refusal:
            return await PlainTextResponse(refusal, status_code=403)(scope, receive, send)
        return await self.app(scope, receive, send)

    def _has_token(self, scope: dict, headers: dict[str, str]) -> bool:
        cookies = dict(part.strip().split("=", 1) for part in headers.get("cookie", "").split(";") if "=" in part)
        query = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token", [""])[0]
        return any(secrets.compare_digest(given.encode(), self.token.encode())
                   for given in (cookies.get(TOKEN_COOKIE, ""), query) if given)


def _json(sections: dict[str, str] | None = None, error: str | None = None, poll: bool = False,
          status: int = 200) -> JSONResponse:
    return JSONResponse({"sections": sections or {}, "error": error, "poll": poll}, status_code=status)


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split())


Handler = Callable[[Request, Workspace], Awaitable[Response]]


def action(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    """A page action: bad input becomes one line shown on the page (status 400), never a traceback; any
    other failure one line too (and one on the server's stderr)."""
    async def endpoint(request: Request) -> Response:
        try:
            ws = request.app.state.workspaces.get(request.headers.get("x-workspace"))
            return await handler(request, ws)
        except (DeidInputError, UsageError) as error:
            return _json(error=_one_line(error), status=400)
        except (OSError, UnicodeDecodeError) as error:
            return _json(error=f"cannot read the file: {_one_line(getattr(error, 'strerror', None) or error)}",
                         status=400)
        except MemoryError:
            return _json(error="out of memory: try a smaller table", status=400)
        except Exception as error:  # noqa: BLE001 - the page gets one line, never a traceback
            print(f"deid ui: {request.url.path}: {type(error).__name__}: {_one_line(error)}", file=sys.stderr)
            return _json(error=f"the workbench failed on this step ({type(error).__name__}); see the terminal",
                         status=500)
    return endpoint


async def receive_file(request: Request, ws: Workspace, folder: str) -> tuple[Path, str, dict[str, str]]:
    """The one file of a multipart post, streamed into the workspace's ``folder`` under the upload cap; other
    fields. The file is stored by its base name (path parts and other characters dropped), as a new file: one
    already there, a symlink included, is replaced, never written through."""
    cap = request.app.state.max_upload
    length = request.headers.get("content-length")
    if length is None or not length.isdigit():
        raise DeidInputError("upload refused: the browser did not say how large the file is")
    if int(length) > cap + 65_536:
        raise DeidInputError(f"the file is larger than the upload limit of {cap // 2**20:,} MB")
    form = await request.form(max_files=1, max_fields=8)
    try:
        upload = form.get("file")
        if not isinstance(upload, UploadFile) or not upload.filename:
            raise DeidInputError("no file chosen")
        name = UPLOAD_NAME.sub("_", Path(upload.filename).name).strip("._") or "upload"
        target = ws.path(folder)
        target.mkdir(exist_ok=True)
        path, size = target / name, 0
        path.unlink(missing_ok=True)
        with open(path, "xb") as out:
            while chunk := await upload.read(1 << 20):
                size += len(chunk)
                if size > cap:
                    raise DeidInputError(f"the file is larger than the upload limit of {cap // 2**20:,} MB")
                out.write(chunk)
        if size == 0:
            raise DeidInputError(f"{upload.filename!r} is empty")
        fields = {k: v for k, v in form.multi_items() if isinstance(v, str)}
        return path, Path(upload.filename).name, fields
    finally:
        await form.close()


def _declare(ws: Workspace) -> str:
    text, error = workflow.spec_status(ws) if ws.form is not None else ("", None)
    return views.declare_view(ws, text, error)


def _after_spec(ws: Workspace) -> dict[str, str]:
    return {"declare-body": _declare(ws), "assess-body": "", "candidates-body": views.candidates_view(ws, _plot(ws)),
            "progress-body": views.progress_view(ws.job), "node-body": views.node_view(ws)}


def _plot(ws: Workspace) -> str:
    job = ws.job
    if job is None or not job.finished or job.result is None:
        return ""
    if not hasattr(job, "plot"):
        job.plot = workflow.risk_loss_plot(job.result)
    return job.plot


async def load(request: Request, ws: Workspace) -> Response:
    path, name, _ = await receive_file(request, ws, "input")

    def run() -> None:
        with busy(ws):
            try:
                workflow.load_table(ws, path, name)
            except DeidInputError as error:
                raise DeidInputError(str(error).replace(str(path), name)) from None
            except (ValueError, UnicodeDecodeError, OSError) as error:
                raise DeidInputError(f"cannot read {name!r} as a CSV or Parquet table: "
                                     f"{_one_line(error).replace(str(path), name)[:200]}") from None
    await run_in_threadpool(run)
    return _json({"load-body": views.load_view(ws), **_after_spec(ws)})


async def population(request: Request, ws: Workspace) -> Response:
    path, name, _ = await receive_file(request, ws, "population")
    ws.population_path, ws.population_name, ws.assessment = path, name, None
    return _json({"population-body": f"Population table: <strong>{views.esc(name)}</strong>", "assess-body": ""})


async def _spec_step(ws: Workspace, change: Callable[[], None]) -> Response:
    """Change the form (in a worker thread, one change of a tab at a time), answer with the sections it affects."""
    def run() -> dict[str, str]:
        with busy(ws):
            change()
            return _after_spec(ws)
    return _json(await run_in_threadpool(run))


async def spec_form(request: Request, ws: Workspace) -> Response:
    fields = {k: v for k, v in (await request.form(max_fields=5000)).multi_items() if isinstance(v, str)}
    return await _spec_step(ws, lambda: workflow.update_form(ws, fields))


async def hierarchy(request: Request, ws: Workspace) -> Response:
    path, name, fields = await receive_file(request, ws, "hierarchies")
    return await _spec_step(ws, lambda: workflow.upload_hierarchy(ws, fields.get("column", ""), path, name))


async def spec_file(request: Request, ws: Workspace) -> Response:
    path, _, _ = await receive_file(request, ws, "specs")
    return await _spec_step(ws, lambda: workflow.upload_spec(ws, path))


async def assess_action(request: Request, ws: Workspace) -> Response:
    def run() -> str:
        with busy(ws):
            return views.assess_view(workflow.assess_table(ws))
    return _json({"assess-body": await run_in_threadpool(run)})


async def search(request: Request, ws: Workspace) -> Response:
    fields = {k: v for k, v in (await request.form(max_fields=50)).multi_items() if isinstance(v, str)}

    def run() -> None:
        with busy(ws):
            workflow.start_search(ws, fields)
    await run_in_threadpool(run)
    return _json({"progress-body": views.progress_view(ws.job), "candidates-body": "", "node-body": views.node_view(ws)},
                 poll=True)


async def progress(request: Request, ws: Workspace) -> Response:
    job = ws.job
    if job is None:
        return _json({"progress-body": ""})
    if not job.finished:
        return _json({"progress-body": views.progress_view(job)}, poll=True)
    plot = await run_in_threadpool(_plot, ws)
    return _json({"progress-body": views.progress_view(job), "candidates-body": views.candidates_view(ws, plot)})


async def node(request: Request, ws: Workspace) -> Response:
    fields = await request.form(max_fields=50)
    text = str(fields.get("node", ""))
    if not text.isdigit():
        raise DeidInputError("no candidate chosen")

    def run() -> dict[str, str]:
        with busy(ws):
            workflow.pick_node(ws, int(text))
            return {"node-body": views.node_view(ws), "candidates-body": views.candidates_view(ws, _plot(ws))}
    return _json(await run_in_threadpool(run))


async def download(request: Request) -> Response:
    try:
        ws = request.app.state.workspaces.get(request.query_params.get("ws"))
        path = workflow.export_path(ws, request.path_params["name"])
    except DeidInputError as error:
        return PlainTextResponse(_one_line(error), status_code=400)
    media = {"csv": "text/csv", "json": "application/json", "html": "text/html", "toml": "application/toml"}
    return FileResponse(path, media_type=media[path.suffix.lstrip(".")], filename=path.name)


async def index(request: Request) -> Response:
    page = (PACKAGE / "templates" / "index.html").read_text(encoding="utf-8")
    page = page.replace("{{max_upload}}", str(request.app.state.max_upload))
    page = page.replace("{{max_upload_mb}}", f"{request.app.state.max_upload // 2**20:,}")
    response = HTMLResponse(page, headers={"Cache-Control": "no-store"})
    token = request.query_params.get("token")
    if request.app.state.token and token:
        response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="strict")
    return response


def create_app(*, host: str = "127.0.0.1", port: int = 8000, token: str | None = None,
               max_upload_mb: int = DEFAULT_MAX_UPLOAD_MB, allow_remote: bool = False) -> Guard:
    """The workbench as an ASGI application over the library's calls (:mod:`deid_core.ui.workflow`). Without
    ``allow_remote`` only requests whose Host header names this loopback address are served; with it every
    request needs ``token``."""
    workspaces = Workspaces()

    @asynccontextmanager
    async def lifespan(_app: Starlette):
        try:
            yield
        finally:
            workspaces.close()

    app = Starlette(routes=[
        Route("/", index),
        Route("/api/load", action(load), methods=["POST"]),
        Route("/api/population", action(population), methods=["POST"]),
        Route("/api/spec", action(spec_form), methods=["POST"]),
        Route("/api/hierarchy", action(hierarchy), methods=["POST"]),
        Route("/api/spec-file", action(spec_file), methods=["POST"]),
        Route("/api/assess", action(assess_action), methods=["POST"]),
        Route("/api/search", action(search), methods=["POST"]),
        Route("/api/progress", action(progress), methods=["GET", "POST"]),
        Route("/api/node", action(node), methods=["POST"]),
        Route("/download/{name}", download),
        Mount("/static", StaticFiles(directory=str(PACKAGE / "static")), name="static"),
    ], lifespan=lifespan)
    app.state.workspaces, app.state.max_upload = workspaces, max_upload_mb * 2**20
    app.state.token = token
    hosts = None if allow_remote else {f"{name}:{port}" for name in LOOPBACK_NAMES} | {f"{host}:{port}"}
    guard = Guard(app, hosts, token)
    guard.workspaces = workspaces
    return guard
