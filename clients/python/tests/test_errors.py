"""Each API error as its class, with the code, status and request id of the answer."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from propdata_client import (
    AmbiguousAddressError,
    AsyncClient,
    AuthenticationError,
    Client,
    InvalidParameterError,
    NotFoundError,
    PropdataError,
)
from propdata_client.errors import error_for

pytestmark = pytest.mark.slow

if TYPE_CHECKING:
    from conftest import Live


class NoSleep:
    """A sleep hook that records the waits it is asked for; an error that is not retried
    never asks."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def client_for(live: Live, key: str, sleep: NoSleep) -> Client:
    return Client(api_key=key, base_url=live.base_url, sleep=sleep)


def test_401_invalid_and_revoked_keys(live: Live) -> None:
    sleep = NoSleep()
    with client_for(live, "pmd_live_notakeyatall", sleep) as client:
        with pytest.raises(AuthenticationError) as caught:
            client.properties.get("t-001")
        error = caught.value
        assert (error.code, error.status) == ("invalid_api_key", 401)
        assert error.request_id is not None and error.request_id.startswith("req_")
        assert client.last_rate_limit is None  # a 401 describes no key's limits
    revoked = live.key("free")
    live.revoke(revoked)
    with client_for(live, revoked, sleep) as client, pytest.raises(AuthenticationError) as caught:
        client.auth.status()
    assert (caught.value.code, caught.value.status) == ("revoked_api_key", 401)
    assert sleep.waits == []


def test_404_not_found(live: Live, key: str) -> None:
    sleep = NoSleep()
    with client_for(live, key, sleep) as client:
        with pytest.raises(NotFoundError) as caught:
            client.properties.get("no-such-id")
        assert (caught.value.code, caught.value.status) == ("not_found", 404)
        assert "no-such-id" in caught.value.message
        with pytest.raises(NotFoundError):
            client.properties.lookup("1 Nowhere Lane", "Ames", "IA")
        with pytest.raises(NotFoundError):
            client.properties.history("no-such-id")
        with pytest.raises(NotFoundError):
            client.markets.get("99999")
        assert client.last_rate_limit is not None  # a 404 still carries the key's limits
    assert sleep.waits == []  # never retried


def test_400_names_the_parameter(live: Live, key: str) -> None:
    sleep = NoSleep()
    with client_for(live, key, sleep) as client:
        cases: list[tuple[Callable[[], object], str | None]] = [
            (lambda: client.markets.history("50010", months=61), "months"),
            (lambda: client.properties.search(limit=0), "limit"),
            (lambda: client.properties.search(min_price=5, max_price=1), None),
            (lambda: client.markets.get("5001"), "zipCode"),
            (lambda: client.properties.lookup("", "Ames", "IA"), "streetAddress"),
        ]
        for call, parameter in cases:
            with pytest.raises(InvalidParameterError) as caught:
                call()
            error = caught.value
            assert (error.code, error.status) == ("invalid_parameter", 400)
            assert error.parameter is not None
            if parameter is not None:
                assert error.parameter == parameter, error
            assert error.request_id and error.request_id.startswith("req_")
    assert sleep.waits == []


def test_409_carries_the_candidate_zip_codes(live: Live, key: str) -> None:
    sleep = NoSleep()
    with client_for(live, key, sleep) as client:
        with pytest.raises(AmbiguousAddressError) as caught:
            client.properties.lookup("5 Broadway", "New York", "NY")
        error = caught.value
        assert (error.code, error.status) == ("ambiguous_address", 409)
        assert error.zip_codes == ["10001", "10002"] and error.property_ids == []
        assert client.properties.lookup("5 Broadway", "New York", "NY", zip_code=error.zip_codes[1]).id == "t-041"  # fmt: skip
        assert [(c.id, c.address.zip_code) for c in error.candidates] == [
            ("t-040", "10001"),
            ("t-041", "10002"),
        ]
        assert error.candidates[0].address.street_address == "5 Broadway"
    assert sleep.waits == []


def test_404_for_another_unit_carries_the_candidates(live: Live, key: str) -> None:
    with client_for(live, key, NoSleep()) as client:
        with pytest.raises(NotFoundError) as caught:
            client.properties.lookup("100 Oak Street Apt 9", "Ames", "IA")
        assert [c.id for c in caught.value.candidates] == ["t-000"]
        assert caught.value.candidates[0].address.city == "Ames"
        with pytest.raises(NotFoundError) as caught:
            client.properties.lookup("1 Nowhere Lane", "Ames", "IA")
        assert caught.value.candidates == []


def test_lookup_by_zip_code_or_one_line(live: Live, key: str) -> None:
    with client_for(live, key, NoSleep()) as client:
        assert client.properties.lookup("100 Oak Street", zip_code="50010-1234").id == "t-000"
        assert client.properties.lookup(address="100 Oak St, Ames, IA 50010").id == "t-000"


def test_409_in_one_zip_code_carries_the_ids() -> None:
    """The other 409 the service answers (docs/api.md): several properties in one ZIP code."""
    error = error_for(
        409,
        "ambiguous_address",
        "The address matches 2 properties in ZIP code 50112 (doc-3, doc-4); add the unit to "
        "the street address.",
        request_id="req_0",
    )
    assert isinstance(error, AmbiguousAddressError)
    assert error.zip_codes == ["50112"] and error.property_ids == ["doc-3", "doc-4"]


async def test_async_errors(live: Live, key: str) -> None:
    async with AsyncClient(api_key=key, base_url=live.base_url) as client:
        with pytest.raises(NotFoundError):
            await client.properties.valuation("no-such-id")
        with pytest.raises(AmbiguousAddressError) as caught:
            await client.properties.lookup("5 broadway", "new york", "ny")
        assert caught.value.zip_codes == ["10001", "10002"]
        with pytest.raises(InvalidParameterError) as bad:
            await client.markets.search(zip_code="abc")
        assert bad.value.parameter == "zipCode"
    async with AsyncClient(api_key="pmd_live_nope", base_url=live.base_url) as client:
        with pytest.raises(AuthenticationError):
            await client.auth.status()


def test_every_error_is_a_propdata_error_with_its_fields() -> None:
    error = error_for(500, "internal_error", "boom", request_id="req_1")
    assert type(error) is PropdataError and error.status == 500 and error.request_id == "req_1"
    assert "code=internal_error" in str(error) and "req_1" in str(error)
