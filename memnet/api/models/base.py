"""The base of every request body model, its shared field types, and the one place a
pydantic ``ValidationError`` becomes our :class:`BadRequest` (spec 10.7).

Every error names where it is in ``details.location``: a list of JSON member names and
array indexes from the body's root, first element ``"body"`` (``["body", "ops", 0]``),
as ``jsonschema`` reports a path. Route parameters, query parameters and headers use
``["path", name]``, ``["query", name]`` and ``["header", name]``
(:func:`memnet.api.parsing.located`).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictStr,
    ValidationError,
    ValidationInfo,
)
from pydantic_core import ErrorDetails, PydanticCustomError

from memnet.domain.envelope import canonical
from memnet.domain.errors import BadRequest
from memnet.domain.event_model import MAX_EVIDENCE_CHARS
from memnet.domain.identifiers import SEGMENT, check_identifier


def _integral(value: object) -> object:
    """JSON has one number type (RFC 8259 section 6) and JSON Schema's ``integer`` matches
    ``41.0``: an integral float is that integer. ``41.5`` stays a float and is refused."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


NOT_BLANK = (
    "[^\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680"
    "\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
)
"""A character that is not blank as the server's ``str.strip()`` sees it (ECMA-262's
``\\S`` differs on \\x1c-\\x1f, \\x85 and \\ufeff)."""


INTEGRAL = BeforeValidator(_integral)
"""Last in an integer member's ``Annotated[StrictInt, Field(...), INTEGRAL]`` (after the
bounds, so they stay JSON Schema's ``minimum``/``maximum``): ``41`` or ``41.0``; never
``"41"``, ``true`` or ``41.5``."""


class Body(BaseModel):
    """Strict: no coercion (``"true"`` is not a bool, ``1.5`` not an int), no unknown
    members. ``defer_build``: the schema is built on first use, not at import (the
    Functions host gives the app 30 s to start)."""

    model_config = ConfigDict(strict=True, extra="forbid", defer_build=True)

    MISSING_CODE: ClassVar[str] = "INVALID_FIELD"
    """The code of an absent required member."""


def _identifier(value: str, info: ValidationInfo) -> str:
    try:
        return check_identifier(info.field_name or "id", value)
    except BadRequest as error:
        raise carried(error) from None


def _evidence(value: dict[str, Any]) -> dict[str, Any]:
    if len(canonical(value)) > MAX_EVIDENCE_CHARS:
        raise ValueError(f"must be an object of at most {MAX_EVIDENCE_CHARS} chars")
    return value


IDENTIFIER = {"type": "string", "pattern": f"^{SEGMENT.pattern}$"}
"""The JSON Schema of an identifier (a path's or a body's)."""
_PATTERN = {"pattern": IDENTIFIER["pattern"]}
Identifier = Annotated[StrictStr, AfterValidator(_identifier), Field(json_schema_extra=_PATTERN)]
"""An id (spec identifier grammar), checked and worded as in a path."""
SegmentStr = Annotated[StrictStr, Field(pattern=IDENTIFIER["pattern"])]
"""An identifier-shaped filter value; a bad one is a plain ``INVALID_FIELD``."""
Evidence = Annotated[dict[str, Any], AfterValidator(_evidence)]
ModelT = TypeVar("ModelT", bound=Body)


def validated(model: type[ModelT], body: dict[str, Any]) -> ModelT:
    """``body`` as ``model``, or the 400 of its first error."""
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        raise bad_request(model, exc) from None


def carried(error: BadRequest) -> PydanticCustomError:
    """``error``, raised by a domain check a validator calls, as pydantic collects it (it
    lets only ``ValueError`` and its own through): :func:`bad_request` reports it as the
    domain worded it, so each rule has one wording wherever its input comes from."""
    return PydanticCustomError("domain", "{message}", {"message": error.message, "error": error})


def bad_request(model: type[Body], exc: ValidationError) -> BadRequest:
    """The one translation of pydantic's errors: unknown top-level members together
    (``UNKNOWN_FIELD`` with ``fields`` and ``allowed``), else the first error."""
    errors = exc.errors(include_url=False, include_input=False)
    unknown = sorted(str(_echo(e["loc"][0])) for e in errors if _unknown_member(e))
    if unknown:
        return BadRequest(
            f"Unknown body fields: {unknown}.",
            code="UNKNOWN_FIELD",
            fields=unknown,
            allowed=sorted(f.alias or n for n, f in model.model_fields.items()),
            location=["body", unknown[0]],
        )
    return _first(model, errors[0])


def _unknown_member(error: ErrorDetails) -> bool:
    return error["type"] == "extra_forbidden" and len(error["loc"]) == 1


MAX_ECHO = 64
"""Characters of a member name an error repeats: a caller's input comes back bounded (a
900 KB key would otherwise return three times over)."""


def _echo(part: str | int) -> str | int:
    if isinstance(part, str) and len(part) > MAX_ECHO:
        return part[:MAX_ECHO] + "..."
    return part


def _first(model: type[Body], error: ErrorDetails) -> BadRequest:
    loc = [_echo(part) for part in error["loc"]]
    if error["type"] == "domain":
        found: BadRequest = error["ctx"]["error"]
        found.details.setdefault("location", ["body", *loc])
        return found
    top = str(loc[0]) if loc else "body"
    if error["type"] == "missing" and len(loc) == 1:
        return BadRequest(
            f"Body needs {top!r}.", code=model.MISSING_CODE, field=top, location=["body", top]
        )
    field = ".".join(str(part) for part in loc) or "body"
    return BadRequest(
        f"{field}: {_message(error)}",
        code="INVALID_FIELD",
        field=field,
        location=["body", *loc],
    )


def _message(error: ErrorDetails) -> str:
    """pydantic's message, never longer than a line."""
    message = str(error["msg"]).removeprefix("Value error, ")
    return message if len(message) <= 200 else message[:200] + "..."
