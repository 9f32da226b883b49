"""Request quotas across two function instances on Azure Blob (Azurite): each instance
has its own client to one container, and threads in both hammer one user's quota. The
shared counter's ETag compare-and-swap keeps the total within the limit."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from memnet.adapters.azure.blobstore import AzureBlobStore
from memnet.domain.errors import TooManyRequests
from memnet.services.governance.quotas import QuotaLimits, Quotas, batch_size
from tests.azurite import Azurite
from tests.unit.test_quotas import Clock, hammer

pytestmark = pytest.mark.azurite
LIMIT = 120


@pytest.fixture
def instances(azurite: Azurite) -> Iterator[list[AzureBlobStore]]:
    """Two stores, two clients, one fresh container."""
    container = f"quotas-{uuid.uuid4().hex}"
    stores = [
        AzureBlobStore.from_connection_string(azurite.blob_connection_string, container)
        for _ in range(2)
    ]
    stores[0].ensure_container()
    yield stores


def test_two_instances_on_azure_admit_at_most_the_limit(instances: list[AzureBlobStore]) -> None:
    clock = Clock()
    quotas = [Quotas(store, clock, QuotaLimits(user_requests=LIMIT)) for store in instances]
    total = hammer(quotas, threads=4, attempts=40)
    assert LIMIT - len(quotas) * batch_size(LIMIT) <= total <= LIMIT
    [name] = instances[0].list_names("_quotas/")
    assert b'"reserved": 120' in instances[1].read(name).data


def test_a_spent_counter_is_refused_by_the_other_instance(instances: list[AzureBlobStore]) -> None:
    clock = Clock()
    first, second = (Quotas(store, clock, QuotaLimits(service_writes=3)) for store in instances)
    for _ in range(3):
        first.charge("svc", None, None, write=True)
    with pytest.raises(TooManyRequests):
        second.charge("svc", None, None, write=True)
