"""Health. ``GET /v1/health`` is unauthenticated and says only that the app is up and
ready (a load balancer's probe needs no more, and an anonymous caller learns nothing
about the deployment); ``GET /v1/health/details`` names the backends, the
authentication modes, the profiles and the embedder (and whether it answers), for an
authenticated caller with the ``admin`` or ``debug`` role.

While the app cannot start, no caller can be authenticated (the callers registry may be
what is missing), so ``/v1/health/details`` answers ``503 NOT_READY`` to anyone with
``details.cause``: the file or setting that stopped startup, its field and the problem
(:class:`memnet.bootstrap.StartupFailure`, handed here by
:func:`memnet.bootstrap.services_or_cause`; docs/deploy.md). The app is down either way;
the cause is what the operator needs, and it holds no secret."""

from __future__ import annotations

from memnet.api.endpoint import RequestContext, ServicesSource, endpoint, public
from memnet.api.http import ApiRequest, ApiResponse
from memnet.container import Services
from memnet.domain.errors import Forbidden

DETAIL_ROLES = frozenset({"admin", "debug"})


@public
def get_health(request: ApiRequest, services: ServicesSource) -> ApiResponse:
    """``ok`` once the services are built; ``503 NOT_READY`` while they cannot be (a
    broken setting, an unreachable vault), so a probe takes the instance out."""
    services()
    return ApiResponse.json(200, {"status": "ok"})


@endpoint(metered=False)
def get_health_details(request: ApiRequest, ctx: RequestContext) -> ApiResponse:
    """While the app cannot start, the entry point's source of services
    (:func:`memnet.bootstrap.services_or_cause`) answers ``NOT_READY`` with the cause."""
    if not ctx.caller.roles & DETAIL_ROLES:
        raise Forbidden("Health details need the admin or debug role.", code="ROLE_FORBIDDEN")
    services = ctx.services
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


def _embedder(services: Services) -> dict[str, object]:
    """``{"kind": "none"}``, or the configured model and whether it answers (a probe
    cached per process: docs/search.md, "Health")."""
    health = services.events.embedder_health()
    if health is None:
        return {"kind": "none"}
    settings = services.settings
    return {"kind": settings.embedder, "model": settings.embedder_model, **health}
