"""The web console in a real browser (headless chromium via Playwright) against a real
``xflow serve`` with the scripted model server: each page does its job through the public API,
passes axe-core without serious or critical violations, and is saved as a screenshot under
``test-output/console/``. The last test checks every request the pages made against the OpenAPI
document. specs/console.md §5."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest
import yaml

from tests.console.support import OUTPUT, ROOT, axe_source, axe_violations, operation_of, template_matcher
from tests.service.support import bearer, jwt_token

pytestmark = pytest.mark.slow
TIMEOUT = 60_000  # ms: the machine is shared and may be loaded
REQUESTS: list[tuple[str, str]] = []  # (method, URL) of every request any page made in this module
AXE: dict[str, list[dict[str, Any]]] = {}


class Console:
    """A browser context signed in with one credential; every request it makes is recorded."""

    def __init__(self, browser: Any, base: str, token: str | None) -> None:
        self.base = base
        self.context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
        self.context.set_default_timeout(TIMEOUT)
        self.context.on("request", lambda request: REQUESTS.append((request.method, request.url)))
        if token is not None:
            self.context.add_init_script(f"sessionStorage.setItem('xflow.token', {json.dumps(token)});")
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))

    def open(self, path: str) -> Any:
        self.page.goto(self.base + path)
        self.page.wait_for_selector("#who:not(:empty)")
        return self.page

    def check(self, name: str) -> None:
        """axe-core on the page as it is now, and its screenshot."""
        OUTPUT.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(OUTPUT / f"{name}.png"), full_page=True)
        AXE[name] = axe_violations(self.page, axe_source())
        assert AXE[name] == [], (name, AXE[name])
        assert self.errors == [], self.errors

    def wait_for_url(self, pattern: str) -> None:
        """As Playwright's, but a timeout says what the page showed (a refused call, an error)."""
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        try:
            self.page.wait_for_url(re.compile(pattern))
        except PlaywrightTimeout:
            shown = self.page.evaluate("() => [...document.querySelectorAll('#alert, .error')].map(e => e.textContent)")
            raise AssertionError(f"still at {self.page.url}; the page says {shown}; errors {self.errors}") from None

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def console(browser, console_service) -> Iterator[Any]:
    opened: list[Console] = []

    def make(token: str | None) -> Console:
        opened.append(Console(browser, console_service.url, token))
        return opened[-1]

    yield make
    for item in opened:
        item.close()


@pytest.fixture(scope="module")
def api(console_service) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=console_service.url, timeout=90) as client:
        yield client


def test_sign_in_then_every_state_of_every_workflow_is_on_its_diagram(console, console_keys, console_dir) -> None:
    session = console(None)
    page = session.page
    page.goto(session.base + "/ui/")
    session.wait_for_url(r"/ui/login")
    session.check("login")
    page.fill("#token", "xfk_wrong_credential")
    page.click("button:has-text('Sign in')")
    page.wait_for_selector("#alert:has-text('refused')")
    page.fill("#token", console_keys["operator"])
    page.click("button:has-text('Sign in')")
    session.wait_for_url(r"/ui/workflows$")
    page.wait_for_selector("#workflows tbody tr")
    assert page.inner_text("#who").startswith("(no user) · service")
    session.check("workflows")
    for path in sorted((console_dir / "workflows").glob("*.yaml")):
        states = [s["name"] for s in yaml.safe_load(path.read_text())["states"]]
        workflow_id = yaml.safe_load(path.read_text())["id"]
        page.goto(f"{session.base}/ui/workflows/{workflow_id}")
        page.wait_for_selector("#diagram svg .node")
        drawn = page.eval_on_selector_all("#diagram .node", "nodes => nodes.map(n => n.dataset.state)")
        assert sorted(drawn) == sorted(states), workflow_id
        assert page.locator("#source li").count() == len(path.read_text().rstrip("\n").split("\n"))
        if workflow_id == "showcase":
            assert page.locator("#diagram path.edge.kind-error").count() == 1
            assert page.locator("#diagram path.edge.kind-compensation").count() == 1
            assert page.locator("#diagram path.edge.kind-condition").count() == 1
            line = next(i for i, text in enumerate(path.read_text().split("\n"), 1) if "name: limbo" in text)
            assert "warning XF119" in page.inner_text(f"#line-{line}")  # under its line of the source
            assert page.inner_text("#warning-count").startswith("1 lint warning")
            page.focus("#diagram .node[data-state='classify']")  # the states take keyboard focus
            page.keyboard.press("Tab")
            assert page.evaluate("document.activeElement.dataset.state") == "reserve"
            page.keyboard.press("Enter")  # the chosen state's definition is marked in the source
            line = next(i for i, text in enumerate(path.read_text().split("\n"), 1) if text == "  - name: reserve")
            page.wait_for_selector(f"#line-{line}.chosen")
            session.check("workflow")


