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

# Typical home value by state, USD (rounded, mid-2020s), and effective property-tax rate.
STATE_PRICE: dict[str, int] = {
    "AL": 225_000, "AK": 355_000, "AZ": 425_000, "AR": 205_000, "CA": 760_000,
    "CO": 545_000, "CT": 395_000, "DE": 375_000, "DC": 610_000, "FL": 395_000,
    "GA": 320_000, "HI": 830_000, "ID": 455_000, "IL": 265_000, "IN": 240_000,
    "IA": 220_000, "KS": 225_000, "KY": 200_000, "LA": 195_000, "ME": 390_000,
    "MD": 415_000, "MA": 620_000, "MI": 240_000, "MN": 330_000, "MS": 175_000,
    "MO": 245_000, "MT": 455_000, "NE": 255_000, "NV": 430_000, "NH": 480_000,
    "NJ": 520_000, "NM": 305_000, "NY": 470_000, "NC": 325_000, "ND": 255_000,
    "OH": 225_000, "OK": 200_000, "OR": 495_000, "PA": 265_000, "RI": 465_000,
    "SC": 295_000, "SD": 300_000, "TN": 315_000, "TX": 300_000, "UT": 530_000,
    "VT": 390_000, "VA": 385_000, "WA": 590_000, "WV": 165_000, "WI": 295_000,
    "WY": 345_000,
}  # fmt: skip
STATE_TAX_RATE: dict[str, float] = {
    "AL": 0.0040, "AK": 0.0104, "AZ": 0.0052, "AR": 0.0057, "CA": 0.0071,
    "CO": 0.0049, "CT": 0.0179, "DE": 0.0056, "DC": 0.0057, "FL": 0.0082,
    "GA": 0.0083, "HI": 0.0027, "ID": 0.0056, "IL": 0.0208, "IN": 0.0077,
    "IA": 0.0143, "KS": 0.0134, "KY": 0.0080, "LA": 0.0055, "ME": 0.0109,
    "MD": 0.0100, "MA": 0.0112, "MI": 0.0132, "MN": 0.0105, "MS": 0.0075,
    "MO": 0.0091, "MT": 0.0069, "NE": 0.0154, "NV": 0.0055, "NH": 0.0177,
    "NJ": 0.0223, "NM": 0.0067, "NY": 0.0140, "NC": 0.0073, "ND": 0.0099,
    "OH": 0.0141, "OK": 0.0085, "OR": 0.0086, "PA": 0.0136, "RI": 0.0132,
    "SC": 0.0053, "SD": 0.0114, "TN": 0.0056, "TX": 0.0160, "UT": 0.0052,
    "VT": 0.0171, "VA": 0.0080, "WA": 0.0087, "WV": 0.0055, "WI": 0.0151,
    "WY": 0.0056,
}  # fmt: skip
# 2020 census population, millions: decides how many records each state gets.
STATE_POPULATION: dict[str, float] = {
    "AL": 5.02, "AK": 0.73, "AZ": 7.15, "AR": 3.01, "CA": 39.54, "CO": 5.77, "CT": 3.61,
    "DE": 0.99, "DC": 0.69, "FL": 21.54, "GA": 10.71, "HI": 1.46, "ID": 1.84, "IL": 12.81,
    "IN": 6.79, "IA": 3.19, "KS": 2.94, "KY": 4.51, "LA": 4.66, "ME": 1.36, "MD": 6.18,
    "MA": 7.03, "MI": 10.08, "MN": 5.71, "MS": 2.96, "MO": 6.15, "MT": 1.08, "NE": 1.96,
    "NV": 3.10, "NH": 1.38, "NJ": 9.29, "NM": 2.12, "NY": 20.20, "NC": 10.44, "ND": 0.78,
    "OH": 11.80, "OK": 3.96, "OR": 4.24, "PA": 13.00, "RI": 1.10, "SC": 5.12, "SD": 0.89,
    "TN": 6.91, "TX": 29.15, "UT": 3.27, "VT": 0.64, "VA": 8.63, "WA": 7.71, "WV": 1.79,
    "WI": 5.89, "WY": 0.58,
}  # fmt: skip

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
