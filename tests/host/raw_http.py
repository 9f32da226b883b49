"""Raw-socket HTTP for the host tests: requests a client library would refuse to send,
and replies read with whether the host closed the connection after them."""

from __future__ import annotations

import http.client
import json
import socket
from dataclasses import dataclass
from typing import Any

from funchost import RunningServer


@dataclass
class Reply:
    status: int
    headers: http.client.HTTPMessage
    body: bytes
    closed: bool  # the host closed the connection after answering

    @property
    def error(self) -> dict[str, Any]:
        error: dict[str, Any] = json.loads(self.body)["error"]
        assert set(error) == {"code", "message", "request_id", "details"}
        assert self.headers["x-request-id"] == error["request_id"]
        assert self.headers["Content-Type"] == "application/json; charset=utf-8"
        return error


def connect(server: RunningServer) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=3)


def read_reply(sock: socket.socket) -> Reply:
    """The next reply; `closed` waits for the host to close (or for the socket's timeout)."""
    response = http.client.HTTPResponse(sock)
    response.begin()
    body = response.read()
    return Reply(response.status, response.headers, body, closed=sock.recv(1) == b"")


def exchange(server: RunningServer, data: bytes, half_close: bool = False) -> Reply:
    with connect(server) as sock:
        sock.sendall(data)
        if half_close:
            sock.shutdown(socket.SHUT_WR)
        return read_reply(sock)


def thing_id(sock: socket.socket) -> str:
    """The next reply of the sample app's `get_thing`, the connection left open."""
    response = http.client.HTTPResponse(sock)
    response.begin()
    value: str = json.loads(response.read())["thing_id"]
    return value
