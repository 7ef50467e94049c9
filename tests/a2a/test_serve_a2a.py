"""An unmodified ``a2a-sdk`` client against a real ``xflow serve --a2a`` process (specs/a2a.md §5):
agent cards per exposed workflow, SendMessage (blocking, returnImmediately, multi-turn),
streaming, GetTask across a restart, CancelTask, and who may see a task."""

from __future__ import annotations

import asyncio
import shutil
import signal
import time
import uuid
from pathlib import Path
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Iterator

import httpx
import pytest

from tests.a2a.support import ServiceProcess, WebhookReceiver
from tests.service.support import assert_problem, bearer, jwt_token
from xflow_runtime.testing import ScriptedModelServer

SERVED = Path(__file__).with_name("served")
CHAT_SCRIPT = {
    "rules": [{"when": {"last_user_contains": "bye"}, "reply": {"json": {"response": "Goodbye, see you!"}}}],
    "default": {"json": {"response": "Welcome! What brings you here?"}},
}


@pytest.fixture(scope="module")
def model_server() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(CHAT_SCRIPT) as server:
        yield server


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, model_server: ScriptedModelServer) -> Iterator[ServiceProcess]:
    root = tmp_path_factory.mktemp("served")
    shutil.copytree(SERVED, root / "workflows")
    process = ServiceProcess(root / "workflows", f"sqlite:///{root / 'store' / 'xflow.sqlite'}", auth="jwt",
                             llm_api_base=model_server.api_base, extra=["--a2a", "--a2a-allow-private-webhooks"]).start()
    yield process
    process.stop()


def _auth(tenant: str = "a", user: str = "ann") -> dict[str, str]:
    return bearer(jwt_token(tenant, user, role="user", expires_in=3600))


@asynccontextmanager
async def _client(service: ServiceProcess, workflow: str, *, streaming: bool = False,
                  headers: dict[str, str] | None = None) -> AsyncIterator[Any]:
    """The SDK's own client, from the agent's card URL, as any A2A caller would make it."""
    from a2a.client import ClientConfig, create_client

    http = httpx.AsyncClient(headers=headers or _auth(), timeout=90)
    try:
        client = await create_client(f"{service.url}/a2a/agents/{workflow}",
                                     client_config=ClientConfig(streaming=streaming, httpx_client=http))
        try:
            yield client
        finally:
            await client.close()
    finally:
        await http.aclose()


def _message(text: str, **fields: Any) -> Any:
    from a2a.helpers.proto_helpers import new_text_part
    from a2a.types import Message, Role

    return Message(message_id=fields.pop("message_id", str(uuid.uuid4())), role=Role.ROLE_USER,
                   parts=[new_text_part(text)], **fields)


async def _send(client: Any, message: Any, **configuration: Any) -> list[Any]:
    from a2a.types import SendMessageConfiguration, SendMessageRequest

    request = SendMessageRequest(message=message, configuration=SendMessageConfiguration(**configuration))
    return [item async for item in client.send_message(request)]


def test_each_exposed_workflow_has_an_agent_card(served: ServiceProcess) -> None:
    card = httpx.get(f"{served.url}/a2a/agents/chat/.well-known/agent-card.json").json()
    assert card["name"] == "Polite host" and card["description"] == "Talks with a guest until they say goodbye."
    assert card["supportedInterfaces"] == [{"url": f"{served.url}/a2a/agents/chat/", "protocolBinding": "JSONRPC",
                                            "protocolVersion": "1.0"}]
    assert card["capabilities"]["streaming"] is True and [s["id"] for s in card["skills"]] == ["chat"]
    assert_problem(httpx.get(f"{served.url}/a2a/agents/hidden/.well-known/agent-card.json"), 404)
    assert_problem(httpx.get(f"{served.url}/a2a/agents/nothing/.well-known/agent-card.json"), 404)
    # JSON-RPC needs a credential of the service
    assert_problem(httpx.post(f"{served.url}/a2a/agents/chat/", json={"jsonrpc": "2.0", "id": 1,
                                                                      "method": "GetTask", "params": {"id": "x"}}), 401)


