"""Read a FunctionApp's functions once and expose them by trigger kind."""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import azure.functions as func

UserFunction = Callable[..., Any]

ALL_METHODS: tuple[str, ...] = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")


@dataclass(frozen=True)
class HttpRoute:
    name: str
    function: UserFunction
    route: str
    methods: tuple[str, ...]
    arg_name: str


@dataclass(frozen=True)
class QueueFunction:
    name: str
    function: UserFunction
    queue_name: str
    arg_name: str
    connection: str | None


@dataclass(frozen=True)
class TimerFunction:
    name: str
    function: UserFunction
    schedule: str
    run_on_startup: bool
    arg_name: str


@dataclass(frozen=True)
class BlobFunction:
    name: str
    function: UserFunction
    path: str
    arg_name: str
    connection: str | None


@dataclass(frozen=True)
class McpToolFunction:
    """An ``mcpToolTrigger`` function; funchost/mcp.py reads its binding."""

    name: str
    function: UserFunction
    arg_name: str
    binding: dict[str, Any]


@dataclass
class FunctionIndex:
    http_routes: list[HttpRoute] = field(default_factory=list)
    queue_functions: list[QueueFunction] = field(default_factory=list)
    timer_functions: list[TimerFunction] = field(default_factory=list)
    blob_functions: list[BlobFunction] = field(default_factory=list)
    mcp_tools: list[McpToolFunction] = field(default_factory=list)
    by_name: dict[str, UserFunction] = field(default_factory=dict)


_cache: weakref.WeakKeyDictionary[func.FunctionApp, FunctionIndex] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def functions_of(app: func.FunctionApp) -> FunctionIndex:
    """Index of `app`'s functions; `app.get_functions()` is called once per app object."""
    with _lock:
        index = _cache.get(app)
        if index is None:
            index = _build_index(app)
            _cache[app] = index
        return index


def _build_index(app: func.FunctionApp) -> FunctionIndex:
    index = FunctionIndex()
    for function in app.get_functions():
        _add_function(index, function)
    return index


def _add_function(index: FunctionIndex, function: Any) -> None:
    name = str(function.get_function_name())
    user_function = function.get_user_function()
    index.by_name[name] = user_function
    trigger = _trigger_binding(function)
    if trigger is None:
        return
    kind = trigger.get("type")
    if kind == "httpTrigger":
        index.http_routes.append(_http_route(name, user_function, trigger))
    elif kind == "queueTrigger":
        index.queue_functions.append(_queue_function(name, user_function, trigger))
    elif kind == "timerTrigger":
        index.timer_functions.append(_timer_function(name, user_function, trigger))
    elif kind == "blobTrigger":
        index.blob_functions.append(_blob_function(name, user_function, trigger))
    elif kind == "mcpToolTrigger":
        tool = McpToolFunction(name, user_function, str(trigger["name"]), trigger)
        index.mcp_tools.append(tool)


def _trigger_binding(function: Any) -> dict[str, Any] | None:
    """The trigger's binding as plain JSON (enums stringified), or None."""
    trigger = function.get_trigger()
    if trigger is None:
        return None
    for raw in function.get_raw_bindings():
        binding: dict[str, Any] = json.loads(raw)
        if binding.get("name") == trigger.name and binding.get("type") == trigger.type:
            return binding
    return None


def _http_route(name: str, user_function: UserFunction, binding: dict[str, Any]) -> HttpRoute:
    methods = tuple(str(m).upper() for m in binding.get("methods") or ()) or ALL_METHODS
    route = str(binding.get("route") or name)
    return HttpRoute(name, user_function, route, methods, str(binding["name"]))


def _queue_function(
    name: str, user_function: UserFunction, binding: dict[str, Any]
) -> QueueFunction:
    return QueueFunction(
        name,
        user_function,
        str(binding["queueName"]),
        str(binding["name"]),
        binding.get("connection"),
    )


def _timer_function(
    name: str, user_function: UserFunction, binding: dict[str, Any]
) -> TimerFunction:
    return TimerFunction(
        name,
        user_function,
        str(binding["schedule"]),
        bool(binding.get("runOnStartup")),
        str(binding["name"]),
    )


def _blob_function(name: str, user_function: UserFunction, binding: dict[str, Any]) -> BlobFunction:
    return BlobFunction(
        name, user_function, str(binding["path"]), str(binding["name"]), binding.get("connection")
    )


def invoke(function: UserFunction, arg_name: str, value: Any) -> Any:
    """Call a user function with its trigger argument; `async def` functions are awaited."""
    result = function(**{arg_name: value})
    if inspect.isawaitable(result):
        return asyncio.run(_await(result))
    return result


async def _await(awaitable: Any) -> Any:
    return await awaitable
