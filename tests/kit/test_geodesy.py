"""One distance per point, whatever the arrays around it: both search paths rely on it."""

from __future__ import annotations

import math

import numpy as np

from propdata.kit.geodesy import EARTH_RADIUS_MILES, Circle, around, miles


def test_a_point_s_distance_does_not_depend_on_its_neighbours() -> None:
    rng = np.random.default_rng(3)
    lats, lons = rng.uniform(18, 65, 20_011), rng.uniform(-170, -66, 20_011)
    whole = miles(40.1, -90.3, lats, lons)
    shuffled = rng.permutation(len(lats))
    assert np.array_equal(miles(40.1, -90.3, lats[shuffled], lons[shuffled]), whole[shuffled])
    for at in rng.integers(0, len(lats), 500).tolist():
        for start, stop in ((at, at + 1), (max(0, at - 5), at + 3), (at, at + 17)):
            part = miles(40.1, -90.3, lats[start:stop], lons[start:stop])
            assert part[at - start] == whole[at]  # bit for bit


def test_known_distances_and_nan() -> None:
    # One degree of longitude on the equator, a quarter of the way round, and no coordinates.
    found = miles(0.0, 0.0, np.array([0.0, 0.0, np.nan]), np.array([1.0, 90.0, 1.0]))
    assert math.isclose(found[0], EARTH_RADIUS_MILES * math.pi / 180, rel_tol=1e-12)
    assert math.isclose(found[1], EARTH_RADIUS_MILES * math.pi / 2, rel_tol=1e-12)
    assert math.isnan(found[2]) and not found[2] <= 100


def test_the_box_around_a_circle_holds_every_point_within_it() -> None:
    rng = np.random.default_rng(5)
    for lat, lon, radius in ((42.0, -93.6, 25.0), (64.8, -147.7, 100.0), (13.4, 144.8, 0.5),
                             (89.9, 0.0, 10.0), (51.9, -179.99, 50.0), (-14.3, -170.7, 3.0)):  # fmt: skip
        west, south, east, north = around(lat, lon, radius)
        spread = radius / 40.0
        lats = np.clip(lat + rng.uniform(-spread, spread, 50_000), -90, 90)
        lons = lon + rng.uniform(-spread * 4, spread * 4, 50_000)
        lons = (lons + 180.0) % 360.0 - 180.0
        inside = miles(lat, lon, lats, lons) <= radius
        assert inside.any()
        held = (lats >= south) & (lats <= north) & (lons >= west) & (lons <= east)
        assert not (inside & ~held).any(), (lat, lon, radius)


def _around_the_edge(
    rng: np.random.Generator, lat: float, lon: float, radius: float, count: int
) -> tuple[np.ndarray, np.ndarray]:
    """Points in the circle's box, a third of them within a few float64 steps of its edge
    (the distance `miles` gives them is the radius, or one or two bits off it)."""
    west, south, east, north = around(lat, lon, radius)
    lats = rng.uniform(south, north, count)
    lons = rng.uniform(west, east, count)
    edge = rng.permutation(count)[: count // 3]
    bearing = rng.uniform(0, 2 * math.pi, len(edge))
    near, far = np.zeros(len(edge)), np.full(len(edge), 2.0)
    for _ in range(80):  # bisect the fraction of the way out along each bearing
        middle = (near + far) / 2
        out = miles(lat, lon, lat + middle * (north - lat) * np.sin(bearing),
                    lon + middle * (east - lon) * np.cos(bearing)) > radius  # fmt: skip
        far, near = np.where(out, middle, far), np.where(out, near, middle)
    at = np.where(rng.random(len(edge)) < 0.5, near, far)
    lats[edge] = lat + at * (north - lat) * np.sin(bearing)
    lons[edge] = lon + at * (east - lon) * np.cos(bearing)
    return lats, lons


CIRCLES = ((42.0, -93.6, 25.0), (64.8, -147.7, 100.0), (13.4, 144.8, 0.5), (25.77, -80.19, 0.01),
           (89.9, 0.0, 10.0), (51.9, -179.99, 50.0), (-14.3, -170.7, 3.0), (0.0, 0.0, 99.9))  # fmt: skip


def test_a_circle_holds_exactly_the_points_miles_puts_within_it() -> None:
    rng = np.random.default_rng(11)
    for lat, lon, radius in CIRCLES:
        lats, lons = _around_the_edge(rng, lat, lon, radius, 30_000)
        inside = miles(lat, lon, lats, lons) <= radius
        assert 0 < inside.sum() < len(lats)
        assert np.array_equal(Circle(lat, lon, radius).holds(lats, lons), inside)
    nan = np.array([np.nan, 42.0])
    assert Circle(42.0, -93.6, 5.0).holds(nan, np.array([-93.6, np.nan])).tolist() == [False] * 2


def test_the_nearest_points_of_a_circle_are_among_those_it_keeps() -> None:
    rng = np.random.default_rng(13)
    for lat, lon, radius in CIRCLES:
        lats, lons = _around_the_edge(rng, lat, lon, radius, 20_000)
        circle = Circle(lat, lon, radius)
        inside = circle.holds(lats, lons)
        lats, lons = lats[inside], lons[inside]
        # Many equal distances: a tie at the cut must keep its rows whichever id wins.
        lats[::7], lons[::7] = lats[1], lons[1]
        far = miles(lat, lon, lats, lons)
        rows = np.arange(len(far))
        for count in (1, 10, 101, len(far) // 3):
            for farthest in (False, True):
                kept = circle.nearest(lats, lons, count, farthest)
                assert np.array_equal(kept, np.sort(kept))
                ranked = np.lexsort((rows, -far if farthest else far))[:count]
                assert np.isin(ranked, kept).all(), (lat, lon, radius, count, farthest)
    # Away from a pole and the 180th meridian, it keeps little more than those.
    west, south, east, north = around(42.0, -93.6, 25.0)
    lats, lons = rng.uniform(south, north, 20_000), rng.uniform(west, east, 20_000)
    circle = Circle(42.0, -93.6, 25.0)
    inside = circle.holds(lats, lons)
    for farthest in (False, True):
        assert len(circle.nearest(lats[inside], lons[inside], 10, farthest)) < 100
