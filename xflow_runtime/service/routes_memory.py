"""Chat memory, agent memories and facts over HTTP (specs/service.md, "Memory and privacy").

Thin: who is reached comes from :mod:`~xflow_runtime.service.subjects`, every rule of storage
(409 on a taken title, the hybrid search of the ``memory_search`` tool, consent on facts) from the
memory packages. Everything is scoped by the credential's tenant; an end user reaches only its
own chats, memories and facts, anything else answers 404 like a missing id."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from xflow_runtime.memory import listing
from xflow_runtime.memory.chat.errors import ChatNotFound
from xflow_runtime.memory.longterm import MemoryScope
from xflow_runtime.memory.longterm.config import MAX_SEARCH_LIMIT
from xflow_runtime.memory.longterm.errors import LongTermMemoryError, MemoryConflict, MemoryNotFound
from xflow_runtime.memory.longterm.extraction_prompt import ExtractedFact
from xflow_runtime.memory.longterm.records import FACT_CATEGORIES, Memory, MemoryKind
from xflow_runtime.memory.longterm.repository import MAX_TITLE
from xflow_runtime.memory.longterm.tools import MAX_CONTENT, MAX_TAGS, ToolArgumentError, write_args
from xflow_runtime.service.auth import current_principal
from xflow_runtime.service.body import model_body
from xflow_runtime.service.principal import Principal
from xflow_runtime.service.problems import PROBLEM_TYPES, Problem
from xflow_runtime.service.subjects import (chat_memory, decode_page_key, encode_page_key, long_term_memory,
                                            plausible_id, required_user, user_reached)

router = APIRouter(prefix="/v1", tags=["memory"])
PROBLEM_TYPES.setdefault("memory-title-taken", (409, "A memory with this title already exists"))
_LIMIT = Query(50, ge=1, le=200)
_CURSOR = Query(None, max_length=500)
_USER = Query(None, max_length=255, description="the end user (a service credential); an end user's own id or absent")


# --- bodies --------------------------------------------------------------------------------------
class MemoryCreate(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    title: str = Field(min_length=1, max_length=MAX_TITLE)
    content: str = Field(min_length=1, max_length=MAX_CONTENT)
    tags: list[str] = Field(default_factory=list, max_length=MAX_TAGS)


class MemoryUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    title: str | None = Field(None, min_length=1, max_length=MAX_TITLE)
    content: str | None = Field(None, min_length=1, max_length=MAX_CONTENT)
    tags: list[str] | None = Field(None, max_length=MAX_TAGS)


class MemorySearch(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    query: str = Field(min_length=1, max_length=1000)
    limit: int = Field(10, ge=1, le=MAX_SEARCH_LIMIT)


class FactIn(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    content: str = Field(min_length=1, max_length=MAX_CONTENT)
    category: str = Field("general", pattern="^(" + "|".join(FACT_CATEGORIES) + ")$")
    importance: int = Field(5, ge=1, le=10)


class FactsAdd(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    facts: list[FactIn] = Field(min_length=1, max_length=100)


def _body_schema(model: type[BaseModel]) -> dict[str, Any]:
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": model.model_json_schema()}}}}


# --- chats ---------------------------------------------------------------------------------------
def _chat_view(chat: Any) -> dict[str, Any]:
    return {"id": chat.id, "agent": chat.agent, "user": chat.user, "memory_id": chat.memory_id or None,
            "title": chat.title, "message_count": chat.message_count,
            "created_at": chat.created_at.isoformat(), "updated_at": chat.updated_at.isoformat()}


async def _owned_chat(request: Request, principal: Principal, chat_id: str) -> Any:
    memory = await chat_memory(request.app.state.xflow)
    try:
        chat = await memory.get_chat(plausible_id(chat_id, "chat"), tenant=principal.tenant)
    except ChatNotFound:
        chat = None
    if chat is None or not principal.may_see(chat.tenant, chat.user):
        raise Problem("not-found", f"no chat {chat_id}")
    return chat


@router.get("/chats", summary="List chats (newest first)")
async def list_chats(request: Request, principal: Principal = Depends(current_principal),
                     agent: str | None = Query(None, max_length=255), user: str | None = _USER,
                     limit: int = _LIMIT, cursor: str | None = _CURSOR) -> Any:
    target = user_reached(principal, user)
    filters = {"list": "chats", "tenant": principal.tenant, "caller": principal.user, "user": target, "agent": agent}
    after = decode_page_key(cursor, filters)
    memory = await chat_memory(request.app.state.xflow)
    page = await asyncio.to_thread(_read, memory.engine, lambda c: listing.chat_page(
        c, principal.tenant, user=target, agent=agent, after=after, limit=limit))
    return {"items": [_chat_view(chat) for chat in page.items], "next_cursor": encode_page_key(page.next, filters)}


@router.get("/chats/{chat_id}", summary="One chat and its messages (tool calls and results included)")
async def get_chat(chat_id: str, request: Request, principal: Principal = Depends(current_principal)) -> Any:
    chat = await _owned_chat(request, principal, chat_id)
    memory = await chat_memory(request.app.state.xflow)
    return {**_chat_view(chat), "messages": await memory.history(chat.id, tenant=principal.tenant)}


@router.delete("/chats/{chat_id}", summary="Delete a chat and its messages")
async def delete_chat(chat_id: str, request: Request, principal: Principal = Depends(current_principal)) -> Any:
    chat = await _owned_chat(request, principal, chat_id)
    memory = await chat_memory(request.app.state.xflow)
    try:
        deleted = await memory.delete_chat(chat.id, tenant=principal.tenant)
    except ChatNotFound:
        raise Problem("not-found", f"no chat {chat_id}") from None
    return {"id": chat.id, "deleted_messages": deleted}


@router.delete("/chats", summary="Clear every chat stored under a memoryId")
async def clear_memory_id(request: Request, principal: Principal = Depends(current_principal),
                          memory_id: str = Query(..., min_length=1, max_length=512),
                          agent: str | None = Query(None, max_length=255), user: str | None = _USER) -> Any:
    target = user_reached(principal, user)
    memory = await chat_memory(request.app.state.xflow)
    deleted = await memory.clear(memory_id, tenant=principal.tenant, agent=agent, user=target)
    return {"memory_id": memory_id, "deleted_messages": deleted}


def _read(engine: Any, work: Any) -> Any:
    with engine.connect() as connection:
        result = work(connection)
        connection.rollback()
        return result


# --- agent memories ------------------------------------------------------------------------------
def _scope(principal: Principal, agent: str, user: str | None) -> MemoryScope:
    return MemoryScope(principal.tenant, plausible_id(agent, "agent"), user)


def _view(memory: Memory) -> dict[str, Any]:
    return memory.to_dict()


def _kind_only(found: Memory, kind: MemoryKind, memory_id: str) -> Memory:
    if found.kind != kind:
        raise Problem("not-found", f"no {kind} {memory_id}")
    return found


async def _get(request: Request, scope: MemoryScope, memory_id: str, kind: MemoryKind) -> Memory:
    store = await long_term_memory(request.app.state.xflow)
    try:
        return _kind_only(await store.get(scope, plausible_id(memory_id, kind)), kind, memory_id)
    except MemoryNotFound:
        raise Problem("not-found", f"no {kind} {memory_id}") from None


@router.get("/agents/{agent}/memories", summary="List an agent's memories (newest first, or by relevance to q)")
async def list_memories(agent: str, request: Request, principal: Principal = Depends(current_principal),
                        user: str | None = _USER, q: str | None = Query(None, min_length=1, max_length=1000),
                        limit: int = _LIMIT, cursor: str | None = _CURSOR) -> Any:
    scope = _scope(principal, agent, user_reached(principal, user))
    store = await long_term_memory(request.app.state.xflow)
    if q is not None:  # relevance order has no stable key: one page, no cursor
        if cursor is not None:
            raise Problem("invalid-cursor", "a list by relevance (q) is one page")
        found = await store.list(scope, kind="memory", query=q, limit=limit)
        return {"items": [_view(m) for m in found.items], "next_cursor": None}
    return await _page(store, scope, "memory", principal, limit, cursor)


async def _page(store: Any, scope: MemoryScope, kind: MemoryKind, principal: Principal, limit: int,
                cursor: str | None) -> dict[str, Any]:
    filters = {"list": kind, "tenant": scope.tenant, "agent": scope.agent, "user": scope.user, "caller": principal.user}
    after = decode_page_key(cursor, filters)
    page = await asyncio.to_thread(_read, store.engine, lambda c: listing.memory_page(
        c, scope, kind, after=after, limit=limit))
    return {"items": [_view(m) for m in page.items], "next_cursor": encode_page_key(page.next, filters)}


@router.post("/agents/{agent}/memories", status_code=201, summary="Create a memory (409 when the title is taken)",
             openapi_extra=_body_schema(MemoryCreate))
async def create_memory(agent: str, request: Request, principal: Principal = Depends(current_principal),
                        user: str | None = _USER) -> Any:
    body = await model_body(request, MemoryCreate)
    scope = _scope(principal, agent, user_reached(principal, user))
    args = _normalized(body.title, body.content, body.tags)
    store = await long_term_memory(request.app.state.xflow)
    try:
        created = await store.create(scope, args.title, args.content, args.tags)
    except MemoryConflict:
        raise Problem("memory-title-taken", "a memory with this title exists for this agent and user") from None
    location = f"{request.scope.get('root_path') or ''}/v1/agents/{agent}/memories/{created.id}"
    return JSONResponse(_view(created), status_code=201, headers={"Location": location})


def _normalized(title: str, content: str, tags: list[str]) -> Any:
    """The ``memory_write`` tool's rules (trimmed text, tags de-duplicated and shortened)."""
    try:
        return write_args({"title": title, "content": content, "tags": tags})
    except ToolArgumentError as error:
        raise Problem("validation-error", str(error), errors=[{"pointer": "#/", "detail": str(error)}]) from None


