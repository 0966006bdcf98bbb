"""Address keys: the same place in any USPS spelling meets; different places never do."""

from __future__ import annotations

import random

import pytest

from propdata.kit import addresses
from propdata.kit.addresses import city_key, street_key


@pytest.mark.parametrize(
    "spellings",
    [
        ["1510 First Avenue, Apt. 112", "1510 FIRST AVE #112", "1510 1st Ave Unit 112", "1510 First Av # 112"],
        ["123 North Main Street", "123 N. Main St.", "123 n main st", "123 North Main Str"],
        ["45 Oak Boulevard Suite 200", "45 OAK BLVD STE 200"],
        ["7 Elm Court Apartment B", "7 Elm Ct Apt B"],
        ["9 South-West Parkway", "9 SW Pkwy"],
    ],
)  # fmt: skip
def test_spellings_of_one_address_meet(spellings: list[str]) -> None:
    assert len({street_key(s) for s in spellings}) == 1, [street_key(s) for s in spellings]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("100 Front St", "100 Key St"), ("100 Front St", "100 Side St"),
        ("12 Upper Valley Rd", "12 Lower Valley Rd"), ("5 Main St Apt 1", "5 Main St Apt 2"),
        ("5 Main St", "5 Main Ave"), ("5 N Main St", "5 S Main St"), ("100 Lot Rd", "100 Pier Rd"),
    ],
)  # fmt: skip
def test_different_addresses_stay_apart(a: str, b: str) -> None:
    assert street_key(a) != street_key(b)


def test_street_words_that_are_also_unit_words_are_kept() -> None:
    assert street_key("100 Front St") == "100 FRONT ST"
    assert street_key("12 Upper Valley Rd") == "12 UPPER VLY RD"


def test_city_key() -> None:
    assert city_key("  st. louis ") == city_key("ST LOUIS") == "ST LOUIS"
    assert city_key("Winston-Salem") == "WINSTON SALEM"


def test_remembered_street_names_give_the_whole_pass_key() -> None:
    """`street_key` keys the text after a house number once; every line (a number or not,
    a unit, odd spacing, non-ASCII digits) gets the key of the whole token pass, whether
    the rest is remembered or not."""
    words = ["1", "12", "0", "N", "North", "First", "Apt", "#", "#5", "Unit", "B", "St",
             "Avenue", "Ave.", "5th", ",", "-", "/", "  ", "Suite", "12B", "١٢", "Rd", "½"]  # fmt: skip
    rng = random.Random(5)
    lines = ["1 ", "12 #", "12 # 5", "3 N", "3  #", "5 Apt 3", "7 Avenue B", "١٢ Main St"]
    for _ in range(3_000):
        head = rng.choice(["", " ", "1", "23 ", "4 ", "١٢ "])
        lines.append(head + " ".join(rng.choice(words) for _ in range(rng.randint(0, 6))))
    for line in lines + lines:  # the second time from what was remembered
        assert street_key(line) == addresses._street_key(line), line
