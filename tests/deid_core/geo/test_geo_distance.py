"""Spherical caps and their Hausdorff distance (El Emam & Arbuckle, ch. 9, "Round Earth"; docs/geography.md)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from deid_core.geo.distance import EARTH_RADIUS_KM as R
from deid_core.geo.distance import cap_hausdorff, cap_radius, great_circle, unit_vectors


def haversine(lat1, lon1, lat2, lon2):
    """Reference: the haversine formula the book names."""
    p1, p2, dl = math.radians(lat1), math.radians(lat2), math.radians(lon2 - lon1)
    a = math.sin((p2 - p1) / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * R * math.asin(math.sqrt(a))


def test_cap_radius_of_a_hemisphere_is_a_quarter_meridian():
    assert cap_radius(2 * math.pi * R * R) == math.pi * R / 2


def test_cap_radius_of_the_whole_sphere_and_of_nothing():
    assert cap_radius(4 * math.pi * R * R) == pytest.approx(math.pi * R, rel=1e-12)
    assert cap_radius(0.0) == 0.0


def test_small_cap_is_the_planar_disc():
    # r = R·arccos(1 − Z/(2πR²)) → √(Z/π) as Z/R² → 0
    for z in (0.25, 1.0, 100.0):
        assert cap_radius(z) == pytest.approx(math.sqrt(z / math.pi), rel=1e-6)


def test_cap_area_formula_inverts():
    theta = np.linspace(0.001, math.pi, 50)
    area = 2 * math.pi * R * R * (1 - np.cos(theta))
    assert np.allclose(cap_radius(area), R * theta, rtol=1e-9)


def test_great_circle_is_the_haversine_distance():
    rng = np.random.default_rng(3)
    lat, lon = rng.uniform(-89, 89, (2, 200)), rng.uniform(-180, 180, (2, 200))
    got = great_circle(unit_vectors(lat[0], lon[0]), unit_vectors(lat[1], lon[1]))
    ref = [haversine(lat[0, i], lon[0, i], lat[1, i], lon[1, i]) for i in range(200)]
    assert np.allclose(got, ref, rtol=1e-9, atol=1e-9)
    # one degree of longitude on the equator
    assert great_circle(unit_vectors(0, 0), unit_vectors(0, 1)) == pytest.approx(math.pi * R / 180, rel=1e-12)


def test_hausdorff_is_the_books_formula_for_real_areas():
    # max(c + rA − rB, c + rB − rA) = c + |rA − rB| whenever c + max(r) ≤ πR
    c, ra, rb = np.array([0.0, 3.0, 10.0, 2.5]), np.array([1.0, 1.0, 0.0, 5.64]), np.array([1.0, 2.0, 4.0, 0.56])
    assert np.array_equal(cap_hausdorff(c, ra, rb), np.maximum(c + ra - rb, c + rb - ra))
    assert cap_hausdorff(0.0, 2.0, 2.0) == 0.0  # a cap and itself
    assert cap_hausdorff(0.0, 1.0, 3.0) == 2.0  # same centre: the difference of radii
    assert cap_hausdorff(7.0, 0.0, 0.0) == 7.0  # points: the distance
    assert np.array_equal(cap_hausdorff(c, ra, rb), cap_hausdorff(c, rb, ra))  # symmetric


def test_hausdorff_never_exceeds_half_a_great_circle():
    # a hemisphere around the north pole and the south pole: the north pole is πR from the south pole;
    # the book's c + |rA − rB| would say 1.5πR, farther than any two points of the sphere
    hemi = cap_radius(2 * math.pi * R * R)
    assert cap_hausdorff(math.pi * R, hemi, 0.0) == pytest.approx(math.pi * R, rel=1e-12)
    # two antipodal hemispheres: each one's pole is a quarter meridian beyond the other
    assert cap_hausdorff(math.pi * R, hemi, hemi) == pytest.approx(math.pi * R / 2, rel=1e-12)


def test_larger_neighbour_is_farther():
    # the book's point: of two neighbours at the same centre distance, the one of similar size is nearer
    small, big = cap_radius(1.0), cap_radius(100.0)
    assert cap_hausdorff(2.0, small, small) < cap_hausdorff(2.0, small, big)
