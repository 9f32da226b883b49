"""The replay contract (spec 9.2, 9.3, 13): what an extractor is given, what it must
return, and how that output is checked before anything is written. Pure: no I/O.

An extractor returns one JSON object (anything else is refused whole, as
``NOT_STRUCTURED``)::

    {
      "digests": [
        {"digest": "User moved to Lisbon.", "keywords": ["lisbon"],
         "project_ids": [], "message_ids": ["m3"]}
      ],
      "patches": [
        {"target_binding_id": "user_dynamic", "target_path": "user_dynamic.json",
         "ops": [{"op": "add", "path": "/content/preferences/-", "value": {"text": "..."}}],
         "confidence": 0.6, "evidence": {"message_ids": ["m3"]}}
      ]
    }

Each digest and each patch is checked on its own; one that fails is left out and
recorded as a :class:`Rejection` with a code and a reason, the rest go on. A patch must
name a binding of the profile, a path that binding covers, ops that parse and that the
profile lets this binding write (:func:`memnet.domain.policy.plan_ops`, so the same
allowlist and denylist as live writes), a confidence from 0 to 1, and evidence: message
ids of this transcript. The worker then completes each accepted patch into the spec 9.3
record (:class:`memnet.domain.replay_plan.PatchRecord`) with the snapshot URI, the base
ETag of the document the extractor was shown, and an idempotency key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from memnet.domain.bindings import Binding
from memnet.domain.envelope import Json
from memnet.domain.errors import BadRequest
from memnet.domain.identifiers import SEGMENT
from memnet.domain.patching import parse_ops
from memnet.domain.policy import WriteIntent, plan_ops
from memnet.domain.profiles import Profile
from memnet.domain.transcript import Transcript

MAX_DIGESTS = 5
MAX_PATCHES = 20
MAX_DIGEST_CHARS = 4000
MAX_KEYWORDS = 32
MAX_MESSAGE_IDS = 200
OUTPUT_FIELDS = frozenset({"digests", "patches"})
DIGEST_FIELDS = frozenset({"digest", "keywords", "project_ids", "message_ids"})
PATCH_FIELDS = frozenset(
    {"target_binding_id", "target_path", "ops", "confidence", "evidence", "base_etag"}
)


@dataclass(frozen=True)
class TargetDocument:
    """A document the replay may change, as the extractor is shown it: ``etag`` None
    and the binding's initial content when it does not exist yet."""

    binding_id: str
    namespace: str
    path: str
    etag: str | None
    content: dict[str, Any]


@dataclass(frozen=True)
class ExtractionRequest:
    transcript: Transcript
    profile: Profile
    targets: tuple[TargetDocument, ...]
    snapshot_uri: str
    now: str  # RFC 3339, the worker's clock
    conversation_id: str = ""  # the snapshot's conversation (the guard stamps it as evidence)


@dataclass(frozen=True)
class Digest:
    index: int  # its position in the extractor's output
    digest: str
    keywords: tuple[str, ...]
    project_ids: tuple[str, ...]
    message_ids: tuple[str, ...]


@dataclass(frozen=True)
class Patch:
    index: int  # its position in the extractor's output (stable: it names the patch)
    binding_id: str
    namespace: str
    path: str
    ops: list[dict[str, Any]]
    confidence: float
    message_ids: tuple[str, ...]
    # op index -> why the poisoning guard holds it (memnet.domain.replay_guard)
    holds: Mapping[int, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Rejection:
    part: str  # "output", "digest" or "patch"
    index: int | None
    code: str
    reason: str
    details: Json | None = None  # the write path's refusal's, when it refused

    def as_json(self) -> Json:
        found = {"part": self.part, "index": self.index, "code": self.code, "reason": self.reason}
        return found if self.details is None else {**found, "details": self.details}

    @classmethod
    def from_json(cls, stored: Json) -> Rejection:
        part, index, code = stored["part"], stored.get("index"), stored["code"]
        return cls(part, index, code, stored.get("reason", ""), stored.get("details"))


@dataclass
class ReplayPlan:
    digests: list[Digest] = field(default_factory=list)
    patches: list[Patch] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)


def check_output(raw: Any, request: ExtractionRequest) -> ReplayPlan:
    """Split ``raw`` into the digests and patches that may be written and the parts
    refused, each with its reason."""
    plan = ReplayPlan()
    if not isinstance(raw, dict) or not set(raw) <= OUTPUT_FIELDS:
        plan.rejected.append(
            Rejection(
                "output", None, "NOT_STRUCTURED", "output must be an object of digests and patches"
            )
        )
        return plan
    digests, patches = raw.get("digests", []), raw.get("patches", [])
    if not isinstance(digests, list) or not isinstance(patches, list):
        plan.rejected.append(
            Rejection("output", None, "NOT_STRUCTURED", "digests and patches must be arrays")
        )
        return plan
    for index, item in enumerate(digests[: MAX_DIGESTS + 1]):
        try:
            _limit("digest", index, MAX_DIGESTS)
            plan.digests.append(_digest(index, item, request))
        except _Refused as refused:
            plan.rejected.append(Rejection("digest", index, refused.code, refused.reason))
    for index, item in enumerate(patches[: MAX_PATCHES + 1]):
        try:
            _limit("patch", index, MAX_PATCHES)
            plan.patches.append(_patch(index, item, request))
        except _Refused as refused:
            plan.rejected.append(Rejection("patch", index, refused.code, refused.reason))
    return plan


