"""Consent, erasure and export of an end user over HTTP (specs/service.md, "Memory and privacy").

``/v1/users/{user}``: an end-user credential reaches only its own id (any other answers 404, as
a missing user would); a service credential any user of its tenant. Erasure and export are
:func:`xflow_runtime.privacy.erase_user` / :func:`~xflow_runtime.privacy.export_user` over the
service's own stores; consent is the long-term memory's (refused stops fact extraction at once)."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict

from xflow_runtime.service.auth import current_principal
from xflow_runtime.service.body import model_body
from xflow_runtime.service.principal import Principal
from xflow_runtime.service.problems import Problem
from xflow_runtime.service.subjects import long_term_memory, required_user

router = APIRouter(prefix="/v1", tags=["privacy"])
ConsentValue = Literal["allowed", "refused", "unset"]
#: seconds a caller waits before sending an incomplete erasure again (readers are short)
ERASURE_RETRY_AFTER_S = 5
_STORED: dict[ConsentValue, bool | None] = {"allowed": True, "refused": False, "unset": None}


class Consent(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    consent: ConsentValue


def _wire(stored: bool | None) -> ConsentValue:
    return next(name for name, value in _STORED.items() if value is stored)


@router.get("/users/{user}/consent", summary="An end user's consent to fact extraction", response_model=Consent)
async def get_consent(user: str, request: Request, principal: Principal = Depends(current_principal)) -> Any:
    subject = required_user(principal, user)
    store = await long_term_memory(request.app.state.xflow)
    return {"consent": _wire(await store.consent(principal.tenant, subject))}


@router.put("/users/{user}/consent", summary="Set an end user's consent (refused stops extraction at once)",
            response_model=Consent,
            openapi_extra={"requestBody": {"required": True, "content": {"application/json": {
                "schema": Consent.model_json_schema()}}}})
async def put_consent(user: str, request: Request, principal: Principal = Depends(current_principal)) -> Any:
    body = await model_body(request, Consent)
    subject = required_user(principal, user)
    store = await long_term_memory(request.app.state.xflow)
    await store.set_consent(principal.tenant, subject, _STORED[body.consent])
    return {"consent": body.consent}


@router.delete("/users/{user}", summary="Erase everything stored about an end user; answers the receipt")
async def erase(user: str, request: Request, principal: Principal = Depends(current_principal)) -> Any:
    from xflow_runtime.privacy.erasure import ErasureIncomplete, erase_user

    subject = required_user(principal, user)
    try:
        receipt = await erase_user(subject, tenant=principal.tenant,
                                   database_url=request.app.state.xflow.runtime.database_url)
    except ErasureIncomplete as incomplete:  # rows gone, old copies still in a WAL: never a success
        request.app.state.xflow.hub.forget_user(principal.tenant, subject)
        raise Problem("erasure-incomplete", f"{incomplete.receipt.total} rows deleted, but old copies remain in the "
                      "store's write-ahead log until its readers finish; send the erasure again",
                      headers={"Retry-After": str(ERASURE_RETRY_AFTER_S)}) from None
    request.app.state.xflow.hub.forget_user(principal.tenant, subject)
    document = receipt.to_dict()
    for store in document["stores"].values():
        store.pop("location", None)
    return document


@router.get("/users/{user}/export", summary="Everything stored about an end user, as one document")
async def export(user: str, request: Request, principal: Principal = Depends(current_principal)) -> Any:
    from xflow_runtime.privacy import export_user

    subject = required_user(principal, user)
    document = await export_user(subject, tenant=principal.tenant,
                                 database_url=request.app.state.xflow.runtime.database_url)
    for part in ("memory", "durable"):  # where the stores are is the operator's business, not the caller's
        document[part].pop("location", None)
    return document
