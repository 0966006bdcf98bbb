"""Great-circle distances in miles, and the latitude/longitude box around a circle.

One formula for every caller: the search index and the SQL path of property search both
call `miles` on float64 arrays, so a record's distance is the same bits whichever answers
(and so is whether it falls inside a radius, and its place in a `sort=distance` order).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

EARTH_RADIUS_MILES = 3958.7613
"""The mean radius of the Earth (IUGG, 6,371.0088 km) in miles."""

Floats = npt.NDArray[np.float64]


def miles(latitude: float, longitude: float, lats: Floats, lons: Floats) -> Floats:
    """Haversine distances in miles from one point to each of `lats`/`lons` (degrees).

    Element by element: a point's distance does not depend on the other points in the
    arrays, their number or their order (tests/kit/test_geodesy.py checks it bit for bit).
    A NaN coordinate gives NaN, which no radius test passes.

    >>> round(float(miles(42.0308, -93.6319, np.array([41.7431]), np.array([-92.7224]))[0]), 2)
    50.83
    """
    lat0 = np.radians(np.float64(latitude))
    lon0 = np.radians(np.float64(longitude))
    phi = np.radians(np.ascontiguousarray(lats, dtype=np.float64))
    lam = np.radians(np.ascontiguousarray(lons, dtype=np.float64))
    half_lat = np.sin((phi - lat0) * 0.5)
    half_lon = np.sin((lam - lon0) * 0.5)
    a = half_lat * half_lat + np.cos(lat0) * np.cos(phi) * (half_lon * half_lon)
    np.clip(a, 0.0, 1.0, out=a)
    result: Floats = (2.0 * EARTH_RADIUS_MILES) * np.arcsin(np.sqrt(a))
    return result


def around(latitude: float, longitude: float, radius: float) -> tuple[float, float, float, float]:
    """(west, south, east, north) of a box that holds every point within `radius` miles.

    A little larger than the exact box (a margin against rounding), so a point the exact
    distance puts inside the radius is never left out by the box; longitudes become the
    whole range [-180, 180] near a pole or when the circle crosses the 180th meridian.
    """
    angle = radius / EARTH_RADIUS_MILES  # radians of arc
    dlat = math.degrees(angle) * 1.001 + 1e-9
    south, north = max(-90.0, latitude - dlat), min(90.0, latitude + dlat)
    if south <= -90.0 or north >= 90.0:
        return -180.0, south, 180.0, north
    spread = math.sin(angle) / math.cos(math.radians(latitude))
    if spread >= 1.0:
        return -180.0, south, 180.0, north
    dlon = math.degrees(math.asin(spread)) * 1.001 + 1e-9
    west, east = longitude - dlon, longitude + dlon
    if west < -180.0 or east > 180.0:
        return -180.0, south, 180.0, north
    return west, south, east, north
