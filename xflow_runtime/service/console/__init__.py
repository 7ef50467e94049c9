"""The web console under ``/ui`` (specs/console.md): page shells rendered with Jinja2 and a small
hand-written script per page, served from the package (no CDN, no Node at run time).

The pages hold no data: the browser calls the public ``/v1`` API with the credential the person
gave at ``/ui/login`` (kept in ``sessionStorage``), so the console can do nothing the API does not
let that credential do. None of these routes is in the OpenAPI document."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response

from xflow_runtime.service.problems import Problem

HERE = Path(__file__).parent
STATIC = HERE / "static"
_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}
#: Scripts and styles only from the app itself; no inline script, no framing, no referrer.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                               "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; "
                               "form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
PAGES = {"login": "Sign in", "workflows": "Workflows", "workflow": "Workflow", "instances": "Instances",
         "instance": "Instance", "tasks": "Tasks", "memory": "Memory"}

router = APIRouter(prefix="/ui", include_in_schema=False)


@lru_cache(maxsize=1)
def _templates() -> Any:
    import jinja2

    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(HERE / "templates")),
                              autoescape=True, undefined=jinja2.StrictUndefined)


def _page(request: Request, page: str, **context: Any) -> HTMLResponse:
    root = str(request.scope.get("root_path") or "")
    html = _templates().get_template(f"{page}.html").render(
        page=page, title=PAGES[page], api=root, ui=root + "/ui", **context)
    return HTMLResponse(html, headers={**SECURITY_HEADERS, "Cache-Control": "no-store"})


@router.get("")
@router.get("/")
async def home(request: Request) -> Response:
    return RedirectResponse(str(request.scope.get("root_path") or "") + "/ui/workflows", status_code=303)


def _shell(page: str) -> Any:
    async def show(request: Request) -> HTMLResponse:
        return _page(request, page, **({"subject": request.path_params["subject"]} if request.path_params else {}))

    show.__name__ = f"console_{page}"
    return show


#: path → page; ``{subject}`` is the workflow or instance the page shows (the script reads it).
ROUTES = {"/login": "login", "/workflows": "workflows", "/workflows/{subject}": "workflow",
          "/instances": "instances", "/instances/{subject}": "instance", "/tasks": "tasks", "/memory": "memory"}
for _path, _name in ROUTES.items():
    router.add_api_route(_path, _shell(_name), methods=["GET"], response_class=HTMLResponse)


@router.get("/static/{name}")
async def static(name: str) -> FileResponse:
    path = STATIC / name
    if "/" in name or name.startswith(".") or path.suffix not in _TYPES or not path.is_file():
        raise Problem("not-found", f"no console file {name}")
    return FileResponse(path, media_type=_TYPES[path.suffix],
                        headers={"X-Content-Type-Options": "nosniff", "Cache-Control": "no-cache"})