def test_an_instance_started_in_the_console_updates_its_timeline_live(console, console_keys, api) -> None:
    session = console(console_keys["operator"])
    page = session.open("/ui/workflows/waiter")
    page.fill("#start-input", '{"who": "console"}')
    page.click("#start-form button")
    session.wait_for_url(r"/ui/instances/[0-9a-f-]+$")
    instance_id = page.url.rsplit("/", 1)[1]
    page.wait_for_selector("#timeline li[data-event='state_entered']")
    page.wait_for_selector("#live:has-text('live')")
    page.wait_for_selector("#diagram .node.current[data-state='wait']")
    assert page.inner_text("#input").strip() == '{\n  "who": "console"\n}'
    navigations = page.evaluate("performance.getEntriesByType('navigation').length")
    # The event goes in from outside the page: the timeline must learn of it from the stream.
    sent = api.post("/v1/events", headers={**bearer(console_keys["operator"]),
                                          "Content-Type": "application/cloudevents+json"},
                    json={"specversion": "1.0", "id": "go-1", "type": "console.go", "source": "/console",
                          "data": {"go": {"ok": True}}})
    assert sent.status_code == 200 and sent.json()["delivered_to"] >= 1, sent.text
    page.wait_for_selector("#timeline li[data-event='workflow_completed']")
    page.wait_for_selector("#instance-status:has-text('completed')")
    assert page.evaluate("performance.getEntriesByType('navigation').length") == navigations
    events = page.eval_on_selector_all("#timeline li", "items => items.map(i => i.dataset.event)")
    assert events.index("event_consumed") < events.index("workflow_completed")
    assert json.loads(page.inner_text("#output")) == {"who": "console", "go": {"go": {"ok": True}}, "finished": True}
    assert page.locator("#diagram .node.visited[data-state='done']").count() == 1
    assert api.get(f"/v1/instances/{instance_id}", headers=bearer(console_keys["operator"])).json()["status"] == "completed"
    session.check("instance")
    page.goto(f"{session.base}/ui/instances?workflow=waiter")
    page.wait_for_selector(f"#instances a:has-text('{instance_id}')")
    session.check("instances")


def test_the_instance_list_pages_and_an_operator_cancels_and_resumes(console, console_keys, api) -> None:
    operator = bearer(console_keys["operator"])
    for n in range(6):
        assert api.post("/v1/workflows/waiter/instances", json={"n": n}, headers=operator).status_code == 201
    session = console(console_keys["operator"])
    page = session.open("/ui/instances?workflow=waiter&status=running&limit=5")
    page.wait_for_selector("#instances tbody tr")
    first = page.eval_on_selector_all("#instances tbody th a", "links => links.map(a => a.textContent)")
    assert len(first) == 5 and page.is_enabled("#next-page")
    page.click("#next-page")
    page.wait_for_function("ids => ![...document.querySelectorAll('#instances tbody th a')].some(a => ids.includes(a.textContent))",
                           arg=first)
    second = page.eval_on_selector_all("#instances tbody th a", "links => links.map(a => a.textContent)")
    assert second and not set(second) & set(first)
    page.click(f"#instances a:has-text('{second[0]}')")
    page.wait_for_selector("#cancel:not([hidden])")
    assert page.is_hidden("#resume")
    page.click("#cancel")
    page.wait_for_selector("#instance-status:has-text('cancelled')")
    page.wait_for_selector("#resume:not([hidden])")
    page.click("#resume")
    page.wait_for_selector("#instance-status:has-text('running')")
    assert api.get(f"/v1/instances/{second[0]}", headers=operator).json()["status"] == "running"


