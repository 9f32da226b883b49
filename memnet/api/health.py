"""``GET /v1/health``: unauthenticated, reports the backends in use, touches no user data."""

from __future__ import annotations

from memnet import bootstrap
from memnet.api.endpoint import endpoint
from memnet.api.http import ApiRequest, ApiResponse


@endpoint
def get_health(request: ApiRequest, request_id: str) -> ApiResponse:
    services = bootstrap.services()
    return ApiResponse.json(
        200,
        {
            "status": "ok",
            "storage": services.blobs.describe(),
            "queue": services.queue.describe(),
            "search": services.index.describe(),
            "auth": services.authenticator.describe(),
            "profiles": services.registry.profile_ids(),
        },
    )