class _Refused(Exception):
    def __init__(self, code: str, reason: str) -> None:
        super().__init__(reason)
        self.code, self.reason = code, reason


def _limit(part: str, index: int, most: int) -> None:
    """The entries past ``most`` are refused as one (the first of them is recorded)."""
    if index >= most:
        raise _Refused("TOO_MANY", f"at most {most} {part} entries are taken; the rest are not")


def _digest(index: int, item: Any, request: ExtractionRequest) -> Digest:
    if not isinstance(item, dict) or not set(item) <= DIGEST_FIELDS:
        raise _Refused("MALFORMED", f"a digest is an object of {sorted(DIGEST_FIELDS)}")
    text = item.get("digest")
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_DIGEST_CHARS:
        raise _Refused("INVALID_DIGEST", f"digest must be 1 to {MAX_DIGEST_CHARS} chars")
    keywords = _strings(item.get("keywords", []), "keywords", MAX_KEYWORDS, 64)
    projects = _strings(item.get("project_ids", []), "project_ids", 16, 128)
    if any(not SEGMENT.fullmatch(p) for p in projects):
        raise _Refused("INVALID_DIGEST", "project_ids must be identifiers")
    return Digest(
        index, text.strip(), keywords, projects, _evidence(item.get("message_ids"), request)
    )


def _patch(index: int, item: Any, request: ExtractionRequest) -> Patch:
    if not isinstance(item, dict) or not set(item) <= PATCH_FIELDS:
        raise _Refused("MALFORMED", f"a patch is an object of {sorted(PATCH_FIELDS)}")
    profile = request.profile
    binding, path = _target(item, request)
    confidence = item.get("confidence")
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        raise _Refused("INVALID_CONFIDENCE", "confidence must be a number from 0 to 1")
    if not 0 <= confidence <= 1:
        raise _Refused("INVALID_CONFIDENCE", "confidence must be a number from 0 to 1")
    evidence = item.get("evidence")
    if not isinstance(evidence, dict):
        raise _Refused("MISSING_EVIDENCE", "evidence with message_ids is required")
    message_ids = _evidence(evidence.get("message_ids"), request)
    try:
        ops = parse_ops(item.get("ops"))
    except BadRequest as error:
        raise _Refused("INVALID_OPS", error.message) from error
    if not ops:
        raise _Refused("INVALID_OPS", "a patch needs at least one op")
    intent = WriteIntent(
        "replay", request.now, float(confidence), {"message_ids": list(message_ids)}
    )
    violations = plan_ops(profile, binding, ops, intent).violations
    if violations:
        first = violations[0]
        raise _Refused(first.code, f"{first.message} ({first.path or 'patch'})")
    return Patch(
        index,
        binding.binding_id,
        binding.namespace,
        path,
        [op.as_json() for op in ops],
        float(confidence),
        message_ids,
    )


def _target(item: dict[str, Any], request: ExtractionRequest) -> tuple[Binding, str]:
    """The binding and path a patch targets: a document the extractor was shown."""
    binding = request.profile.binding(str(item.get("target_binding_id")))
    if binding is None:
        raise _Refused("UNKNOWN_BINDING", "target_binding_id names no binding of the profile")
    path = item.get("target_path")
    if not isinstance(path, str) or binding.match(binding.namespace, path) is None:
        raise _Refused("PATH_MISMATCH", f"target_path is not a document of {binding.binding_id!r}")
    if not any(t.binding_id == binding.binding_id and t.path == path for t in request.targets):
        raise _Refused("NOT_A_TARGET", "the patch targets a document the extractor was not shown")
    return binding, path


def _evidence(raw: Any, request: ExtractionRequest) -> tuple[str, ...]:
    if not isinstance(raw, list) or not raw or len(raw) > MAX_MESSAGE_IDS:
        raise _Refused("MISSING_EVIDENCE", "evidence must name 1 or more message ids")
    known = request.transcript.message_ids()
    if not all(isinstance(m, str) and m in known for m in raw):
        raise _Refused("UNKNOWN_MESSAGE", "evidence names a message the transcript lacks")
    return tuple(dict.fromkeys(raw))


def _strings(raw: Any, name: str, most: int, chars: int) -> tuple[str, ...]:
    if not isinstance(raw, list) or len(raw) > most:
        raise _Refused("INVALID_DIGEST", f"{name} must be an array of at most {most}")
    if not all(isinstance(s, str) and 0 < len(s) <= chars for s in raw):
        raise _Refused("INVALID_DIGEST", f"{name} must hold strings of 1 to {chars} chars")
    return tuple(dict.fromkeys(raw))
