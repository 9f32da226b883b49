"""A small, self-contained FunctionApp used only by the funchost tests."""

from __future__ import annotations

import json

import azure.functions as func

app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

timer_calls: list[func.TimerRequest] = []
queue_calls: list[func.QueueMessage] = []


def _json(
    payload: object, status: int = 200, headers: dict[str, str] | None = None
) -> func.HttpResponse:
    return func.HttpResponse(
        json.dumps(payload), status_code=status, headers=headers, mimetype="application/json"
    )


@app.route(route="v1/things/{thing_id}", methods=["GET", "PUT"])
def get_thing(req: func.HttpRequest) -> func.HttpResponse:
    payload = {
        "thing_id": req.route_params["thing_id"],
        "method": req.method,
        "url": req.url,
        "params": dict(req.params),
        "echo_header": req.headers.get("x-echo"),
        "body": req.get_body().decode("utf-8"),
    }
    return _json(payload, headers={"x-request-id": "req_thing", "x-custom": "yes"})


@app.route(route="v1/things/special", methods=["GET"])
def special_thing(req: func.HttpRequest) -> func.HttpResponse:
    return _json({"special": True})


@app.route(route="v1/tenants/{tenant_id}/docs/{namespace}/{*path}", methods=["GET", "PATCH"])
def get_doc(req: func.HttpRequest) -> func.HttpResponse:
    return _json(dict(req.route_params))


@app.route(route="v1/tenants/{tenant_id}/context:assemble", methods=["POST"])
def assemble_context(req: func.HttpRequest) -> func.HttpResponse:
    body = req.get_json()
    return _json({"tenant_id": req.route_params["tenant_id"], "got": body}, status=201)


@app.route(route="v1/boom", methods=["GET"])
def boom(req: func.HttpRequest) -> func.HttpResponse:
    raise RuntimeError("secret internal detail")


@app.route(route="v1/plain", methods=["GET", "HEAD"])
async def plain(req: func.HttpRequest) -> func.HttpResponse:
    return func.HttpResponse("hello", status_code=200)


@app.timer_trigger(schedule="%SAMPLE_SCHEDULE%", arg_name="timer", run_on_startup=False)
def tick(timer: func.TimerRequest) -> None:
    timer_calls.append(timer)


@app.queue_trigger(arg_name="msg", queue_name="jobs", connection="AzureWebJobsStorage")
def work(msg: func.QueueMessage) -> None:
    if msg.get_body() == b"fail":
        raise ValueError("cannot process")
    queue_calls.append(msg)