def test_a_chat_reply_streams_in_and_the_memory_window_shows_the_turn(console, console_keys, api) -> None:
    started = api.post("/v1/workflows/chat/instances", json={"message": "hello"},
                       headers={**bearer(console_keys["ann"]), "Prefer": "wait=60"})
    assert started.status_code == 201 and started.json()["status"] == "waiting", started.text
    session = console(console_keys["ann"])
    page = session.open(f"/ui/instances/{started.json()['id']}")
    page.wait_for_selector("#chat:not([hidden])")
    page.wait_for_selector("#conversation li.assistant")  # the first reply, from the history
    page.fill("#chat-text", "what can the console do?")
    page.click("#chat-form button")
    bubble = page.locator("#conversation li.assistant").last
    page.wait_for_function("() => !document.querySelector('#conversation li.assistant:last-child').classList.contains('streaming')")
    assert "streams this reply token by token" in bubble.inner_text()
    assert int(bubble.get_attribute("data-deltas") or 0) >= 2  # it arrived in pieces, as the model sent them
    page.wait_for_selector("#memory-window li:has-text('what can the console do?')")
    # the messages the model was given this turn are marked: the first turn's, not this one's own
    page.wait_for_selector("#memory-window li[data-in-window='true']:has-text('hello')")
    assert page.get_attribute("#memory-window li:has-text('what can the console do?')", "data-in-window") == "false"
    assert page.inner_text("#window-settings") == "Window of agent host: the newest 20 messages; history kept per user"
    llm = page.locator("#timeline li[data-event='llm_call']").last.inner_text()
    assert re.search(r"LLM call to \S+: \d+ tokens in, \d+ out.* \d+ ms", llm), llm
    session.check("chat")
    page.goto(f"{session.base}/ui/memory")  # an end user sees their own memory only: no user to pick
    page.wait_for_selector("#chats li:has-text('agent host')")
    assert page.input_value("#user-id") == "ann" and page.get_attribute("#user-id", "readonly") is not None
    session.check("memory-own")


def test_a_task_is_claimed_and_completed_through_its_generated_form(console, api) -> None:
    requester = jwt_token("a", "bo")
    manager = jwt_token("a", "mia", groups=["managers"])
    started = api.post("/v1/workflows/expense-approval/instances", json={"amount": 40, "requester": "bo"},
                       headers=bearer(requester))
    assert started.status_code == 201, started.text
    instance_id = started.json()["id"]
    session = console(manager)
    # The browser's clock runs two hours ahead: the task (due in an hour) is shown overdue.
    session.page.clock.set_fixed_time(datetime.now(timezone.utc) + timedelta(hours=2))
    page = session.open("/ui/tasks")
    task = page.locator(f"li.task:has(a:has-text('{instance_id}'))")
    task.wait_for()
    assert "overdue" in (task.get_attribute("class") or "") and "Overdue" in task.inner_text()
    assert page.locator("#tasks-groups li.task").filter(has_text=instance_id).count() == 1
    task.locator("button:has-text('Claim')").click()
    mine = page.locator(f"#tasks-mine li.task:has(a:has-text('{instance_id}'))")
    mine.wait_for()
    assert mine.get_attribute("data-status") == "claimed"
    mine.locator("button:has-text('Complete')").click()  # nothing chosen: the form's schema requires 'approved'
    error = mine.locator("[data-error-for='/approved']")
    error.wait_for(state="visible")
    assert "required" in error.inner_text()
    assert mine.locator("fieldset input[aria-invalid='true']").count() >= 1
    session.check("tasks")
    mine.locator("label:has-text('Yes')").click()
    mine.locator("label:has-text('Comment')").click()
    page.keyboard.type("fine by me")
    mine.locator("button:has-text('Complete')").click()
    page.wait_for_selector("#status:has-text('completed')")

    def finished() -> dict[str, Any]:
        return api.get(f"/v1/instances/{instance_id}", headers=bearer(requester)).json()

    for _ in range(300):
        if finished()["status"] == "completed":
            break
        page.wait_for_timeout(200)
    assert finished()["output"]["status"] == "approved"


FORM_SCHEMA = {"type": "object", "required": ["amount", "kind"], "properties": {
    "amount": {"type": "integer", "title": "Amount", "description": "in whole euros"},
    "kind": {"enum": ["travel", "meal", 3]}, "when": {"type": "string", "format": "date"},
    "approved": {"type": "boolean"}, "tags": {"type": "array", "items": {"type": "string"}},
    "address": {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "string"}}}}}


