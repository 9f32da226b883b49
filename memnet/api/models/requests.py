"""Request bodies of the HTTP routes (docs/api.md), as strict pydantic models: what the
handlers validate and what the OpenAPI document (:mod:`memnet.api.openapi`) describes.

A patch's ops, event digests and snapshot transcripts are checked by the domain
(:func:`memnet.domain.patching.parse_ops`, :mod:`memnet.domain.event_model`,
:mod:`memnet.domain.transcript`), which also checks the patches the services make and
stored blobs; their models here describe the same rules for OpenAPI only.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    StrictBool,
    StrictInt,
    StrictStr,
    WithJsonSchema,
    model_validator,
)
from pydantic import BaseModel as _Model

from memnet.api.models.base import (
    IDENTIFIER,
    INTEGRAL,
    NOT_BLANK,
    Body,
    Evidence,
    Identifier,
    SegmentStr,
    carried,
)
from memnet.domain.errors import BadRequest
from memnet.domain.event_model import MAX_OFFSET
from memnet.domain.patching import Op, parse_ops
from memnet.domain.timestamps import InvalidTimestamp, format_timestamp, parse_timestamp

Reason = Literal["live_update", "replay_update", "admin_migration"]
Fraction = Annotated[float, Field(ge=0, le=1)]  # strict: an int is a number, a bool is not


# -- documents (spec 10.2, 10.3) ------------------------------------------------------------


class Open(_Model):
    model_config = ConfigDict(strict=True, extra="allow", defer_build=True)


class _Op(Open):
    """Members an op does not define are ignored (RFC 6902 section 4)."""

    path: StrictStr = Field(description="A JSON Pointer (RFC 6901) into the document.")


class AddOp(_Op):
    op: Literal["add"]
    value: Any


class ReplaceOp(_Op):
    op: Literal["replace"]
    value: Any


class TestOp(_Op):
    __test__ = False  # not a pytest class
    op: Literal["test"]
    value: Any


class RemoveOp(_Op):
    op: Literal["remove"]


class MoveOp(_Op):
    op: Literal["move"]
    from_: StrictStr = Field(alias="from")


class CopyOp(_Op):
    op: Literal["copy"]
    from_: StrictStr = Field(alias="from")


PatchOp = Annotated[
    AddOp | RemoveOp | ReplaceOp | MoveOp | CopyOp | TestOp, Field(discriminator="op")
]


def _ops(raw: object) -> list[Op]:
    """The ops as the domain parses every patch (pointers included), its errors worded
    there once; located at the op (``["body", "ops", index]``)."""
    try:
        return parse_ops(raw)
    except BadRequest as error:
        index = error.details.get("op_index")
        error.details["location"] = ["body", "ops", *([] if index is None else [index])]
        raise carried(error) from None


class _Write(Body):
    MISSING_CODE: ClassVar[str] = "MISSING_FIELD"
    profile_id: Identifier | None = None
    binding_id: Identifier | None = None
    evidence: Evidence | None = None


class PatchBody(_Write):
    """``PATCH`` of a document: a JSON Patch (RFC 6902) and its provenance."""

    ops: Annotated[
        list[Op],
        PlainSerializer(lambda ops: [op.as_json() for op in ops]),  # keeps Op out of OpenAPI
        PlainValidator(_ops, json_schema_input_type=list[PatchOp]),
    ]
    reason: Reason = "live_update"
    confidence: Fraction | None = None
    rebase: StrictBool = False


class PutBody(_Write):
    """``PUT`` of a whole document (``admin_migration`` by default)."""

    content: dict[str, Any]
    reason: Reason = "admin_migration"


# -- context (spec 10.4) --------------------------------------------------------------------


class ConversationHint(Body):
    text: Annotated[StrictStr, Field(max_length=4000)] | None = None
    project_id: Identifier | None = None


class AssembleBody(Body):
    profile_id: Identifier | None = None
    conversation_hint: ConversationHint | None = None
    max_docs: Annotated[StrictInt, Field(ge=1, le=50), INTEGRAL] | None = None
    max_chars_total: Annotated[StrictInt, Field(ge=1, le=1_000_000), INTEGRAL] | None = None
    debug: StrictBool = False
    render: Literal["json", "text"] = "json"


# -- events (spec 10.5, 10.6, 20) -----------------------------------------------------------


def _instant(value: str) -> str:
    try:
        return format_timestamp(parse_timestamp(value))
    except InvalidTimestamp as exc:
        raise ValueError(exc.message.removeprefix("timestamp: ")) from None


_RFC3339 = {
    "format": "date-time",
    "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-5][0-9]"
    "(\\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})$",
}
Timestamp = Annotated[StrictStr, AfterValidator(_instant), Field(json_schema_extra=_RFC3339)]
"""An RFC 3339 date-time, in its canonical UTC form once validated."""


class TimeRange(Body):
    from_: Timestamp | None = Field(None, alias="from")
    to: Timestamp | None = None

    @model_validator(mode="after")
    def _ordered(self) -> TimeRange:
        """Compares instants, not strings (``…00.250000Z`` sorts before ``…00Z``)."""
        if self.from_ is None or self.to is None:
            return self
        if parse_timestamp(self.from_) >= parse_timestamp(self.to):
            raise ValueError("'from' must be before 'to'")
        return self


def _listed(value: object) -> object:
    return [value] if isinstance(value, str) else value


_FILTER_SCHEMA = {
    "anyOf": [
        IDENTIFIER,
        {"type": "array", "items": IDENTIFIER, "minItems": 1, "maxItems": 20},
    ]
}
Filter = Annotated[
    list[SegmentStr],
    Field(min_length=1, max_length=20),
    BeforeValidator(_listed),
    WithJsonSchema(_FILTER_SCHEMA),
]
"""One identifier, or a list of 1-20 (a pydantic union would name its members in
error locations)."""


Weight = Annotated[float, Field(ge=0, le=1)]


class RankingBody(Body):
    """A blend of relevance, importance and recency (docs/api.md "Ranking"); at least
    one weight above 0."""

    relevance: Weight = 1.0
    importance: Weight = 0.0
    recency: Weight = 0.0
    half_life_days: Annotated[float, Field(gt=0, le=3650)] = 30.0
    default_importance: Weight = 0.5


class SearchBody(Body):
    text: Annotated[StrictStr, Field(max_length=1000)] | None = None
    top_k: Annotated[StrictInt, Field(ge=1, le=100), INTEGRAL] = 10
    time_range: TimeRange | None = None
    service_id: Filter | None = None
    project_id: Filter | None = None
    source_type: Filter | None = None
    keywords: (
        Annotated[
            list[Annotated[StrictStr, Field(min_length=1, max_length=64)]],
            Field(min_length=1, max_length=20),
        ]
        | None
    ) = None
    recency_half_life_days: Annotated[float, Field(gt=0, le=3650)] | None = None
    ranking: RankingBody | None = None
    dense_weight: Weight | None = None
    profile_id: Identifier | None = None


class ReindexBody(Body):
    """One user (both ids), one tenant, or everything (``{}``)."""

    model_config = ConfigDict(
        json_schema_extra={
            "if": {"properties": {"user_id": {"type": "string"}}, "required": ["user_id"]},
            "then": {"properties": {"tenant_id": {"type": "string"}}, "required": ["tenant_id"]},
        }
    )
    tenant_id: Identifier | None = None
    user_id: Identifier | None = None


# -- proposal review (issue 15) -------------------------------------------------------------


class ReviewBody(Body):
    """``edit`` needs ``candidate`` (written instead of the proposal's); approve and
    reject take none and may send no body at all."""

    candidate: Any = None
    note: Annotated[StrictStr, Field(min_length=1, max_length=500)] | None = None


# -- legal holds (spec 17) ------------------------------------------------------------------


def _reason(value: str) -> str:
    if not 0 < len(value.strip()) <= 500:
        raise ValueError("must be a string of 1-500 characters")
    return value


def _distinct(value: list[str]) -> list[str]:
    if len(set(value)) != len(value):
        raise ValueError("kinds must be distinct")
    return value


HoldKind = Literal["documents", "snapshots", "events", "audit", "replays"]  # HOLD_KINDS
_NOT_BLANK = {"pattern": NOT_BLANK}


class HoldBody(Body):
    reason: Annotated[
        StrictStr,
        AfterValidator(_reason),
        Field(min_length=1, max_length=500, json_schema_extra=_NOT_BLANK),
    ]
    kinds: (
        Annotated[
            list[HoldKind],
            AfterValidator(_distinct),
            Field(min_length=1, json_schema_extra={"uniqueItems": True}),
        ]
        | None
    ) = None


# -- described only: the domain checks these (see the module docstring) ----------------------


class EvidenceSpan(Body):
    start: Annotated[StrictInt, Field(ge=0, le=MAX_OFFSET), INTEGRAL]
    end: Annotated[StrictInt, Field(ge=0, le=MAX_OFFSET), INTEGRAL]


class EventEvidence(Open):
    message_ids: list[Annotated[StrictStr, Field(min_length=1, max_length=128)]] = Field(
        [], max_length=200
    )
    span: EvidenceSpan | None = None


_TEXT = {"pattern": NOT_BLANK}


class EventClass(Body):
    """An event's sensitivity class: a class of ``profile_id``'s ``sensitivity_rules``
    that the writer is cleared for (docs/search.md "Sensitivity")."""

    model_config = ConfigDict(strict=True, extra="forbid", defer_build=True, populate_by_name=True)

    profile_id: Identifier
    class_: Identifier = Field(alias="class")


class EventBody(Body):
    """An event digest (spec 9.2). Also accepted, and left out here because a schema
    cannot say what they must equal: ``tenant_id`` and ``user_id`` (the path's),
    ``recorded_by`` (the caller's id), ``snapshot_uri`` (``blob://tenants/{tenant_id}/
    users/{user_id}/snapshots/...`` of the path's user)."""

    event_id: Identifier | None = None
    service_id: Identifier | None = None
    timestamp: Timestamp
    source_type: Identifier
    digest: Annotated[StrictStr, Field(min_length=1, max_length=4000, json_schema_extra=_TEXT)]
    keywords: list[
        Annotated[StrictStr, Field(min_length=1, max_length=64, json_schema_extra=_TEXT)]
    ] = Field([], max_length=32)
    project_ids: list[SegmentStr] = Field([], max_length=16)
    evidence: EventEvidence | None = None
    importance: Annotated[float, Field(ge=0, le=1)] | None = None
    sensitivity: EventClass | None = None


class Message(Body):
    id: SegmentStr
    role: Literal["user", "assistant", "system", "tool"]
    text: Annotated[StrictStr, Field(max_length=32_000)]
    timestamp: Timestamp


class TranscriptBody(Body):
    """A conversation snapshot (spec 7.2); message ids are unique."""

    messages: list[Message] = Field(min_length=1, max_length=2000)
    service_id: Identifier | None = None
    profile_id: Identifier | None = None
    project_hint: Identifier | None = None
    metadata: dict[str, Any] | None = None


# -- revert (issue 27) ----------------------------------------------------------------------

ChangeId = Annotated[StrictStr, Field(pattern=r"^chg_[0-9a-f]{28}$")]


class RevertBody(Body):
    """``POST {document}:revert``: exactly one of ``to_change_id`` (write that version's
    content back) and ``undo_change_id`` (apply the inverse of that one change)."""

    profile_id: Identifier | None = None
    to_change_id: ChangeId | None = None
    undo_change_id: ChangeId | None = None
    reason: Annotated[StrictStr, Field(min_length=1, max_length=1000)] | None = Field(
        None, description="Why, in words; kept in the change's evidence."
    )

    @model_validator(mode="after")
    def _one_target(self) -> RevertBody:
        if (self.to_change_id is None) == (self.undo_change_id is None):
            raise ValueError("send exactly one of to_change_id and undo_change_id")
        return self
