"""One distance per point, whatever the arrays around it: both search paths rely on it."""

from __future__ import annotations

import math

import numpy as np

from propdata.kit.geodesy import EARTH_RADIUS_MILES, around, miles


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
