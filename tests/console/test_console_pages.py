"""The console's pages as HTTP resources of a real ``xflow serve`` (no browser): on by default
under ``/ui``, off with ``--no-console``; the pages are shells without data, locked down by
their Content-Security-Policy; only the package's own files are served. specs/console.md §1, §4."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import httpx
import pytest
import yaml

from tests.service.support import ServiceProcess, assert_problem, bearer, jwt_token

HERE = Path(__file__).parent
PAGES = ["/ui/login", "/ui/workflows", "/ui/workflows/waiter", "/ui/instances", "/ui/instances/x-1", "/ui/tasks",
         "/ui/memory"]


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServiceProcess, ServiceProcess]]:
    base = tmp_path_factory.mktemp("pages")
    on = ServiceProcess(HERE / "workflows", f"sqlite:///{base / 'on' / 'x.sqlite'}").start()
    try:
        off = ServiceProcess(HERE / "workflows", f"sqlite:///{base / 'off' / 'x.sqlite'}", extra=["--no-console"]).start()
        try:
            yield on, off
        finally:
            off.stop()
    finally:
        on.stop()


def test_the_console_is_on_by_default_and_off_with_no_console(servers) -> None:
    on, off = servers
    with httpx.Client(base_url=on.url, timeout=30) as client:
        home = client.get("/ui", follow_redirects=False)
        assert home.status_code == 303 and home.headers["location"] == "/ui/workflows"
        for path in PAGES:
            page = client.get(path)
            assert page.status_code == 200 and page.headers["content-type"].startswith("text/html"), path
    with httpx.Client(base_url=off.url, timeout=30) as client:
        for path in ["/ui", *PAGES, "/ui/static/console.js"]:
            assert_problem(client.get(path), 404)
        assert client.get("/readyz").status_code == 200


def test_pages_are_shells_under_a_strict_content_security_policy(servers) -> None:
    on, _ = servers
    with httpx.Client(base_url=on.url, timeout=30) as client:
        for path in PAGES:
            page = client.get(path)  # no credential: a page holds no data, the API calls do
            policy = page.headers["content-security-policy"]
            assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy
            assert page.headers["x-content-type-options"] == "nosniff"
            assert "<script>" not in page.text and "https://" not in page.text and "http://" not in page.text
        shown = client.get('/ui/workflows/%3Cimg%20src=x%20onerror=alert(1)%3E%22').text
        assert "<img" not in shown and 'data-subject="&lt;img src=x onerror=alert(1)&gt;&#34;"' in shown  # escaped


def test_only_the_packages_own_files_are_served(servers) -> None:
    on, _ = servers
    static = Path(__file__).resolve().parents[2] / "xflow_runtime" / "service" / "console" / "static"
    with httpx.Client(base_url=on.url, timeout=30) as client:
        for file in static.iterdir():
            served = client.get(f"/ui/static/{file.name}")
            assert served.status_code == 200 and served.content == file.read_bytes(), file.name
        script = client.get("/ui/static/console.js")
        assert script.headers["content-type"].startswith("text/javascript")
        for name in ["..%2F__init__.py", "%2E%2E%2Fconsole%2F__init__.py", "__init__.py", ".hidden.js", "nope.js",
                     "..%2Ftemplates%2Fbase.html"]:
            assert client.get(f"/ui/static/{name}").status_code == 404, name
        assert "/ui" not in " ".join(client.get("/openapi.json").json()["paths"])


def test_the_graph_and_me_endpoints_answer_what_the_console_draws(servers) -> None:
    on, _ = servers
    ann = bearer(jwt_token("a", "ann", groups=["managers", 7]))
    with httpx.Client(base_url=on.url, timeout=60) as client:
        assert client.get("/v1/me", headers=ann).json() == {"tenant": "a", "user": "ann", "role": "user",
                                                              "groups": ["managers"]}
        assert_problem(client.get("/v1/me"), 401)
        assert_problem(client.get("/v1/workflows/showcase/graph"), 401)
        assert_problem(client.get("/v1/workflows/nothing/graph", headers=ann), 404)
        graph = client.get("/v1/workflows/showcase/graph", headers=ann).json()
    source = (HERE / "workflows" / "showcase.yaml").read_text()
    assert graph["source"] == source and graph["id"] == "showcase" and graph["start"] == "classify"
    assert [n["id"] for n in graph["nodes"]] == [s["name"] for s in yaml.safe_load(source)["states"]]
    assert [(w["code"], w["line"]) for w in graph["warnings"]] == [
        ("XF119", next(i for i, line in enumerate(source.split("\n"), 1) if "name: limbo" in line))]
    boxes = {(n["x"], n["y"]) for n in graph["nodes"]}
    assert len(boxes) == len(graph["nodes"])
    assert all(0 <= n["x"] and n["x"] + graph["node_width"] <= graph["width"] for n in graph["nodes"])