def test_a_conversation_is_a_task_that_asks_for_input_until_it_completes(served: ServiceProcess) -> None:
    from a2a.types import GetTaskRequest, TaskState

    async def scenario() -> None:
        async with _client(served, "chat") as client:
            [first] = await _send(client, _message("hello"))
            task = first.task
            assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            assert task.status.message.parts[0].text == "Welcome! What brings you here?"
            [second] = await _send(client, _message("just looking", task_id=task.id, context_id=task.context_id))
            assert second.task.id == task.id and second.task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            [last] = await _send(client, _message("bye now", task_id=task.id, context_id=task.context_id))
            assert last.task.status.state == TaskState.TASK_STATE_COMPLETED
            from google.protobuf.json_format import MessageToDict

            assert MessageToDict(last.task.artifacts[0].parts[0].data) == {"message": "hello", "response": "Goodbye, see you!"}
            assert last.task.artifacts[0].parts[1].text == "Goodbye, see you!"
            got = await client.get_task(GetTaskRequest(id=task.id))
            assert got.status.state == TaskState.TASK_STATE_COMPLETED
            # a terminal task takes no more messages
            from a2a.utils.errors import A2AError

            with pytest.raises(A2AError):
                await _send(client, _message("again", task_id=task.id))

    asyncio.run(scenario())


def test_the_same_message_id_is_the_same_task(served: ServiceProcess) -> None:
    async def scenario() -> None:
        async with _client(served, "slow-echo") as client:
            message_id = str(uuid.uuid4())
            [a] = await _send(client, _message("twice", message_id=message_id), return_immediately=True)
            [b] = await _send(client, _message("twice", message_id=message_id), return_immediately=True)
            assert a.task.id == b.task.id

    asyncio.run(scenario())


