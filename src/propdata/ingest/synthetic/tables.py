"""The synthetic set's data tables: state price levels, tax rates and populations, street
names, and the distributions of property types, ages and listing sources."""

from __future__ import annotations

import itertools

from propdata.properties import lifecycle
from propdata.properties.schemas import PropertyType, Source

HORIZON_DAYS = 3_650
"""Histories reach back at most ten years before as_of."""
RECORDS_PER_ZIP = 150
MEAN_GAP_DAYS = 1_000
"""Mean idle time between two episodes of one property (renewal process)."""
SOLD_DAYS = lifecycle.SOLD_EXPIRY_DAYS

STATES: dict[str, tuple[int, float, float]] = {
    "AL": (225_000, 0.0040, 5.02), "AK": (355_000, 0.0104, 0.73), "AZ": (425_000, 0.0052, 7.15),
    "AR": (205_000, 0.0057, 3.01), "CA": (760_000, 0.0071, 39.54), "CO": (545_000, 0.0049, 5.77),
    "CT": (395_000, 0.0179, 3.61), "DE": (375_000, 0.0056, 0.99), "DC": (610_000, 0.0057, 0.69),
    "FL": (395_000, 0.0082, 21.54), "GA": (320_000, 0.0083, 10.71), "HI": (830_000, 0.0027, 1.46),
    "ID": (455_000, 0.0056, 1.84), "IL": (265_000, 0.0208, 12.81), "IN": (240_000, 0.0077, 6.79),
    "IA": (220_000, 0.0143, 3.19), "KS": (225_000, 0.0134, 2.94), "KY": (200_000, 0.0080, 4.51),
    "LA": (195_000, 0.0055, 4.66), "ME": (390_000, 0.0109, 1.36), "MD": (415_000, 0.0100, 6.18),
    "MA": (620_000, 0.0112, 7.03), "MI": (240_000, 0.0132, 10.08), "MN": (330_000, 0.0105, 5.71),
    "MS": (175_000, 0.0075, 2.96), "MO": (245_000, 0.0091, 6.15), "MT": (455_000, 0.0069, 1.08),
    "NE": (255_000, 0.0154, 1.96), "NV": (430_000, 0.0055, 3.10), "NH": (480_000, 0.0177, 1.38),
    "NJ": (520_000, 0.0223, 9.29), "NM": (305_000, 0.0067, 2.12), "NY": (470_000, 0.0140, 20.20),
    "NC": (325_000, 0.0073, 10.44), "ND": (255_000, 0.0099, 0.78), "OH": (225_000, 0.0141, 11.80),
    "OK": (200_000, 0.0085, 3.96), "OR": (495_000, 0.0086, 4.24), "PA": (265_000, 0.0136, 13.00),
    "RI": (465_000, 0.0132, 1.10), "SC": (295_000, 0.0053, 5.12), "SD": (300_000, 0.0114, 0.89),
    "TN": (315_000, 0.0056, 6.91), "TX": (300_000, 0.0160, 29.15), "UT": (530_000, 0.0052, 3.27),
    "VT": (390_000, 0.0171, 0.64), "VA": (385_000, 0.0080, 8.63), "WA": (590_000, 0.0087, 7.71),
    "WV": (165_000, 0.0055, 1.79), "WI": (295_000, 0.0151, 5.89), "WY": (345_000, 0.0056, 0.58),
}  # fmt: skip
"""Each state's typical home value, USD (rounded, mid-2020s); its effective property-tax rate;
its 2020 census population, millions, which decides how many records the state gets."""
STATE_PRICE = {state: price for state, (price, _, _) in STATES.items()}
STATE_TAX_RATE = {state: rate for state, (_, rate, _) in STATES.items()}
STATE_POPULATION = {state: people for state, (_, _, people) in STATES.items()}

