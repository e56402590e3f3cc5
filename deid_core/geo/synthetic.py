"""Synthetic area tables and claims for tests, examples and benchmarks (docs/geography.md, "The area table").

A rectangular grid of ``rows × cols`` areas whose cells are small in the middle (a city) and large at the
edges (countryside); population density falls off with the distance to the centre, so central areas are
small and populous and outer ones large and nearly empty. Ids are 5 characters like US ZIP codes: 3 for a
block of ``block × block`` cells (a "3-digit ZIP") and 2 for the cell in it; the first blocks start with
``0`` (ids like ``00012`` keep their leading zeros). Adjacent cells (sharing a side) are neighbors.

Claims: persons live in areas drawn in proportion to population; providers sit in areas drawn the same
way; each person sees one to four providers, a provider ``d`` km away chosen with weight ``exp(−d/5)``
(people see providers near home), with one to three visits per provider and one to three claims per visit.

    python -m deid_core.geo.synthetic --rows 12 --cols 12 --seed 1 --out areas.csv [--claims C.csv --persons N]
"""
from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

KM_PER_DEGREE = 111.195  # great-circle km per degree of latitude on the mean-radius sphere


def _widths(count: int, base_km: float) -> np.ndarray:
    """Cell widths along one axis: ``base·(0.25 + 1.75·|t|^1.5)`` for t from -1 to 1 (small in the middle)."""
    t = np.linspace(-1.0, 1.0, count)
    return base_km * (0.25 + 1.75 * np.abs(t) ** 1.5)


def synthetic_areas(rows: int = 12, cols: int = 12, seed: int = 0, lat0: float = 42.3, lon0: float = -71.1,
                    base_km: float = 2.0, block: int = 10, peak_density: float = 4000.0) -> pd.DataFrame:
    """The area table (``id, lat, lon, population, area_km2, neighbors``), all columns as text."""
    if rows < 1 or cols < 1 or block < 1 or block > 10:
        raise ValueError("rows, cols >= 1 and 1 <= block <= 10")
    rng = np.random.default_rng(seed)
    wy, wx = _widths(rows, base_km), _widths(cols, base_km)
    y = np.cumsum(wy) - wy / 2 - wy.sum() / 2
    x = np.cumsum(wx) - wx / 2 - wx.sum() / 2
    r, c = np.divmod(np.arange(rows * cols), cols)
    yk, xk = y[r], x[c]
    area = wy[r] * wx[c]
    lat = lat0 + yk / KM_PER_DEGREE
    lon = lon0 + xk / (KM_PER_DEGREE * np.cos(np.radians(lat)))
    density = peak_density * np.exp(-np.hypot(xk, yk) / 8.0) + 5.0
    pop = rng.poisson(density * area * rng.lognormal(0.0, 0.6, rows * cols))
    blocks_per_row = -(-cols // block)
    blk = (r // block) * blocks_per_row + c // block
    cell = (r % block) * block + c % block
    if blk.max() > 999:
        raise ValueError(f"{rows}x{cols} cells in blocks of {block} need more than 1,000 3-character prefixes")
    ids = pd.Series(blk).astype("str").str.zfill(3) + pd.Series(cell).astype("str").str.zfill(2)
    # neighbors sharing a side
    idx = np.arange(rows * cols)
    pairs = [np.column_stack([idx[c < cols - 1], idx[c < cols - 1] + 1]),
             np.column_stack([idx[r < rows - 1], idx[r < rows - 1] + cols])]
    e = np.vstack(pairs)
    both = np.vstack([e, e[:, ::-1]])
    nb = pd.Series(ids.to_numpy()[both[:, 1]], index=both[:, 0]).sort_index(kind="stable")
    neighbors = nb.groupby(level=0).agg(";".join).reindex(idx, fill_value="")
    return pd.DataFrame({"id": ids, "lat": pd.Series(lat).map("{:.6f}".format),
                         "lon": pd.Series(lon).map("{:.6f}".format), "population": pd.Series(pop).astype("str"),
                         "area_km2": pd.Series(area).map("{:.4f}".format), "neighbors": neighbors.to_numpy()})


def synthetic_claims(areas: pd.DataFrame, persons: int = 500, providers: int = 40, seed: int = 0
                     ) -> pd.DataFrame:
    """Claims ``person, zip, provider, provider_zip, visit, claim`` over an area table (see the module docstring)."""
    from .distance import great_circle, unit_vectors
    from .ragged import ranges

    rng = np.random.default_rng(seed)
    pop = areas["population"].astype(float).to_numpy()
    ids = areas["id"].astype("str").to_numpy(dtype=object)
    vec = unit_vectors(areas["lat"].astype(float).to_numpy(), areas["lon"].astype(float).to_numpy())
    home = rng.choice(len(ids), size=persons, p=pop / pop.sum())
    office = rng.choice(len(ids), size=providers, p=pop / pop.sum())
    weight = np.exp(-great_circle(vec[home][:, None, :], vec[office][None, :, :]) / 5.0) + 1e-12
    seen = rng.integers(1, 5, persons)
    # Gumbel top-k: distinct providers per person, drawn without replacement by weight
    keys = np.log(weight) + rng.gumbel(size=weight.shape)
    ranked = np.argsort(-keys, axis=1)
    person = np.repeat(np.arange(persons), seen)
    prov = ranked[person, ranges(seen)]
    visits = rng.integers(1, 4, person.size)
    person, prov = np.repeat(person, visits), np.repeat(prov, visits)
    visit = ranges(visits)
    claims = rng.integers(1, 4, person.size)
    person, prov, visit = (np.repeat(a, claims) for a in (person, prov, visit))
    claim = ranges(claims)
    return pd.DataFrame({"person": pd.Series(person).map("P{:05d}".format),
                         "zip": ids[home[person]], "provider": pd.Series(prov).map("D{:03d}".format),
                         "provider_zip": ids[office[prov]], "visit": pd.Series(visit + 1).astype("str"),
                         "claim": pd.Series(claim + 1).astype("str")})


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Write a synthetic area table (CSV).")
    p.add_argument("--rows", type=int, default=12)
    p.add_argument("--cols", type=int, default=12)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    p.add_argument("--claims", help="also write synthetic claims over the areas (CSV)")
    p.add_argument("--persons", type=int, default=500)
    p.add_argument("--providers", type=int, default=40)
    a = p.parse_args(argv)
    from ..io import write_table
    areas = synthetic_areas(a.rows, a.cols, a.seed)
    write_table(areas, a.out)
    if a.claims:
        write_table(synthetic_claims(areas, a.persons, a.providers, a.seed), a.claims)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
