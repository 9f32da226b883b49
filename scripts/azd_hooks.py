"""azd hooks (azure.yaml), run on the deploying machine with the repository's virtual
environment as ``python -m scripts.azd_hooks <command>``. azd passes its environment (the
template's outputs, ``AZURE_SUBSCRIPTION_ID``, ``AZURE_TENANT_ID``, ``MEMNET_*``) as
environment variables. Every Azure call authenticates as azd's own login
(``AzureDeveloperCliCredential``): the template grants its roles to azd's principal
(``AZURE_PRINCIPAL_ID``), and another login on the machine (the ``az`` CLI's, a service
principal in the environment) may be someone else. docs/deploy.md, "Deploy".

``check`` (preprovision, predeploy): refuse to go on when the deployed app could not start
(:mod:`scripts.preflight`: the callers registry, the authentication settings).

``search-index`` (postprovision): create or update the Azure AI Search index from
``memnet/adapters/azure/search_index.json`` (an idempotent PUT) with the role Search
Service Contributor, assigned by the same provision: a role assignment can answer 403 for
minutes, so 403 (and the service being unavailable) is retried for up to 10 minutes.

``snapshot-events`` (postdeploy): subscribe the snapshot blob trigger to the storage
account's Event Grid topic. The webhook URL carries the host's ``blobs_extension`` system
key, which exists once the deployed code's host has started, and Event Grid validates
the endpoint when the subscription is created; so this waits for the key and retries
the creation (an idempotent PUT of one named subscription) for up to 10 minutes.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

from azure.core.credentials import TokenCredential
from azure.core.exceptions import ClientAuthenticationError, HttpResponseError

from memnet.adapters.azure.search import AzureSearchIndex
from memnet.ports import StorageError, StorageUnavailable
from scripts import preflight
from scripts.arm import TERMINAL, Arm, ArmError, masked
from scripts.retrying import GaveUp, Patience

WAIT = Patience(deadline_s=600)
SUBSCRIPTION_NAME = "memnet-snapshots"
BLOB_FUNCTION = "snapshot_written"  # function_app.py's blob trigger
WEB_API = "2024-04-01"
EVENTGRID_API = "2022-06-15"
Env = Mapping[str, str]


def azd_credential(env: Env) -> TokenCredential:
    """azd's login (``azd auth login``), in the environment's tenant."""
    from azure.identity import AzureDeveloperCliCredential

    return AzureDeveloperCliCredential(tenant_id=env.get("AZURE_TENANT_ID", ""), process_timeout=30)


def check(env: Env) -> int:
    found = preflight.problems(env)
    for problem in found:
        print(f"not deployable: {problem}", file=sys.stderr)
    return 1 if found else 0


# -- the search index ---------------------------------------------------------------------


def search_not_yet(error: Exception) -> str | None:
    """Why a failed index PUT is worth another try: the service was unavailable, or the
    role the provision just assigned is not in effect yet (403). No token at all (azd
    not signed in) is not worth waiting for."""
    cause = error.__cause__
    if isinstance(cause, ClientAuthenticationError) and cause.status_code is None:
        return None
    if isinstance(error, StorageUnavailable):
        return str(error)
    refused = isinstance(cause, HttpResponseError) and cause.status_code == 403
    if isinstance(error, StorageError) and refused:
        return "403: the Search Service Contributor role is not in effect yet"
    return None


def create_search_index(
    env: Env, index: AzureSearchIndex | None = None, wait: Patience = WAIT
) -> int:
    endpoint = env.get("MEMNET_SEARCH_ENDPOINT")
    if not endpoint:
        print("MEMNET_SEARCH_ENDPOINT is not set: run this as azd's postprovision hook")
        return 2
    name = env.get("MEMNET_SEARCH_INDEX", "memnet-events")
    index = index or AzureSearchIndex(endpoint, name, azd_credential(env))

    def put() -> bool:
        index.ensure_index()
        return True

    wait.until(f"search index {name}", put, search_not_yet)
    print(f"ready: {index.describe()}")
    return 0


# -- the snapshot Event Grid subscription ---------------------------------------------------


def site_id(env: Env) -> str:
    return (
        f"/subscriptions/{env['AZURE_SUBSCRIPTION_ID']}/resourceGroups/"
        f"{env['AZURE_RESOURCE_GROUP']}/providers/Microsoft.Web/sites/{env['AZURE_FUNCTION_APP_NAME']}"
    )


def topic_id(env: Env) -> str:
    return (
        f"/subscriptions/{env['AZURE_SUBSCRIPTION_ID']}/resourceGroups/"
        f"{env['AZURE_RESOURCE_GROUP']}/providers/Microsoft.EventGrid/systemTopics/"
        f"{env['MEMNET_EVENTGRID_TOPIC']}"
    )


def key_not_yet(error: Exception) -> str | None:
    """The host answers key requests with an error while it restarts on new code; a
    refusal (401, 403) is not going to change by waiting."""
    if isinstance(error, ArmError) and error.status not in (401, 403):
        return f"the host is not answering for its keys yet ({error.status} {error.code})"
    return None


def blobs_extension_key(arm: Arm, site: str) -> str | None:
    """The host's ``blobs_extension`` system key; None until the blob trigger's host
    has started and made it."""
    keys = arm.post(f"{site}/host/default/listkeys", WEB_API) or {}
    key = (keys.get("systemKeys") or {}).get("blobs_extension")
    return key if isinstance(key, str) and key else None


def subscription_body(function_url: str, key: str, container: str) -> dict[str, Any]:
    """BlobCreated events of the container's snapshot blobs
    (``tenants/{t}/users/{u}/snapshots/...json``), one per delivery, to the blob
    extension's webhook of :data:`BLOB_FUNCTION`. Document writes never wake it."""
    endpoint = (
        f"{function_url.rstrip('/')}/runtime/webhooks/blobs"
        f"?functionName=Host.Functions.{BLOB_FUNCTION}&code={key}"
    )
    return {
        "properties": {
            "destination": {
                "endpointType": "WebHook",
                "properties": {
                    "endpointUrl": endpoint,
                    "maxEventsPerBatch": 1,
                    "preferredBatchSizeInKilobytes": 64,
                },
            },
            "eventDeliverySchema": "EventGridSchema",
            "filter": {
                "includedEventTypes": ["Microsoft.Storage.BlobCreated"],
                "subjectBeginsWith": f"/blobServices/default/containers/{container}/blobs/tenants/",
                "subjectEndsWith": ".json",
                "advancedFilters": [
                    {"operatorType": "StringContains", "key": "subject", "values": ["/snapshots/"]}
                ],
            },
            "retryPolicy": {"maxDeliveryAttempts": 30, "eventTimeToLiveInMinutes": 1440},
        }
    }


