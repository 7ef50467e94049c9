"""A host application that mounts the service under ``/wf`` (run by uvicorn in
``test_operations.py::test_the_app_mounts_under_a_prefix``)."""

import os

from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

from xflow_runtime import Runtime
from xflow_runtime.service import create_app
from xflow_runtime.service.auth import Authenticator

service = create_app(Runtime("durable", database_url=os.environ["XFLOW_TEST_DB"]),
                     workflows=os.environ["XFLOW_TEST_WORKFLOWS"], auth=Authenticator(anonymous=True))
app = Starlette(routes=[Route("/", lambda request: PlainTextResponse("host")), Mount("/wf", app=service)])