@router.get("/agents/{agent}/memories/{memory_id}", summary="One memory")
async def get_memory(agent: str, memory_id: str, request: Request, principal: Principal = Depends(current_principal),
                     user: str | None = _USER) -> Any:
    return _view(await _get(request, _scope(principal, agent, user_reached(principal, user)), memory_id, "memory"))


@router.patch("/agents/{agent}/memories/{memory_id}", summary="Update a memory (409 when the new title is taken)",
              openapi_extra=_body_schema(MemoryUpdate))
async def update_memory(agent: str, memory_id: str, request: Request,
                        principal: Principal = Depends(current_principal), user: str | None = _USER) -> Any:
    body = await model_body(request, MemoryUpdate)
    scope = _scope(principal, agent, user_reached(principal, user))
    current = await _get(request, scope, memory_id, "memory")
    if body.title is None and body.content is None and body.tags is None:
        raise Problem("validation-error", "give at least one of title, content, tags",
                      errors=[{"pointer": "#/", "detail": "nothing to update"}])
    args = _normalized(body.title or current.title or "", body.content or current.content,
                       body.tags if body.tags is not None else list(current.tags))
    store = await long_term_memory(request.app.state.xflow)
    try:
        updated = await store.update(scope, current.id, title=args.title if body.title is not None else None,
                                     content=args.content if body.content is not None else None,
                                     tags=args.tags if body.tags is not None else None)
    except MemoryConflict:
        raise Problem("memory-title-taken", "another memory of this agent and user has this title") from None
    except MemoryNotFound:
        raise Problem("not-found", f"no memory {memory_id}") from None
    return _view(updated)