def test_streaming_yields_the_task_then_the_output_and_completion(served: ServiceProcess) -> None:
    from google.protobuf.json_format import MessageToDict

    async def scenario() -> list[dict[str, Any]]:
        async with _client(served, "slow-echo", streaming=True) as client:
            items = [MessageToDict(item) for item in await _send(client, _message("the stream"))]
            return items

    items = asyncio.run(scenario())
    assert "task" in items[0] and items[0]["task"]["status"]["state"] in ("TASK_STATE_WORKING", "TASK_STATE_SUBMITTED")
    assert items[-2]["artifactUpdate"]["artifact"]["parts"][0]["data"] == {"response": "slept on the stream"}
    assert items[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


def test_a_task_survives_a_restart_of_the_service(served: ServiceProcess) -> None:
    from a2a.types import GetTaskRequest, TaskState

    async def send() -> str:
        async with _client(served, "slow-echo") as client:
            [reply] = await _send(client, _message("restarts"), return_immediately=True)
            assert reply.task.status.state in (TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_SUBMITTED)
            return reply.task.id

    async def read(task_id: str) -> Any:
        async with _client(served, "slow-echo") as client:
            for _ in range(300):
                task = await client.get_task(GetTaskRequest(id=task_id))
                if task.status.state == TaskState.TASK_STATE_COMPLETED:
                    break
                await asyncio.sleep(0.2)
            return task

    task_id = asyncio.run(send())
    served.stop(signal.SIGTERM)
    served.start()
    task = asyncio.run(read(task_id))
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    from google.protobuf.json_format import MessageToDict

    assert MessageToDict(task.artifacts[0].parts[0].data) == {"response": "slept on restarts"}


def test_a_task_is_cancelled_once_and_unseen_by_others(served: ServiceProcess) -> None:
    from a2a.types import CancelTaskRequest, GetTaskRequest, TaskState
    from a2a.utils.errors import A2AError

    async def scenario() -> None:
        async with _client(served, "slow-echo") as client, \
                _client(served, "slow-echo", headers=_auth("b", "bob")) as other:
            [reply] = await _send(client, _message("cancel me"), return_immediately=True)
            with pytest.raises(A2AError):  # another tenant: no such task
                await other.get_task(GetTaskRequest(id=reply.task.id))
            with pytest.raises(A2AError):
                await other.cancel_task(CancelTaskRequest(id=reply.task.id))
            cancelled = await client.cancel_task(CancelTaskRequest(id=reply.task.id))
            assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
            assert (await client.get_task(GetTaskRequest(id=reply.task.id))).status.state == TaskState.TASK_STATE_CANCELED
            with pytest.raises(A2AError):  # not cancelable twice
                await client.cancel_task(CancelTaskRequest(id=reply.task.id))
            with pytest.raises(A2AError):
                await client.get_task(GetTaskRequest(id="no-such-task"))

    asyncio.run(scenario())


def test_push_notifications_reach_the_callers_webhook_with_its_credentials(served: ServiceProcess) -> None:
    from a2a.types import (AuthenticationInfo, DeleteTaskPushNotificationConfigRequest,
                           GetTaskPushNotificationConfigRequest, ListTaskPushNotificationConfigsRequest,
                           TaskPushNotificationConfig)
    from a2a.utils.errors import A2AError

    receiver = WebhookReceiver()
    try:
        async def scenario() -> tuple[str, list[str]]:
            async with _client(served, "slow-echo") as client, \
                    _client(served, "slow-echo", headers=_auth("b", "bob")) as other:
                config = TaskPushNotificationConfig(url=receiver.url + "/hook", token="tok-1",
                                                    authentication=AuthenticationInfo(scheme="Bearer",
                                                                                      credentials="cred"))
                [reply] = await _send(client, _message("push me"), return_immediately=True,
                                      task_push_notification_config=config)
                task_id = reply.task.id
                second = await client.create_task_push_notification_config(TaskPushNotificationConfig(
                    task_id=task_id, id="second", url=receiver.url + "/second"))
                assert second.id == "second"
                listed = await client.list_task_push_notification_configs(
                    ListTaskPushNotificationConfigsRequest(task_id=task_id))
                ids = sorted(c.id for c in listed.configs)
                got = await client.get_task_push_notification_config(
                    GetTaskPushNotificationConfigRequest(task_id=task_id, id="second"))
                assert got.url == receiver.url + "/second"
                with pytest.raises(A2AError):  # another tenant sees no configs of the task
                    await other.list_task_push_notification_configs(
                        ListTaskPushNotificationConfigsRequest(task_id=task_id))
                await client.delete_task_push_notification_config(
                    DeleteTaskPushNotificationConfigRequest(task_id=task_id, id="second"))
                return task_id, ids

        task_id, ids = asyncio.run(scenario())
        assert len(ids) == 2 and "second" in ids
        deadline = time.monotonic() + 60
        while not receiver.received and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1.0)  # nothing more arrives: the deleted config gets nothing
        [delivery] = receiver.received
        assert delivery["path"] == "/hook"
        assert delivery["headers"]["x-a2a-notification-token"] == "tok-1"
        assert delivery["headers"]["authorization"] == "Bearer cred"
        task = delivery["body"]["task"]
        assert task["id"] == task_id and task["status"]["state"] == "TASK_STATE_COMPLETED"
        assert task["artifacts"][0]["parts"][0]["data"] == {"response": "slept on push me"}
    finally:
        receiver.close()


def test_loopback_and_private_webhooks_are_refused_by_default() -> None:
    from xflow_runtime.service.a2a_push import url_allowed

    for url in ("http://127.0.0.1:9/x", "http://10.0.0.1/x", "http://169.254.169.254/latest", "ftp://example.com/x"):
        assert asyncio.run(url_allowed(url, False)) is False, url
    assert asyncio.run(url_allowed("http://127.0.0.1:9/x", True)) is True
