"""Geoproxy risk: how well the locations of a person's providers predict where the person lives (El Emam &
Arbuckle, *Anonymizing Health Data*, ch. 9, "Too Close to Home", "Levels of Geoproxy Attacks" and "Measuring
Geoproxy Risk"; docs/geography.md, "Geoproxy risk").

Triangulation as the book describes it: for every provider area G, the areas are ranked by their distance to
G (the cap Hausdorff distance; G itself is rank 0) and the ``n`` nearest (n = 50) get ``n − rank`` points
(G 50, its nearest neighbour 49, ... the 49th nearest 1). A person's score of an area is the sum of the
points given by each provider area, weighted per variant:

* ``claims``: one vote per record (claim) at the provider area;
* ``visits``: one per distinct (provider, visit) — a visit counts once however many claims it has;
* ``providers``: one per distinct provider (the variant the book measures);
* ``zips``: one per distinct provider area.

With a boundary (the released cropped code, e.g. the first 3 digits), areas outside the person's boundary get
no points (ranks stay those among all areas). The true area's rank is the number of candidate areas (those
in the boundary) with a higher score. The adversary guesses an area of highest score; the person's geoproxy
risk is ``1/(number of areas sharing the top score)`` when the true area is one of them, else 0 (with no
points at all, every area of the boundary ties). The average over persons is the average geoproxy risk. At
record level (a "record geoproxy attack") every record is its own unit with its one provider area.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import DeidInputError
from .areas import Areas
from .distance import cap_radius
from .neighbors import nearest_by_hausdorff
from .ragged import ranges, starts
from .release import area_rows

VARIANTS = ("claims", "visits", "providers", "zips")
LEVELS = ("patient", "record")
#: Nearest areas that get points around each provider area (El Emam & Arbuckle, ch. 9).
DEFAULT_NEIGHBORS = 50
#: Ranks listed one by one in the summary (the share of units whose true area has that rank).
RANKS_SHOWN = 10


@dataclass(frozen=True, eq=False)
class Geoproxy:
    """Per unit (person or record): true area row, its score, its rank, the top score, ties at the top, risk."""

    units: pd.DataFrame
    variant: str
    level: str
    neighbors: int
    boundary: str | None
    left_out: int

    @property
    def average_risk(self) -> float:
        return float(self.units["risk"].mean())

    def summary(self) -> dict:
        rank = self.units["rank"].to_numpy()
        shares = [float((rank == r).mean()) for r in range(RANKS_SHOWN)]
        return {"level": self.level, "variant": self.variant if self.level == "patient" else None,
                "neighbors": self.neighbors, "boundary": self.boundary, "units": len(self.units),
                "units_left_out": self.left_out, "average_risk": self.average_risk,
                "max_risk": float(self.units["risk"].max()),
                "true_area_top_ranked": shares[0], "rank_share": shares,
                "rank_share_beyond": float((rank >= RANKS_SHOWN).mean()),
                "mean_rank": float(rank.mean())}


def neighbor_points(areas: Areas, sources: np.ndarray, n: int = DEFAULT_NEIGHBORS
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(source position, area, points)``: the book's ``n − rank`` points for the ``n`` nearest areas."""
    if n < 1:
        raise DeidInputError(f"the number of neighbors must be at least 1, got {n}")
    src, area, rank = nearest_by_hausdorff(areas.vectors, cap_radius(areas.area_km2), sources, n)
    return src, area, (n - rank).astype(np.int64)


def _weights(df: pd.DataFrame, unit: np.ndarray, g: np.ndarray, variant: str, provider: str | None,
             visit: str | None) -> pd.DataFrame:
    """One row per (unit, provider area) with the variant's weight."""
    frame = pd.DataFrame({"unit": unit, "g": g})
    if variant == "claims":
        return frame.groupby(["unit", "g"], sort=True).size().rename("w").reset_index()
    if variant == "zips":
        return frame.drop_duplicates().sort_values(["unit", "g"]).assign(w=1).reset_index(drop=True)
    keys = ["p"] if variant == "providers" else ["p", "v"]
    frame["p"] = df[provider].astype("str").to_numpy()
    if variant == "visits":
        frame["v"] = df[visit].astype("str").to_numpy()
    return frame.drop_duplicates(["unit", "g", *keys]).groupby(["unit", "g"], sort=True).size().rename("w").reset_index()


