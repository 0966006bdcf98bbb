"""Great-circle distances in miles, and the latitude/longitude box around a circle.

One formula for every caller: the search index and the SQL path of property search both
call `miles` on float64 arrays, so a record's distance is the same bits whichever answers
(and so is whether it falls inside a radius, and its place in a `sort=distance` order).

`Circle` answers the same questions for many points with fewer passes over them: a few
multiplications (`Circle.nearness`) decide most points, and `miles` decides the others.
Its answers are those of `miles` (tests/kit/test_geodesy.py compares them on points at the
circle's edge).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

EARTH_RADIUS_MILES = 3958.7613
"""The mean radius of the Earth (IUGG, 6,371.0088 km) in miles."""

Floats = npt.NDArray[np.float64]
Booleans = npt.NDArray[np.bool_]
Indices = npt.NDArray[np.intp]

_HALF = math.pi / 360.0
"""Radians of half a degree."""
_ROUNDING = 1e-12
"""A bound, relative to the haversine term and to the points' spread in radians, on what
float64 rounding moves `miles`' term and `Circle.nearness`' stand-in (both some 1e-15)."""


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


@dataclass(frozen=True, slots=True)
class Circle:
    """The points within `radius` miles of (`latitude`, `longitude`), by `miles`.

    Why: `miles` makes some twenty passes over the points, four of them sines, cosines and
    arcsines. Its haversine term (`a`, the distance is 2R·asin(√a)) is, for points near the
    centre, u² + cos φ0·cos φ·v² with u, v half the latitude and longitude differences in
    radians; `nearness` takes u² + cos φ0·(cos φ0 - 2u·sin φ0)·v² instead (a first-order
    cos φ), which is within U⁴/3 + cos φ0·(V⁴/3 + 2U²V²) of it for |u| <= U, |v| <= V
    (|sin²x - x²| <= x⁴/3 for every x; the cosine's remainder is at most (2u)²/2). Past
    that bound and float64's rounding (`_ROUNDING`), the stand-in decides which side of
    the radius a point is and which of two points is nearer; `miles` decides the rest.
    """

    latitude: float
    longitude: float
    radius: float

    def nearness(self, lats: Floats, lons: Floats) -> tuple[Floats, float, float]:
        """Each point's stand-in for the haversine term, the bound on its distance from
        `miles`' term, and that term at the radius (the points inside have it at most),
        all three in square degrees (the term over (π/360)²: two passes fewer)."""
        u = np.subtract(lats, self.latitude)  # degrees
        v = np.subtract(lons, self.longitude)
        bound_u = float(max(self.latitude - lats.min(), lats.max() - self.latitude)) * _HALF
        bound_v = float(max(self.longitude - lons.min(), lons.max() - self.longitude)) * _HALF
        phi = math.radians(self.latitude)
        cos0, sin0 = math.cos(phi), math.sin(phi)
        term = np.multiply(u, -2.0 * cos0 * sin0 * _HALF)
        term += cos0 * cos0
        v *= v
        term *= v
        u *= u
        term += u
        uu, vv = bound_u * bound_u, bound_v * bound_v
        error = uu * uu / 3.0 + cos0 * (vv * vv / 3.0 + 2.0 * uu * vv)
        edge = math.sin(self.radius / (2.0 * EARTH_RADIUS_MILES)) ** 2
        error += _ROUNDING * (edge + bound_u + bound_v)
        if not math.isfinite(error):  # NaN: decides none
            error = math.inf
        scale = _HALF * _HALF
        return term, error / scale, edge / scale

    def holds(self, lats: Floats, lons: Floats) -> Booleans:
        """`miles(...) <= radius` of each point, computing `miles` only near the edge."""
        if not len(lats) or self.radius >= EARTH_RADIUS_MILES:  # arcs past a radian: all
            return miles(self.latitude, self.longitude, lats, lons) <= self.radius
        term, error, edge = self.nearness(lats, lons)
        kept: Booleans = term <= edge + error
        unsure = np.flatnonzero(kept & (term > edge - error))
        if len(unsure):
            far = miles(self.latitude, self.longitude, lats[unsure], lons[unsure])
            kept[unsure] = far <= self.radius
        return kept

    def nearest(self, lats: Floats, lons: Floats, count: int, farthest: bool) -> Indices:
        """The indices, ascending, of some of the points (all within the radius) that hold
        the `count` nearest by `miles` (`farthest`: the farthest), whichever way ties go:
        a point left out is strictly farther (nearer) by `miles` than `count` kept ones."""
        if count >= len(lats) or self.radius >= EARTH_RADIUS_MILES:
            return np.arange(len(lats))
        term, error, _ = self.nearness(lats, lons)
        # Twice the bound apart, two stand-ins order their terms; past four times it, the
        # terms differ by more than their rounding, and so do the distances.
        if farthest:
            cut = np.partition(term, len(term) - count)[len(term) - count]
            chosen: Indices = np.flatnonzero(term >= cut - 4.0 * error)
        else:
            cut = np.partition(term, count - 1)[count - 1]
            chosen = np.flatnonzero(term <= cut + 4.0 * error)
        return chosen
