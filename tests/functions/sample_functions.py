"""Callables that custom-function tests import through ``python:tests.functions.sample_functions:…``."""

import asyncio
import threading


class InsufficientFunds(Exception):
    pass


def add(a: int, b: int) -> dict:
    return {"sum": a + b, "thread": threading.current_thread().name}


async def slow_echo(*, value: str) -> dict:
    await asyncio.sleep(0)
    return {"echo": value}


def whole(payload) -> dict:
    return {"got": payload}


def everything(**members) -> dict:
    return {"members": members}


def nothing() -> str:
    return "called without arguments"


def charge(*, amount: int) -> dict:
    raise InsufficientFunds(f"cannot charge {amount}")


def returns_set() -> set:
    return {1, 2}


class Greeter:
    @staticmethod
    def hello(*, name: str) -> str:
        return f"hello {name}"


NOT_CALLABLE = 42