def geoproxy_risk(df: pd.DataFrame, areas: Areas, *, home: str, provider_area: str, person: str | None = None,
                  provider: str | None = None, visit: str | None = None, variant: str = "providers",
                  level: str = "patient", neighbors: int = DEFAULT_NEIGHBORS) -> Geoproxy:
    """The geoproxy risk of ``df`` (see the module docstring).

    ``home``: the person's area column; ``provider_area``: the provider's area column; ``person``: the person
    id (patient level); ``provider`` / ``visit``: needed by the ``providers`` / ``visits`` variants. Records
    with an empty or suppressed home or provider area are left out.
    """
    if level not in LEVELS:
        raise DeidInputError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    if variant not in VARIANTS:
        raise DeidInputError(f"variant must be one of {', '.join(VARIANTS)}, got {variant!r}")
    need = {"home": home, "provider area": provider_area}
    if level == "patient":
        need["person"] = person
        if variant in ("providers", "visits"):
            need["provider"] = provider
        if variant == "visits":
            need["visit"] = visit
    for role, col in need.items():
        if not col:
            raise DeidInputError(f"the {role} column is needed ({level} level, variant {variant})")
        if col not in df.columns:
            raise DeidInputError(f"{role} column {col!r} is not in the table")
    h = area_rows(df[home], areas, home)
    g = area_rows(df[provider_area], areas, provider_area)
    keep = (h >= 0) & (g >= 0)
    if level == "record":
        unit_of_row = np.arange(len(df))
    else:
        unit_of_row = pd.factorize(df[person])[0]
        keep &= unit_of_row >= 0
    sub = df.loc[keep]
    unit, h, g = unit_of_row[keep], h[keep], g[keep]
    if unit.size == 0:
        raise DeidInputError("no record has both a home area and a provider area: nothing to measure")
    homes = pd.DataFrame({"unit": unit, "h": h}).drop_duplicates()
    if homes["unit"].duplicated().any():
        u = int(homes.loc[homes["unit"].duplicated(), "unit"].iloc[0])
        raise DeidInputError(f"person {sub[person].astype('str').to_numpy()[unit == u][0]!r} has more than one "
                             f"home area in column {home!r} (one home area per person)")
    w = _weights(sub, unit, g, "zips" if level == "record" else variant, provider, visit)
    # the n nearest areas of each distinct provider area, with points
    gs = np.unique(w["g"].to_numpy())
    src, nb_area, nb_pts = neighbor_points(areas, gs, neighbors)
    order = np.argsort(src, kind="stable")
    nb_area, nb_pts = nb_area[order], nb_pts[order]
    cnt = np.bincount(src, minlength=gs.size)
    start = starts(cnt)
    gpos = np.searchsorted(gs, w["g"].to_numpy())
    rep = cnt[gpos]
    idx = np.repeat(start[gpos], rep) + ranges(rep)
    u_rep = np.repeat(w["unit"].to_numpy(), rep)
    home_of = pd.Series(homes["h"].to_numpy(), index=homes["unit"].to_numpy())
    h_rep = home_of.reindex(u_rep).to_numpy()
    a_rep = nb_area[idx]
    inside = areas.boundary[a_rep] == areas.boundary[h_rep]
    scores = (pd.DataFrame({"unit": u_rep[inside], "area": a_rep[inside],
                            "s": nb_pts[idx][inside] * np.repeat(w["w"].to_numpy(), rep)[inside]})
              .groupby(["unit", "area"], sort=False)["s"].sum().reset_index())
    units = homes.set_index("unit").sort_index()
    true_key = pd.MultiIndex.from_arrays([units.index.to_numpy(), units["h"].to_numpy()])
    s_idx = pd.MultiIndex.from_frame(scores[["unit", "area"]]).get_indexer(true_key)
    units["score"] = np.append(scores["s"].to_numpy(), 0)[s_idx]  # -1 (no points) -> the appended 0
    units["top"] = scores.groupby("unit")["s"].max().reindex(units.index, fill_value=0)
    at_top = scores["s"].to_numpy() == units["top"].reindex(scores["unit"]).to_numpy()
    ties = pd.Series(at_top).groupby(scores["unit"].to_numpy()).sum().reindex(units.index, fill_value=0)
    region = np.bincount(areas.boundary, minlength=len(areas.boundary_names))[areas.boundary[units["h"].to_numpy()]]
    units["ties"] = np.where(units["top"].to_numpy() > 0, ties.to_numpy(), region)
    above = scores["s"].to_numpy() > units["score"].reindex(scores["unit"]).to_numpy()
    units["rank"] = pd.Series(above).groupby(scores["unit"].to_numpy()).sum().reindex(units.index, fill_value=0)
    units["risk"] = np.where(units["score"] == units["top"], 1.0 / units["ties"], 0.0)
    units = units.rename(columns={"h": "home"})
    return Geoproxy(units=units, variant=variant, level=level, neighbors=neighbors, boundary=areas.boundary_source,
                    left_out=int(np.unique(unit_of_row[unit_of_row >= 0]).size - len(units)) if level == "patient"
                    else int((~keep).sum()))