def subscription_not_yet(error: Exception) -> str | None:
    """A creation worth another PUT: Event Grid could not validate the endpoint (the host
    restarting), or ARM was briefly unable; a malformed request or a refusal is not."""
    if not isinstance(error, ArmError):
        return None
    if "validat" in f"{error.code} {error}".lower() or error.status in (404, 409):
        return f"not accepted yet ({error.status} {error.code})"
    return f"ARM unavailable ({error.status})" if error.status >= 500 else None


def put_subscription(arm: Arm, topic: str, body: dict[str, Any], wait: Patience) -> bool | None:
    """PUT the subscription and wait for ARM's verdict: True when it succeeded, None when
    it failed (Event Grid's handshake with a host that was restarting) and is worth
    another PUT."""
    path = f"{topic}/eventSubscriptions/{SUBSCRIPTION_NAME}"
    status_url = arm.put(path, EVENTGRID_API, body).headers.get("Azure-AsyncOperation")

    def verdict() -> dict[str, Any] | None:
        found = arm.get_url(status_url) if status_url else arm.get(path, EVENTGRID_API)
        return found if state_of(found) in TERMINAL else None

    provisioning = dataclasses.replace(wait, deadline_s=180, first_pause_s=2, max_pause_s=15)
    outcome = provisioning.until("event subscription provisioning", verdict)
    if state_of(outcome) == "Succeeded":
        return True
    message = masked(str((outcome.get("error") or {}).get("message", "")))
    print(f"event subscription {state_of(outcome)}: {message}", flush=True)
    return None


def state_of(found: dict[str, Any]) -> str:
    """An async operation's ``status``, or a resource's ``provisioningState``."""
    return str(found.get("status") or (found.get("properties") or {}).get("provisioningState"))


def subscribe_snapshot_events(env: Env, arm: Arm | None = None, wait: Patience = WAIT) -> int:
    arm = arm or Arm(azd_credential(env))
    site = site_id(env)
    key = wait.until("blobs_extension key", lambda: blobs_extension_key(arm, site), key_not_yet)
    body = subscription_body(
        env["AZURE_FUNCTION_URL"], key, env.get("MEMNET_BLOB_CONTAINER", "memnet")
    )
    wait.until(
        f"event subscription {SUBSCRIPTION_NAME}",
        lambda: put_subscription(arm, topic_id(env), body, wait),
        subscription_not_yet,
    )
    print(f"snapshot events subscribed: {SUBSCRIPTION_NAME} -> {BLOB_FUNCTION}")
    return 0


COMMANDS: dict[str, Callable[[Env], int]] = {
    "check": check,
    "search-index": create_search_index,
    "snapshot-events": subscribe_snapshot_events,
}


def main(argv: list[str], env: Env | None = None) -> int:
    if len(argv) != 1 or argv[0] not in COMMANDS:
        print(f"usage: python -m scripts.azd_hooks {{{'|'.join(COMMANDS)}}}", file=sys.stderr)
        return 2
    try:
        return COMMANDS[argv[0]](os.environ if env is None else env)
    except (GaveUp, ArmError, StorageError, ClientAuthenticationError) as error:
        print(f"{argv[0]} failed: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
