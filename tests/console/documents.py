"""Documents of the starter profile made through the API for the Memory and History
pages' browser tests (tests/console/test_memory.py, test_history.py)."""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import quote

from tests.conftest import ADMIN_KEY
from tests.console.steps import api
from tests.served import ServedHost

TENANT = "t-console"
DYNAMIC = "user/user_dynamic.json"


def doc_path(user: str, doc: str, suffix: str = "") -> str:
    return f"/v1/tenants/{TENANT}/users/{quote(user)}/documents/{doc}{suffix}"


def read(host: ServedHost, user: str, doc: str, suffix: str = "") -> Any:
    return api(host, "GET", doc_path(user, doc, suffix))


def patch(host: ServedHost, user: str, doc: str, ops: list[dict[str, Any]], **body: Any) -> Any:
    """A PATCH (a create when the document does not exist yet), as dev-admin."""
    status = api(host, "GET", doc_path(user, doc.rsplit("/", 1)[0] + "/"))
    listed = {d["path"]: d["etag"] for d in status["documents"]}
    etag = listed.get(doc.split("/", 1)[1])
    precondition = {"If-Match": etag} if etag else {"If-None-Match": "*"}
    headers = {"Idempotency-Key": uuid.uuid4().hex, **precondition}
    return api(host, "PATCH", doc_path(user, doc), {"ops": ops, **body}, ADMIN_KEY, **headers)


def add(section: str, value: Any) -> dict[str, Any]:
    return {"op": "add", "path": f"/content/{section}/-", "value": value}


def replace(pointer: str, value: Any) -> dict[str, Any]:
    return {"op": "replace", "path": f"/content{pointer}", "value": value}


def changes(host: ServedHost, user: str, doc: str = DYNAMIC) -> list[dict[str, Any]]:
    """The document's history, newest first."""
    return list(read(host, user, doc, ":history")["changes"])
