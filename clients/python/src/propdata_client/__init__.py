"""Python client for the propdata API: US property records and ZIP-level market statistics.

```python
from propdata_client import Client

client = Client()  # reads PROPDATA_API_KEY and PROPDATA_BASE_URL
print(client.properties.get("syn-0000059"))
```
"""

from propdata_client._async import AsyncClient
from propdata_client._core import Record
from propdata_client._sync import Client
from propdata_client._version import __version__
from propdata_client.errors import (
    AmbiguousAddressError,
    APIConnectionError,
    AuthenticationError,
    InvalidParameterError,
    NotFoundError,
    PlanLimitError,
    PropdataError,
    QuotaExceededError,
    RateLimitError,
    ServiceUnavailableError,
    WebhookVerificationError,
)
from propdata_client.models import (
    AuthStatus,
    Candidate,
    ChangesMeta,
    ChangesPage,
    CreatedWebhook,
    Delivery,
    Event,
    EventsMeta,
    EventsPage,
    EventType,
    Export,
    ExportFile,
    Market,
    MarketHistory,
    Page,
    Property,
    PropertyChange,
    PropertyHistory,
    PropertyMatch,
    PropertyPage,
    PropertySummary,
    RateLimit,
    ReplayQueued,
    SavedSearch,
    SearchMeta,
    StreamedEvent,
    Valuation,
    Webhook,
    WebhookSecret,
)
from propdata_client.signing import sign_webhook, verify_webhook, webhook_headers

__all__ = [
    "APIConnectionError",
    "AmbiguousAddressError",
    "AsyncClient",
    "AuthStatus",
    "AuthenticationError",
    "Candidate",
    "ChangesMeta",
    "ChangesPage",
    "Client",
    "CreatedWebhook",
    "Delivery",
    "Event",
    "EventType",
    "EventsMeta",
    "EventsPage",
    "Export",
    "ExportFile",
    "InvalidParameterError",
    "Market",
    "MarketHistory",
    "NotFoundError",
    "Page",
    "PlanLimitError",
    "PropdataError",
    "Property",
    "PropertyChange",
    "PropertyHistory",
    "PropertyMatch",
    "PropertyPage",
    "PropertySummary",
    "QuotaExceededError",
    "RateLimit",
    "RateLimitError",
    "Record",
    "ReplayQueued",
    "SavedSearch",
    "SearchMeta",
    "ServiceUnavailableError",
    "StreamedEvent",
    "Valuation",
    "Webhook",
    "WebhookSecret",
    "WebhookVerificationError",
    "__version__",
    "sign_webhook",
    "verify_webhook",
    "webhook_headers",
]
