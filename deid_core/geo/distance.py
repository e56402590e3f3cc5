"""Distances on a spherical Earth: great-circle distance, the radius of an equal-area spherical cap and the
Hausdorff distance between two caps (El Emam & Arbuckle, *Anonymizing Health Data*, ch. 9, "Circle of
Neighbors" and "Round Earth"; docs/geography.md, "Distance").

Points are unit vectors (x, y, z); the great-circle distance is ``R·atan2(|u×v|, u·v)``, the same distance
as the haversine formula the book names, accurate for near, far and antipodal points alike. Lengths are in
kilometres, areas in square kilometres.
"""
from __future__ import annotations

import numpy as np

#: Mean radius of the Earth (IUGG), km. The book takes the radius as a constant.
EARTH_RADIUS_KM = 6371.0088


def unit_vectors(lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
    """``(n, 3)`` unit vectors of latitudes and longitudes in degrees."""
    la, lo = np.radians(np.asarray(lat, dtype=float)), np.radians(np.asarray(lon, dtype=float))
    cl = np.cos(la)
    return np.column_stack([cl * np.cos(lo), cl * np.sin(lo), np.sin(la)])


def normalize(v: np.ndarray) -> np.ndarray:
    """Rows of ``v`` scaled to unit length (a weighted sum of unit vectors -> its direction)."""
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def great_circle(u: np.ndarray, v: np.ndarray, radius: float = EARTH_RADIUS_KM) -> np.ndarray:
    """Great-circle distance between unit vectors ``u`` and ``v`` (row by row, broadcasting)."""
    cross = np.linalg.norm(np.cross(u, v), axis=-1)
    return radius * np.arctan2(cross, np.sum(u * v, axis=-1))


def cap_radius(area_km2: np.ndarray, radius: float = EARTH_RADIUS_KM) -> np.ndarray:
    """Geodesic radius of the spherical cap of area ``Z``: ``r = R·arccos(1 − Z/(2πR²))``.

    A cap of angular radius θ has area ``2πR²(1 − cos θ)``; a hemisphere (``Z = 2πR²``) has ``r = πR/2``,
    the whole sphere ``r = πR``; a small area has ``r ≈ √(Z/π)``, the planar disc.
    """
    z = np.asarray(area_km2, dtype=float)
    return radius * np.arccos(np.clip(1.0 - z / (2.0 * np.pi * radius * radius), -1.0, 1.0))


def cap_hausdorff(c: np.ndarray, ra: np.ndarray, rb: np.ndarray, radius: float = EARTH_RADIUS_KM) -> np.ndarray:
    """Hausdorff distance between caps of radii ``ra``, ``rb`` whose centres are ``c`` apart (all geodesic).

    The farthest point of cap A from cap B lies ``min(c + ra, πR) − rb`` from B (the antipode of B's centre
    is as far as one can get), and the other way round; the Hausdorff distance is the larger of the two,
    never below 0. Where ``c + max(ra, rb) ≤ πR`` — every pair of real census areas — this is the book's
    ``max(c + rA − rB, c + rB − rA)`` exactly.
    """
    half = np.pi * radius
    c, ra, rb = np.asarray(c, dtype=float), np.asarray(ra, dtype=float), np.asarray(rb, dtype=float)
    ab = np.minimum(c + ra, half) - rb
    ba = np.minimum(c + rb, half) - ra
    return np.maximum(np.maximum(ab, ba), 0.0)
