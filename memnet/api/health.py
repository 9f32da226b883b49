"""Health. ``GET /v1/health`` is unauthenticated and says only that the app is up and
ready (a load balancer's probe needs no more, and an anonymous caller learns nothing
about the deployment); ``GET /v1/health/details`` names the backends, the
authentication modes, the profiles and the embedder (and whether it answers), for an
authenticated caller with the ``admin`` or ``debug`` role.

While the app cannot start, no caller can be authenticated (the callers registry may be
what is missing), so ``/v1/health/details`` answers ``503 NOT_READY`` to anyone with
``details.cause``: the file or setting that stopped startup, its field and the problem
(:class:`memnet.bootstrap.StartupFailure`; docs/deploy.md). The app is down either way;
the cause is what the operator needs, and it holds no secret."""

from __future__ import annotations

from memnet import bootstrap
from memnet.api.access import caller_of
from memnet.api.endpoint import endpoint
from memnet.api.http import ApiRequest, ApiResponse
from memnet.domain.callers import Caller
from memnet.domain.errors import Forbidden, Unavailable

DETAIL_ROLES = frozenset({"admin", "debug"})


@endpoint
def get_health(request: ApiRequest, request_id: str) -> ApiResponse:
    """``ok`` once the services are built; ``503 NOT_READY`` while they cannot be (a
    broken setting, an unreachable vault), so a probe takes the instance out."""
    bootstrap.services()
    return ApiResponse.json(200, {"status": "ok"})


def _caller_or_cause(request: ApiRequest) -> Caller:
    """The authenticated caller; while the app cannot start, ``NOT_READY`` with the
    startup failure as ``details.cause``."""
    try:
        return caller_of(request, metered=False)
    except Unavailable as error:
        failure = bootstrap.startup_failure()
        if error.code != "NOT_READY" or failure is None:
            raise
        cause = failure.details()
        raise Unavailable(
            error.message, code=error.code, retry_after=error.retry_after, cause=cause
        ) from error


@endpoint
def get_health_details(request: ApiRequest, request_id: str) -> ApiResponse:
    caller = _caller_or_cause(request)
    if not caller.roles & DETAIL_ROLES:
        raise Forbidden("Health details need the admin or debug role.", code="ROLE_FORBIDDEN")
    services = bootstrap.services()
    return ApiResponse.json(
        200,
        {
            "status": "ok",
            "storage": services.blobs.describe(),
            "queue": services.queue.describe(),
            "search": services.index.describe(),
            "auth": services.authenticator.describe(),
            "quotas": services.quotas.describe(),
            "profiles": services.registry.profile_ids(),
            "embedder": _embedder(services),
        },
    )


def _embedder(services: bootstrap.Services) -> dict[str, object]:
    """``{"kind": "none"}``, or the configured model and whether it answers (a probe
    cached per process: docs/search.md, "Health")."""
    health = services.events.embedder_health()
    if health is None:
        return {"kind": "none"}
    settings = services.settings
    return {"kind": settings.embedder, "model": settings.embedder_model, **health}
