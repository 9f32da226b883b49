"""What a replay record keeps (spec 9.3, 13): the accepted plan (:class:`StoredPlan`,
its :class:`PatchRecord`s) and what each patch wrote (:class:`Applied`). Pure values,
each with one JSON form; :mod:`memnet.services.replay.records` stores them."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

from memnet.domain.envelope import Json
from memnet.domain.replay_contract import Digest, ExtractionRequest, Patch


@dataclass(frozen=True)
class PatchRecord:
    """The spec 9.3 replay patch record of an accepted patch, with the ops the guard
    holds (``holds``: op index, as a string, to reasons). :meth:`as_json` is its stored
    and shown form."""

    replay_id: str
    patch_index: int
    target_binding_id: str
    target_namespace: str
    target_path: str
    base_etag: str | None
    ops: list[Json]
    confidence: float | None
    evidence: Json
    idempotency_key: str
    holds: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def of(
        cls, patch: Patch, replay_id: str, request: ExtractionRequest, base_etag: str | None
    ) -> PatchRecord:
        evidence: Json = {
            "snapshot_uri": request.snapshot_uri,
            "message_ids": list(patch.message_ids),
        }
        if request.conversation_id:
            evidence["conversation_id"] = request.conversation_id
        return cls(
            replay_id=replay_id,
            patch_index=patch.index,
            target_binding_id=patch.binding_id,
            target_namespace=patch.namespace,
            target_path=patch.path,
            base_etag=base_etag,
            ops=patch.ops,
            confidence=patch.confidence,
            evidence=evidence,
            idempotency_key=f"replay-{replay_id}-{patch.index}",
            holds={str(index): list(reasons) for index, reasons in patch.holds.items()},
        )

    @classmethod
    def from_json(cls, stored: Json) -> PatchRecord:
        return cls(**{f.name: stored[f.name] for f in fields(cls) if f.name in stored})

    def as_json(self) -> Json:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class StoredPlan:
    """What a replay record keeps of an accepted plan: the digests, the patch records
    (based on the versions the extractor was shown) and what the events need; event ids
    are ``{event_prefix}_{digest position}``, fixed at planning and unguessable."""

    service_id: str
    timestamp: str
    event_prefix: str
    digests: tuple[Digest, ...]
    patches: tuple[PatchRecord, ...]

    @classmethod
    def from_json(cls, stored: Json) -> StoredPlan:
        digests = (Digest(**{**d, **_tuples(d)}) for d in stored["digests"])
        patches = (PatchRecord.from_json(p) for p in stored["patches"])
        return cls(
            stored["service_id"],
            stored["timestamp"],
            stored["event_prefix"],
            tuple(digests),
            tuple(patches),
        )

    def as_json(self) -> Json:
        return {
            "service_id": self.service_id,
            "timestamp": self.timestamp,
            "event_prefix": self.event_prefix,
            "digests": [{**asdict(d), **_lists(asdict(d))} for d in self.digests],
            "patches": [p.as_json() for p in self.patches],
        }

    def patch(self, index: int) -> PatchRecord:
        """The patch record with ``patch_index`` (the plan keeps only accepted patches,
        so a patch's position in it is not its index)."""
        return next(p for p in self.patches if p.patch_index == index)


def _tuples(digest: Json) -> Json:
    return {k: tuple(v) for k, v in digest.items() if isinstance(v, list)}


def _lists(digest: Json) -> Json:
    return {k: list(v) for k, v in digest.items() if isinstance(v, tuple)}


@dataclass(frozen=True)
class Applied:
    """A patch the replay wrote (or found already written): the document change it
    made; ``rebased_from`` is stored when the write was rebased, and ``extra`` holds
    how it got there (``retried``, ``resolved_by``)."""

    patch_index: int
    binding_id: str
    namespace: str
    path: str
    change_id: str | None
    etag: str | None
    rebased: bool = False
    rebased_from: str | None = None
    redirected_ops: list[Json] | None = None
    unchanged: bool = False
    extra: Json = field(default_factory=dict)

    def as_json(self) -> Json:
        found: Json = {name: getattr(self, name) for name in _APPLIED[:6]}
        if self.rebased:
            found["rebased_from"] = self.rebased_from
        if self.redirected_ops:
            found["redirected_ops"] = self.redirected_ops
        if self.unchanged:
            found["unchanged"] = True
        return {**found, **self.extra}

    @classmethod
    def from_json(cls, stored: Json) -> Applied:
        known: Json = {name: stored.get(name) for name in _APPLIED[:6]}
        extra = {k: v for k, v in stored.items() if k not in _APPLIED}
        return cls(
            **known,
            rebased="rebased_from" in stored,
            rebased_from=stored.get("rebased_from"),
            redirected_ops=stored.get("redirected_ops"),
            unchanged=bool(stored.get("unchanged")),
            extra=extra,
        )


_APPLIED = (
    "patch_index",
    "binding_id",
    "namespace",
    "path",
    "change_id",
    "etag",
    "rebased_from",
    "redirected_ops",
    "unchanged",
)
