"""Blob triggers on the local host: a poller over a :class:`memnet.ports.BlobStore`.

On Azure Flex Consumption a blob trigger must use the Event Grid source, which cannot
fire here; this host polls instead. For each blob function whose container is the
store's, the path template (``%NAME%`` settings resolved from os.environ, as the
Functions host does) is compiled once: the first segment is the container, each
``{name}`` in the rest matches one path segment (``[^/]+``), everything else is literal.
Each poll walks the template's folders: a literal segment is appended to the folders
found so far without a call, a segment with a parameter lists each folder one level
deep (:meth:`memnet.ports.BlobStore.list_folder`), and the last segment's listing gives
the blobs; the function is invoked once per new matching blob. So a poll of the
snapshot trigger lists every user's ``snapshots/`` folder, never the documents, events
or audit records beside it. What the function receives is
decided by its parameter's type, as the Functions worker decides it: a parameter typed as
the ``BlobClient`` SDK type of ``azurefunctions-extensions-bindings-blob`` gets a real
``azure.storage.blob.BlobClient`` naming the container and the blob, built without I/O and
the blob never read (the worker's deferred binding); any other parameter gets a real
``func.blob.InputStream`` of the content named ``<container>/<blob name>``. The client's
account is :data:`LOCAL_ACCOUNT_URL`, which resolves nowhere: the store is files here, so
such a function may read only the client's names (ours does). The other SDK types
(``ContainerClient``, ``StorageStreamDownloader``) are not emulated: such a function is
not started, logged.

Delivery is at least once, as with Event Grid: seen blobs are remembered in memory, so
every restart fires again for every existing matching blob. The app's blob functions
must therefore be idempotent, and ours are (the snapshot trigger's replay is keyed by a
create-only replay record). A blob is remembered by name only: one overwritten in place
does not fire again. A function that raises is logged and retried on the next poll, up
to :data:`MAX_ATTEMPTS` attempts in all, then logged as given up (a poison blob). A
client-typed function also fires for a blob deleted between the listing and the call, as
on Azure for one deleted just after the host's check: the function must bear it.

Cost: each poll lists the folders the template reaches: for the snapshot trigger each
tenant's users, each user's conversations and their snapshots, so it grows with the
users and snapshots stored, not with the rest of the store (docs/performance.md, "The
local host while idle"). ``FUNCHOST_BLOB_POLL_SECONDS`` (default 60 s, 0 disables the
poller) trades that listing against how soon a blob written straight to storage fires
(the upload route starts its replay itself). The function's ``connection`` is not read: the caller
hands the poller its store, which holds one container.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import azure.functions as func
from azure.storage.blob import BlobClient
from azurefunctions.extensions.base import get_binding_registry

from funchost.index import BlobFunction, invoke
from memnet.ports import BlobNotFound, BlobStore

logger = logging.getLogger("funchost")

MAX_ATTEMPTS = 5
LOCAL_ACCOUNT_URL = "https://funchost.invalid"  # a reserved name (RFC 2606): never resolves
_SETTING = re.compile(r"%([^%]+)%")
_PARAMETER = re.compile(r"\{[^{}/]+\}")


@dataclass(frozen=True)
class BlobPath:
    """A compiled blob trigger path: its container, the pattern a blob name (relative
    to the container) must match in full, and its segments: each the literal text, or
    the pattern of a segment with a parameter."""

    container: str
    pattern: re.Pattern[str]
    segments: tuple[str | re.Pattern[str], ...]

    def matches(self, name: str) -> bool:
        return self.pattern.fullmatch(name) is not None

    def names(self, store: BlobStore) -> list[str]:
        """The names in ``store`` that match, listing only the folders the template
        reaches (one ``list_folder`` per folder with a parameter segment below it)."""
        folders = [""]
        for segment in self.segments[:-1]:
            if isinstance(segment, str):
                folders = [f"{folder}{segment}/" for folder in folders]
                continue
            folders = [
                name
                for folder in folders
                for name in _listed(store, folder)
                if name.endswith("/") and segment.fullmatch(name[len(folder) : -1])
            ]
        return [n for folder in folders for n in _listed(store, folder) if self.matches(n)]


def _listed(store: BlobStore, folder: str) -> list[str]:
    """The folder's names; none for a folder the store refuses to name (a directory put
    on disk by hand, say ``a\\b``): it holds no blob of ours, and it must not stop the
    poll of every other folder."""
    try:
        return list(store.list_folder(folder))
    except ValueError:
        return []


def resolve_settings(text: str, env: Mapping[str, str] | None = None) -> str:
    """Replace every ``%NAME%`` with that setting; :class:`ValueError` if one is unset."""
    env = os.environ if env is None else env

    def setting(found: re.Match[str]) -> str:
        value = env.get(found.group(1))
        if not value:
            raise ValueError(f"blob path setting {found.group(1)!r} is not set")
        return value

    return _SETTING.sub(setting, text)


def compile_blob_path(path: str, env: Mapping[str, str] | None = None) -> BlobPath:
    """Compile ``<container>/<template>``; :class:`ValueError` if it cannot be one."""
    container, slash, template = resolve_settings(path, env).strip("/").partition("/")
    if not slash or not template or "{" in container:
        raise ValueError(f"blob path needs a literal container and a blob name: {path!r}")
    literals = _PARAMETER.split(template)
    if any("{" in part or "}" in part for part in literals):
        raise ValueError(f"blob path has an unbalanced or empty {{...}}: {path!r}")
    if any(segment in ("", ".", "..") for segment in template.split("/")):
        raise ValueError(f"blob path has an empty, '.' or '..' segment: {path!r}")
    return BlobPath(
        container, _pattern(template), tuple(_segment(part) for part in template.split("/"))
    )


def _pattern(template: str) -> re.Pattern[str]:
    """Literal text, each ``{name}`` one path segment's worth (``[^/]+``)."""
    return re.compile("[^/]+".join(re.escape(part) for part in _PARAMETER.split(template)))