STREET_NAMES = (
    "Main", "Oak", "Maple", "Pine", "Cedar", "Elm", "Walnut", "Willow", "Birch", "Cherry",
    "Chestnut", "Hickory", "Spruce", "Magnolia", "Poplar", "Sycamore", "Aspen", "Dogwood",
    "Laurel", "Juniper", "Holly", "Linden", "Cypress", "Redwood", "Hawthorn", "Park", "Lake",
    "Hill", "Church", "Mill", "Center", "Spring", "River", "Ridge", "Sunset", "Highland",
    "Meadow", "Forest", "Valley", "Prospect", "Pleasant", "Union", "Market", "Broad", "Water",
    "Bridge", "School", "College", "Academy", "High", "Front", "Locust", "Green", "Washington",
    "Lincoln", "Jefferson", "Madison", "Adams", "Jackson", "Monroe", "Franklin", "Grant",
    "Wilson", "Harrison", "Cleveland", "Hamilton", "Lafayette", "Clinton", "Garfield",
    "Kennedy", "Roosevelt", "Taylor", "Hayes", "Polk", "Pierce", "Fillmore", "Tyler",
    "Sheridan", "Sherman", "Liberty", "Independence", "Heritage", "Fairview", "Greenwood",
    "Oakwood", "Lakeview", "Riverside", "Woodland", "Hillcrest", "Brookside", "Country Club",
    "Orchard", "Vine", "Rose", "Lilac", "Sunrise", "Cottage", "Mountain View", "Bay",
    "Harbor", "Canyon", "Mesa", "Prairie", "Summit", "Crescent", "Colonial", "Victoria",
    "Windsor", "Cambridge", "Oxford", "Devon", "Kingston", "Stratford", "Wellington",
    "Chapel", "Mulberry", "Peach", "Apple", "Pecan", "Evergreen", "Glen", "Mockingbird",
    "Cardinal", "Bluebird", "Quail", "Deer", "Fox", "Eagle", "Hunters", "Meadowbrook",
    "Stonegate", "Westwood", "Eastwood", "Northwood", "Southgate", "Greenbriar", "Briarwood",
    "1st", "2nd", "3rd", "4th", "5th", "6th", "7th", "8th", "9th", "10th", "11th", "12th",
    "13th", "14th", "15th", "16th", "17th", "18th", "19th", "20th", "21st", "22nd", "23rd",
    "24th", "25th", "30th", "32nd", "40th", "42nd", "50th",
)  # fmt: skip
STREET_SUFFIXES = ("St", "Ave", "Dr", "Rd", "Ln", "Ct", "Way", "Pl", "Blvd", "Cir", "Ter",
                   "Trl", "Pkwy", "Loop")  # fmt: skip
SUFFIX_CUMULATIVE = tuple(itertools.accumulate((25, 18, 14, 12, 8, 6, 5, 4, 3, 3, 2, 2, 1, 1)))
DIRECTIONS = ("N", "S", "E", "W", "NE", "NW", "SE", "SW")
DIRECTION_CUMULATIVE = tuple(itertools.accumulate((5, 5, 5, 5, 1, 1, 1, 1)))

PROPERTY_TYPES: tuple[PropertyType, ...] = ("singleFamily", "condo", "townhouse", "multiFamily",
                                            "land")  # fmt: skip
# Share of each type at density 0 (rural) and the change towards density 1 (urban core).
TYPE_BASE = (0.72, 0.05, 0.07, 0.06, 0.10)
TYPE_SLOPE = (-0.30, 0.24, 0.05, 0.06, -0.05)

# Year built: (first year, last year, weight) as seen from BAND_YEAR; the US stock leans to
# 1950-2010. A home's age in years is drawn from them, the same on any build day; its year
# built is the build day's year minus that age.
BAND_YEAR = 2026
NEW_YEARS = 2
"""A home at most this many years old, sold on its first listing, is newConstruction."""
YEAR_BANDS = (
    (1880, 1939),
    (1940, 1949),
    (1950, 1959),
    (1960, 1969),
    (1970, 1979),
    (1980, 1989),
    (1990, 1999),
    (2000, 2009),
    (2010, 2100),
)
YEAR_CUMULATIVE = tuple(itertools.accumulate((13, 5, 10, 10, 15, 13, 13, 14, 7)))

LISTING_SOURCES: tuple[Source, ...] = ("mls", "agent", "owner")
SALE_SOURCES = (0.80, 0.92, 1.0)  # running shares: mls, agent, owner (for sale by owner)
RENT_SOURCES = (0.45, 0.70, 1.0)

KM_LAT = 1 / 111.32
"""Degrees of latitude per km."""
