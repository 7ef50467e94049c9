"""The SonataFlow examples' own integration tests (src/test/java under the corpus), rewritten as
ours through ``xflow run``: the same inputs, the same asserted outputs."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.compat.corpus import example, needs_corpus
from xflow_runtime.cli.main import main

pytestmark = needs_corpus


def xflow_run(capsys: pytest.CaptureFixture[str], path: Any, payload: Any | None = None) -> tuple[int, Any, str]:
    args = ["run", "--ephemeral", "-q", str(path)]
    if payload is not None:
        args += ["--input", json.dumps(payload)]
    code = main(args)
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if code == 0 else None, captured.err


GREETINGS = [("jsongreet.sw.json", "JSON"), ("yamlgreet.sw.yml", "YAML")]  # jq and jsonpath


@pytest.mark.parametrize("name, flavour", GREETINGS, ids=["jq", "jsonpath"])
@pytest.mark.parametrize("payload, expected", [
    ({"name": "John", "language": "English"}, "Hello"),
    ({"name": "Javierito", "language": "Spanish"}, "Saludos"),
    ({"name": "John"}, "Hello"),                       # default language
    ({"name": "Jan", "language": "Czech"}, "Hello"),   # unsupported language
], ids=["english", "spanish", "default", "unsupported"])
def test_greeting(capsys, name, flavour, payload, expected) -> None:
    code, output, err = xflow_run(capsys, example("serverless-workflow-greeting-quarkus", name), payload)
    assert code == 0, err
    assert output["greeting"].startswith(expected)
    assert flavour in output["greeting"]


def test_expression_with_input_and_output_schemas(capsys) -> None:
    path = example("serverless-workflow-expression-quarkus", "expression.sw.json")
    code, output, err = xflow_run(capsys, path, {"numbers": [{"x": 2, "y": 1}, {"x": 4, "y": 3}]})
    assert code == 0, err
    assert output["result"] == 2.0
    assert "number" not in output
    # The input schema's items are a relative $ref (complex.json beside it): checked, with our code.
    code, _, err = xflow_run(capsys, path, {"numbers": [{"x": "two", "y": 1}]})
    assert code == 1
    assert '"code": "validation"' in err and "'two' is not of type 'number'" in err
    assert "_Wrapped" not in err


def test_foreach(capsys) -> None:
    code, output, err = xflow_run(capsys, example("serverless-workflow-foreach-quarkus", "foreach.sw.json"),
                                  {"input": [1, 2, 3]})
    assert code == 0, err
    assert output == {"output": [4, 6, 8]}


def test_compensation(capsys) -> None:
    path = example("serverless-workflow-compensation-quarkus", "compensation.sw.json")
    code, output, err = xflow_run(capsys, path, {"shouldCompensate": True})
    assert code == 0, err
    assert output["compensated"] is True and output["compensating_more"] == "Real Betis Balompie"
    code, output, err = xflow_run(capsys, path, {"shouldCompensate": False})
    assert code == 0, err
    assert output["compensated"] is False and "compensating_more" not in output
    # Neither condition matches and the switch has no defaultCondition: SonataFlow's behaviour.
    code, _, err = xflow_run(capsys, path, {})
    assert code == 1 and '"code": "NoConditionMatched"' in err


def test_error_with_metadata(capsys) -> None:
    path = example("serverless-workflow-error-quarkus", "errorWithMetadata.sw.json")
    code, output, err = xflow_run(capsys, path, {"number": 12342})
    assert code == 0, err
    assert output == {"number": 12342}
    code, _, err = xflow_run(capsys, path, {"number": 12341})
    assert code == 1
    assert "Is Odd number!!!!" in err and '"code": "errorMessage"' in err


def test_parallel(capsys) -> None:
    code, output, err = xflow_run(capsys, example("serverless-workflow-parallel-execution", "parallel.sw.json"),
                                  {"number": 2})
    assert code == 0, err
    assert output["half"] == 1 and output["double"] == 4


def test_hello_world(capsys) -> None:
    code, output, err = xflow_run(capsys, example("serverless-workflow-hello-world", "hello.sw.json"))
    assert code == 0, err
    assert output == {"greeting": "Hello World", "mantra": "Serverless Workflow is awesome!"}


def test_a_jvm_only_function_fails_with_function_not_found_naming_the_operation(capsys) -> None:
    code, _, err = xflow_run(capsys, example("serverless-workflow-error-quarkus", "error.sw.json"), {"number": 4})
    assert code == 1
    assert '"code": "FunctionNotFound"' in err
    assert "service:java:org.kie.kogito.examples.EvenService::isEven" in err
    assert "register a callable under the function name 'isEven'" in err
    assert "Traceback" not in err