def _segment(text: str) -> str | re.Pattern[str]:
    return _pattern(text) if _PARAMETER.search(text) else text


def binds_client(function: BlobFunction) -> bool:
    """Whether ``function``'s trigger parameter is bound to a ``BlobClient`` (True) or to
    the content (False). The Functions worker defers the binding exactly when the resolved
    annotation is an SDK type (``check_supported_type`` of the extensions' registry);
    :class:`ValueError` for an annotation that cannot be resolved or an SDK type other
    than a ``BlobClient``."""
    try:
        hint = typing.get_type_hints(function.function).get(function.arg_name)
    except (NameError, TypeError) as exc:
        raise ValueError(f"the type of {function.arg_name!r} cannot be resolved: {exc}") from exc
    if not get_binding_registry().check_supported_type(hint):
        return False
    if isinstance(hint, type) and issubclass(hint, BlobClient):
        return True
    raise ValueError(f"SDK type {hint!r} is not emulated here; BlobClient is")


@dataclass(frozen=True)
class _Watch:
    function: BlobFunction
    path: BlobPath
    client: bool  # binds_client(function)


class BlobPoller:
    """Fires the blob functions watching ``container`` for the blobs of ``store``."""

    def __init__(
        self,
        functions: Iterable[BlobFunction],
        store: BlobStore,
        container: str,
        interval: float = 2.0,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self._store = store
        self._container = container
        self.interval = interval
        self._watches = [w for f in functions if (w := _watch(f, container, env)) is not None]
        self._seen: set[tuple[str, str]] = set()  # (function name, blob name)
        self._failures: dict[tuple[str, str], int] = {}

    @property
    def function_names(self) -> list[str]:
        return [watch.function.name for watch in self._watches]

    def run(self, stop: threading.Event) -> None:
        """Poll until ``stop`` is set: at once, then every ``interval`` seconds."""
        names = ", ".join(self.function_names)
        logger.info(
            "blob functions %s: polling %r every %g s", names, self._container, self.interval
        )
        while not stop.is_set():
            self.poll(stop)
            stop.wait(self.interval)

    def poll(self, stop: threading.Event | None = None) -> int:
        """One scan: fire every new matching blob once; return how many invocations ran."""
        fired = 0
        for watch in self._watches:
            for name in self._new_blobs(watch):
                if stop is not None and stop.is_set():
                    return fired
                fired += self._fire(watch, name)
        return fired

    def _new_blobs(self, watch: _Watch) -> list[str]:
        """Listed in full before any invocation: a function may write under the path."""
        try:
            names = watch.path.names(self._store)
        except Exception:
            logger.exception("listing blobs for %s failed", watch.function.name)
            return []
        key = watch.function.name
        return [n for n in names if (key, n) not in self._seen]

    def _fire(self, watch: _Watch, name: str) -> int:
        """Invoke the watch's function for blob ``name`` (0 when the blob could not be read)."""
        function = watch.function
        try:
            argument = self._client(name) if watch.client else self._stream(name)
        except BlobNotFound:
            return 0  # deleted since it was listed: nothing to fire for
        except Exception:  # a storage failure is not the function's: retried, not counted
            logger.exception("reading blob %s for %s failed", name, function.name)
            return 0
        try:
            invoke(function.function, function.arg_name, argument)
        except Exception:
            self._failed(function, name)
        else:
            self._done(function, name)
            logger.info("blob function %s ran for %s", function.name, name)
        return 1

    def _client(self, name: str) -> BlobClient:
        """A client naming blob ``name``: no I/O, and the blob is not read."""
        return BlobClient(LOCAL_ACCOUNT_URL, container_name=self._container, blob_name=name)

    def _stream(self, name: str) -> func.InputStream:
        blob = self._store.read(name)
        data = blob.data
        return func.blob.InputStream(name=f"{self._container}/{name}", data=data, length=len(data))

    def _failed(self, function: BlobFunction, name: str) -> None:
        key = (function.name, name)
        attempts = self._failures[key] = self._failures.get(key, 0) + 1
        logger.exception(
            "blob function %s failed on %s (attempt %d)", function.name, name, attempts
        )
        if attempts >= MAX_ATTEMPTS:
            logger.error("blob function %s gave up on %s after %d attempts", *key, attempts)
            self._done(function, name)

    def _done(self, function: BlobFunction, name: str) -> None:
        self._seen.add((function.name, name))
        self._failures.pop((function.name, name), None)


def _watch(function: BlobFunction, container: str, env: Mapping[str, str] | None) -> _Watch | None:
    """The function's compiled path when it watches ``container``; else None, logged."""
    try:
        path = compile_blob_path(function.path, env)
        client = binds_client(function)
    except ValueError as exc:
        logger.error("blob function %s not started: %s", function.name, exc)
        return None
    if path.container != container:
        logger.warning(
            "blob function %s not started: it watches container %r, the host polls %r",
            function.name,
            path.container,
            container,
        )
        return None
    return _Watch(function, path, client)


def blob_poller_for(
    functions: Iterable[BlobFunction],
    store: BlobStore | None,
    container: str | None,
    interval: float,
) -> BlobPoller | None:
    """A poller when there is a store, a container, a positive interval and a blob
    function of that container to run; otherwise None."""
    functions = list(functions)
    if store is None or container is None or interval <= 0 or not functions:
        return None
    poller = BlobPoller(functions, store, container, interval)
    return poller if poller.function_names else None
