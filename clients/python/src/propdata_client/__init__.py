"""Python client for the propdata API: US property records and ZIP-level market statistics.

```python
from propdata_client import Client

client = Client()  # reads PROPDATA_API_KEY and PROPDATA_BASE_URL
print(client.properties.get("syn-0000062"))
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
    PropdataError,
    QuotaExceededError,
    RateLimitError,
    ServiceUnavailableError,
)
from propdata_client.models import (
    AuthStatus,
    Candidate,
    ChangesMeta,
    ChangesPage,
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
    SearchMeta,
    Valuation,
)

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
    "InvalidParameterError",
    "Market",
    "MarketHistory",
    "NotFoundError",
    "Page",
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
    "SearchMeta",
    "ServiceUnavailableError",
    "Valuation",
    "__version__",
]
