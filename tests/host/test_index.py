"""Indexing a FunctionApp and calling its functions directly."""

from __future__ import annotations

import json

import azure.functions as func
import pytest

from funchost import functions_of
from funchost.index import ALL_METHODS

from .sample_app import app


def test_http_routes_come_from_the_app() -> None:
    routes = {r.name: r for r in functions_of(app).http_routes}
    assert routes["get_thing"].route == "v1/things/{thing_id}"
    assert routes["get_thing"].methods == ("GET", "PUT")
    assert routes["get_thing"].arg_name == "req"
    assert routes["assemble_context"].route == "v1/tenants/{tenant_id}/context:assemble"
    assert routes["assemble_context"].methods == ("POST",)


def test_timer_and_queue_functions() -> None:
    index = functions_of(app)
    (timer,) = index.timer_functions
    assert (timer.name, timer.schedule, timer.run_on_startup, timer.arg_name) == (
        "tick",
        "%SAMPLE_SCHEDULE%",
        False,
        "timer",
    )
    (queue,) = index.queue_functions
    assert (queue.queue_name, queue.arg_name, queue.connection) == (
        "jobs",
        "msg",
        "AzureWebJobsStorage",
    )


def test_index_is_memoized_and_get_functions_called_once() -> None:
    fresh = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

    @fresh.route(route="ping")
    def ping(req: func.HttpRequest) -> func.HttpResponse:
        return func.HttpResponse("pong")

    first = functions_of(fresh)
    assert functions_of(fresh) is first
    with pytest.raises(ValueError):
        fresh.get_functions()  # the library refuses a second call
    assert first.http_routes[0].methods == ALL_METHODS


def test_blob_functions_indexed() -> None:
    fresh = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

    @fresh.blob_trigger(arg_name="blob", path="snapshots/{name}", connection="Storage")
    def on_blob(blob: func.InputStream) -> None:
        return None

    (blob,) = functions_of(fresh).blob_functions
    assert (blob.name, blob.path, blob.arg_name, blob.connection) == (
        "on_blob",
        "snapshots/{name}",
        "blob",
        "Storage",
    )


def test_call_function_directly_by_name() -> None:
    request = func.HttpRequest(
        "POST",
        "http://localhost/v1/tenants/t1/context:assemble",
        headers={"content-type": "application/json"},
        route_params={"tenant_id": "t1"},
        body=b'{"q": 1}',
    )
    response = functions_of(app).by_name["assemble_context"](request)
    assert response.status_code == 201
    assert json.loads(response.get_body()) == {"tenant_id": "t1", "got": {"q": 1}}
