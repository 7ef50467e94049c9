"""SonataFlow's routes on a real ``xflow serve --sonataflow-routes`` (specs/compat-sonataflow.md
§7): the examples' own integration tests post to ``POST /{workflowId}`` and read
``GET /{workflowId}/{instanceId}``; here with the same inputs and asserted outputs, and a client
that sends no credential (``--auth none``), as a SonataFlow client does."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from tests.compat.corpus import EXAMPLES, needs_corpus
from tests.service.support import ServiceProcess, assert_problem

pytestmark = [pytest.mark.slow, needs_corpus]
FILES = {  # example project → the workflow files (and schema folders) it needs
    "serverless-workflow-greeting-quarkus": ["jsongreet.sw.json", "yamlgreet.sw.yml"],
    "serverless-workflow-expression-quarkus": ["expression.sw.json", "schema"],
    "serverless-workflow-foreach-quarkus": ["foreach.sw.json"],
    "serverless-workflow-parallel-execution": ["parallel.sw.json"],
    "serverless-workflow-hello-world": ["hello.sw.json"],
    "serverless-workflow-error-quarkus": ["errorWithMetadata.sw.json"],
    "serverless-workflow-compensation-quarkus": ["compensation.sw.json"],
}


@pytest.fixture(scope="module")
def workflows_dir(service_dir: Path) -> Path:
    target = service_dir / "sonataflow-examples"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir()
    for project, names in FILES.items():
        for name in names:
            source = EXAMPLES / project / "src" / "main" / "resources" / name
            if source.is_dir():
                shutil.copytree(source, target / name)
            else:
                shutil.copy(source, target / name)
    return target


@pytest.fixture(scope="module")
def service(workflows_dir: Path, db_url: str) -> Iterator[ServiceProcess]:
    Path(db_url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    process = ServiceProcess(workflows_dir, db_url, auth="none", extra=["--sonataflow-routes"]).start()
    yield process
    process.stop()


def post(client: httpx.Client, workflow: str, payload: object) -> dict:
    answer = client.post(f"/{workflow}", json=payload)
    assert answer.status_code == 201, answer.text
    body = answer.json()
    assert set(body) == {"id", "workflowdata"} and answer.headers["location"].endswith(f"/{workflow}/{body['id']}")
    return body


@pytest.mark.parametrize("workflow, flavour", [("jsongreet", "JSON"), ("yamlgreet", "YAML")], ids=["jq", "jsonpath"])
@pytest.mark.parametrize("payload, expected", [
    ({"name": "John", "language": "English"}, "Hello"),
    ({"name": "Javierito", "language": "Spanish"}, "Saludos"),
    ({"name": "John"}, "Hello"),
    ({"name": "Jan", "language": "Czech"}, "Hello"),
], ids=["english", "spanish", "default", "unsupported"])
def test_greeting(client, workflow, flavour, payload, expected) -> None:
    greeting = post(client, workflow, payload)["workflowdata"]["greeting"]
    assert greeting.startswith(expected) and flavour in greeting


def test_expression_foreach_parallel_and_hello_world(client) -> None:
    assert post(client, "expression", {"numbers": [{"x": 2, "y": 1}, {"x": 4, "y": 3}]})["workflowdata"]["result"] == 2.0
    assert post(client, "foreach", {"input": [1, 2, 3]})["workflowdata"] == {"output": [4, 6, 8]}
    parallel = post(client, "parallel", {"number": 2})["workflowdata"]
    assert parallel["half"] == 1 and parallel["double"] == 4
    hello = post(client, "hello_world", None)
    assert hello["workflowdata"] == {"greeting": "Hello World", "mantra": "Serverless Workflow is awesome!"}
    again = client.get(f"/hello_world/{hello['id']}")
    assert again.status_code == 200 and again.json() == hello


def test_compensation(client) -> None:
    compensated = post(client, "compensation", {"shouldCompensate": True})["workflowdata"]
    assert compensated["compensated"] is True and compensated["compensating_more"] == "Real Betis Balompie"
    plain = post(client, "compensation", {"shouldCompensate": False})["workflowdata"]
    assert plain["compensated"] is False and "compensating_more" not in plain


def test_a_failed_instance_and_unknown_ids_are_problems(client) -> None:
    assert post(client, "errorWithMetadata", {"number": 12342})["workflowdata"] == {"number": 12342}
    failed = assert_problem(client.post("/errorWithMetadata", json={"number": 12341}), 400)
    assert failed["type"] == "urn:xflow:problem:instance-failed" and "Is Odd number!!!!" in failed["detail"]
    assert client.get(f"/errorWithMetadata/{failed['id']}").status_code == 400
    assert_problem(client.post("/no-such-workflow", json={}), 404)
    assert_problem(client.get("/hello_world/not-an-instance"), 404)
    invalid = assert_problem(client.post("/expression", json={"numbers": [{"x": "two", "y": 1}]}), 422)
    assert "_Wrapped" not in str(invalid)
    hello = post(client, "hello_world", {})
    assert_problem(client.get(f"/foreach/{hello['id']}"), 404)  # an instance of another workflow
    # the service's own routes keep their meaning
    assert client.get("/healthz").json() == {"status": "ok"} and client.get("/v1/instances").status_code == 200


def test_the_routes_are_off_unless_enabled(tmp_path, workflows_dir) -> None:
    (tmp_path / "plain").mkdir()
    plain = ServiceProcess(workflows_dir, f"sqlite:///{tmp_path / 'plain' / 'x.sqlite'}", auth="none").start()
    try:
        assert_problem(httpx.post(f"{plain.url}/hello_world", json={}, timeout=30), 404)
    finally:
        plain.stop()
