"""Whose a document is (issue 15, capability 1; docs/profiles.md "Shared documents"):
a binding's ``scope`` is ``user`` (each user has the document) or ``tenant`` (one
document every user of the tenant shares). A request names a user either way; a tenant
binding's document lives under the tenant's shared owner
(:data:`~memnet.domain.layout.SHARED_OWNER`), never under a user, so forgetting a user
leaves it and no user's prefix reaches it. Who may change a binding's documents is its
``patch_roles``; a user's own (delegated) token, and the replay of a user's
conversation, never change a shared one. A shared document's history shows who changed
it, and (to admins only) the evidence, which names users' conversations.
"""

from __future__ import annotations

from dataclasses import replace

from memnet.domain.bindings import Binding
from memnet.domain.callers import Caller
from memnet.domain.document_model import WriteCommand
from memnet.domain.envelope import Json
from memnet.domain.errors import Forbidden
from memnet.domain.layout import DocumentRef
from memnet.services.documents.chain import HistoryPage


def scoped_ref(ref: DocumentRef, binding: Binding) -> DocumentRef:
    """Where the document ``ref`` names lives, for ``binding``."""
    return ref.shared() if binding.shared else ref


def scoped_write(
    caller: Caller, cmd: WriteCommand, binding: Binding, *, admin_replace: bool = False
) -> WriteCommand:
    """``cmd`` addressed to where its document lives, if ``caller`` may change it (an
    admin's replace, already authorised as such, is not held to ``patch_roles``)."""
    if not admin_replace and not caller.roles & binding.patch_roles:
        raise Forbidden(
            f"Changing binding {binding.binding_id!r} needs one of the roles "
            f"{sorted(binding.patch_roles)}.",
            code="ROLE_FORBIDDEN",
            roles=sorted(binding.patch_roles),
        )
    if not binding.shared:
        return cmd
    if caller.user_id is not None:
        raise Forbidden(
            "A user's own token cannot change the tenant's shared documents.",
            code="USER_FORBIDDEN",
        )
    # Keys are the caller's per user: the same key through two users' paths is two
    # requests, as it would be for their own documents.
    key = f"{cmd.ref.user_id}/{cmd.idempotency_key}"
    return replace(cmd, ref=cmd.ref.shared(), idempotency_key=key)


PRIVATE_RECORD_FIELDS = ("evidence", "origin", "request_id", "idempotency_key_sha256")


def visible_history(page: HistoryPage, caller: Caller, binding: Binding) -> HistoryPage:
    """``page`` as ``caller`` may see it (:func:`visible_changes`)."""
    return replace(page, changes=visible_changes(page.changes, caller, binding))


def visible_changes(
    changes: tuple[Json, ...], caller: Caller, binding: Binding
) -> tuple[Json, ...]:
    """Changes (audit records, or what ``:why`` says of them) as ``caller`` may see them:
    a shared document's without what names the users and conversations they came from,
    unless the caller is an admin."""
    if not binding.shared or "admin" in caller.roles:
        return changes
    return tuple(
        {k: v for k, v in change.items() if k not in PRIVATE_RECORD_FIELDS} for change in changes
    )