@router.delete("/agents/{agent}/memories/{memory_id}", status_code=204, summary="Delete a memory")
async def delete_memory(agent: str, memory_id: str, request: Request,
                        principal: Principal = Depends(current_principal), user: str | None = _USER) -> None:
    scope = _scope(principal, agent, user_reached(principal, user))
    await _delete(request, scope, memory_id, "memory")


async def _delete(request: Request, scope: MemoryScope, memory_id: str, kind: MemoryKind) -> None:
    found = await _get(request, scope, memory_id, kind)
    store = await long_term_memory(request.app.state.xflow)
    try:
        await store.delete(scope, found.id)
    except MemoryNotFound:
        raise Problem("not-found", f"no {kind} {memory_id}") from None


@router.post("/agents/{agent}/memories/search", summary="Hybrid search (the memory_search tool's), limit ≤ 50",
             openapi_extra=_body_schema(MemorySearch))
async def search_memories(agent: str, request: Request, principal: Principal = Depends(current_principal),
                          user: str | None = _USER) -> Any:
    body = await model_body(request, MemorySearch)
    scope = _scope(principal, agent, user_reached(principal, user))
    store = await long_term_memory(request.app.state.xflow)
    hits = await store.search(scope, body.query, limit=body.limit)
    return {"results": [hit.to_dict() for hit in hits]}


# --- facts ---------------------------------------------------------------------------------------
@router.get("/agents/{agent}/facts", summary="An end user's facts for an agent (newest first)")
async def list_facts(agent: str, request: Request, principal: Principal = Depends(current_principal),
                     user: str | None = _USER, limit: int = _LIMIT, cursor: str | None = _CURSOR) -> Any:
    scope = _scope(principal, agent, required_user(principal, user))
    return await _page(await long_term_memory(request.app.state.xflow), scope, "fact", principal, limit, cursor)


@router.delete("/agents/{agent}/facts/{fact_id}", status_code=204, summary="Delete a fact")
async def delete_fact(agent: str, fact_id: str, request: Request, principal: Principal = Depends(current_principal),
                      user: str | None = _USER) -> None:
    await _delete(request, _scope(principal, agent, required_user(principal, user)), fact_id, "fact")


@router.post("/agents/{agent}/facts", summary="Add facts about an end user (service credential; consent applies)",
             openapi_extra=_body_schema(FactsAdd))
async def add_facts(agent: str, request: Request, principal: Principal = Depends(current_principal),
                    user: str | None = _USER) -> Any:
    if principal.role != "service":
        raise Problem("forbidden", "only a service credential adds facts")
    body = await model_body(request, FactsAdd)
    scope = _scope(principal, agent, required_user(principal, user))
    store = await long_term_memory(request.app.state.xflow)
    try:
        written = await store.add_facts(scope, [ExtractedFact(" ".join(f.content.split()), f.category, f.importance)
                                                for f in body.facts], source="api")
    except LongTermMemoryError as error:
        raise Problem("validation-error", str(error)) from None
    return {"written": written}