def test_a_generated_form_reads_every_kind_of_field_and_places_errors_by_pointer(console, console_keys) -> None:
    session = console(console_keys["operator"])
    page = session.open("/ui/tasks")
    page.evaluate("""schema => { const form = SchemaForm.build(schema, 'probe'); window.probe = form;
        document.querySelector('main').append(Object.assign(document.createElement('form'), {id: 'probe-form'}));
        document.querySelector('#probe-form').append(form.element); }""", FORM_SCHEMA)
    assert page.evaluate("JSON.stringify(probe.read())") == "{}"  # nothing answered: nothing sent
    page.get_by_label("Amount (required)").fill("42")
    page.select_option("#probe-kind", label="3")
    page.fill("#probe-when", "2026-11-26")
    page.click("label[for='probe-approved-no']")
    page.fill("#probe-tags", '["a", "b"]')
    page.fill("#probe-address-city", "Lyon")
    assert page.evaluate("probe.read()") == {"amount": 42, "kind": 3, "when": "2026-11-26", "approved": False,
                                             "tags": ["a", "b"], "address": {"city": "Lyon"}}
    page.evaluate("""() => probe.showErrors([{pointer: '#/data/address/zip', detail: 'too short'},
        {pointer: '#/data', detail: "'kind' is a required property"}, {pointer: '#/data/nowhere/x', detail: 'lost'}])""")
    assert page.inner_text("[data-error-for='/address/zip']") == "too short"
    assert page.inner_text("[data-error-for='/kind']") == "'kind' is a required property"
    assert page.inner_text("[data-error-for='']") == "lost"  # an unknown field's error goes to the nearest parent
    assert page.get_attribute("#probe-address-zip", "aria-invalid") == "true"
    assert page.evaluate("document.activeElement.id") == "probe-address-zip"  # focus on the first field in error


def test_an_operator_erases_a_user_and_sees_the_receipt(console, console_keys, api) -> None:
    started = api.post("/v1/workflows/chat/instances", json={"message": "remember me, I am al"},
                       headers={**bearer(console_keys["al"]), "Prefer": "wait=60"})
    assert started.status_code == 201, started.text
    session = console(console_keys["operator"])
    page = session.open("/ui/memory")
    page.fill("#user-id", "al")
    page.click("#user-form button")
    page.wait_for_selector("#chats li:has-text('agent host')")
    with page.expect_download() as download:
        page.click("#export")
    exported = json.loads(Path(download.value.path()).read_text())
    assert "remember me, I am al" in json.dumps(exported)
    page.fill("#erase-confirm", "al")
    page.click("text=Erase user")
    page.wait_for_selector("#receipt-box:not([hidden])")
    receipt = json.loads(page.inner_text("#receipt"))
    assert receipt["user"] == "al" and receipt["tenant"] == "a" and receipt["stores"]["memory"]["present"]
    assert page.inner_text("#receipt-summary").startswith("Erased al of tenant a")
    page.wait_for_selector("#chats li:has-text('No chats.')")  # the view is read again after the erasure
    session.check("memory")
    chats = api.get("/v1/chats", params={"user": "al"}, headers=bearer(console_keys["operator"])).json()
    assert chats["items"] == []


def test_every_request_the_pages_made_is_in_the_openapi_document(console_service) -> None:
    served = httpx.get(console_service.url + "/openapi.json", timeout=30).json()
    assert served == json.loads((ROOT / "specs" / "service-openapi.json").read_text())
    assert not [p for p in served["paths"] if p.startswith("/ui")]  # the console adds nothing to the API
    matchers = template_matcher(served)
    origin = urlsplit(console_service.url).netloc
    api_calls = []
    for method, url in REQUESTS:
        parts = urlsplit(url)
        assert parts.netloc == origin, url  # nothing from a CDN or anywhere else
        if parts.path.startswith("/ui"):
            continue
        template = operation_of(matchers, method, parts.path)
        assert template, (method, parts.path)
        declared = {p["name"] for p in served["paths"][template][method.lower()].get("parameters", [])
                    if p["in"] == "query"}
        assert {name for name, _ in parse_qsl(parts.query)} <= declared, (method, url, declared)
        api_calls.append(template)
    assert len(set(api_calls)) >= 12, sorted(set(api_calls))  # the pages really used the API
