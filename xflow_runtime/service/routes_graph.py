"""Two public reads the console is built on, usable by any client (specs/console.md §2):

- ``GET /v1/workflows/{id}/graph``: the definition's states and transitions from its compiled
  plan (``plan.graph``), laid out (``plan.layout``), with its source text and lint warnings;
- ``GET /v1/me``: who the credential is (tenant, user, role, groups), so a client can hide what
  the role cannot do (the API refuses it anyway)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request

from xflow_runtime.service.auth import current_principal
from xflow_runtime.service.catalog import Definition
from xflow_runtime.service.principal import Principal
from xflow_runtime.service.problems import Problem
from xflow_runtime.service.routes_tasks import credential_groups
from xflow_runtime.service.state import ServiceState

router = APIRouter(prefix="/v1", tags=["workflows"])
_WARNINGS: dict[str, list[dict[str, Any]]] = {}  # by the definition's SHA-256: lint is pure, text never changes


@router.get("/me", summary="Who the credential is (tenant, user, role, groups)")
async def whoami(request: Request, principal: Principal = Depends(current_principal)) -> dict[str, Any]:
    return {"tenant": principal.tenant, "user": principal.user, "role": principal.role,
            "groups": sorted(credential_groups(request))}


@router.get("/workflows/{workflow_id}/graph", summary="The states and transitions of a workflow, laid out")
async def workflow_graph(workflow_id: str, request: Request,
                         principal: Principal = Depends(current_principal)) -> dict[str, Any]:
    state: ServiceState = request.app.state.xflow
    definition = state.catalog.get(workflow_id)
    if definition is None:
        raise Problem("not-found", f"no workflow {workflow_id}")
    return graph_view(definition, state.runtime.source_of(definition.plan).source)


def graph_view(definition: Definition, source: str) -> dict[str, Any]:
    from xflow_runtime.plan.graph import plan_graph
    from xflow_runtime.plan.layout import NODE_HEIGHT, NODE_WIDTH, layered_layout

    graph = plan_graph(definition.plan)
    layout = layered_layout([n["id"] for n in graph["nodes"]], [(e["from"], e["to"]) for e in graph["edges"]],
                            graph["start"])
    for node in graph["nodes"]:
        node["x"], node["y"] = layout.positions[node["id"]]
        node["layer"] = layout.layers[node["id"]]
    for edge in graph["edges"]:
        edge["back"] = (edge["from"], edge["to"]) in layout.back_edges
    return {"id": definition.workflow_id, "revision": definition.revision, "sha256": definition.sha256,
            **graph, "node_width": NODE_WIDTH, "node_height": NODE_HEIGHT, "width": layout.width,
            "height": layout.height, "source": source, "warnings": _warnings(definition, source)}


def _warnings(definition: Definition, source: str) -> list[dict[str, Any]]:
    """The lint warnings of ``xflow validate`` (a definition that is served has no errors)."""
    found = _WARNINGS.get(definition.sha256)
    if found is None:
        from xflow_runtime.definition import validate_text

        name = definition.file.rsplit("/", 1)[-1]
        found = [{k: v for k, v in d.to_dict().items() if k != "file"}
                 for d in validate_text(source, name) if d.severity == "warning"]
        _WARNINGS[definition.sha256] = found
    return found
