"""A small local host for this project's own Azure Functions app (no Core Tools needed)."""

from funchost.background import QueueSource
from funchost.blobs import BlobPoller
from funchost.index import FunctionIndex, functions_of
from funchost.server import RunningServer, serve_forever, start_in_thread
from funchost.settings import HostLimits

__all__ = [
    "BlobPoller",
    "FunctionIndex",
    "HostLimits",
    "QueueSource",
    "RunningServer",
    "functions_of",
    "serve_forever",
    "start_in_thread",
]
