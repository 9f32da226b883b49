"""azd hooks (azure.yaml), run on the deploying machine with the repo's virtual environment.

``search-index`` (postprovision): create or update the Azure AI Search index from
``memnet/adapters/azure/search_index.json`` (an idempotent PUT) as the deploying principal,
who holds Search Service Contributor (bicep/modules/roles.bicep); the app's identity only
holds Search Index Data Contributor. azd passes the template outputs as environment
variables (MEMNET_SEARCH_ENDPOINT, MEMNET_SEARCH_INDEX); DefaultAzureCredential picks up
the ``azd auth login`` session.

``snapshot-events`` (postdeploy): the Event Grid subscription of the snapshot blob trigger
can only be created once the code runs (its webhook carries the host's blobs_extension
key and Event Grid validates it), so on the first deploy this sets
MEMNET_SNAPSHOT_SUBSCRIPTION=true in the azd environment and provisions again; later
deploys find it set and do nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SUBSCRIPTION_FLAG = "MEMNET_SNAPSHOT_SUBSCRIPTION"


def create_search_index() -> int:
    from memnet.adapters.azure.search import AzureSearchIndex

    endpoint = os.environ.get("MEMNET_SEARCH_ENDPOINT")
    if not endpoint:
        print("MEMNET_SEARCH_ENDPOINT is not set: run this as azd's postprovision hook")
        return 2
    index = AzureSearchIndex.from_settings(
        endpoint, os.environ.get("MEMNET_SEARCH_INDEX", "memnet-events")
    )
    index.ensure_index()
    print(f"ready: {index.describe()}")
    return 0


def subscribe_snapshot_events() -> int:
    if os.environ.get(SUBSCRIPTION_FLAG, "").lower() == "true":
        print("snapshot Event Grid subscription already provisioned")
        return 0
    subprocess.run(["azd", "env", "set", SUBSCRIPTION_FLAG, "true"], check=True)
    return subprocess.run(["azd", "provision", "--no-prompt"], check=False).returncode


COMMANDS = {"search-index": create_search_index, "snapshot-events": subscribe_snapshot_events}


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in COMMANDS:
        print(f"usage: postprovision.py {{{'|'.join(COMMANDS)}}}", file=sys.stderr)
        return 2
    return COMMANDS[argv[0]]()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
