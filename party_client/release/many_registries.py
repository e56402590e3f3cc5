"""De-duplication across many registries: one dedup session per other registry, in parallel, reporting
per own record which registries also hold it — nothing about records it does not hold
(docs/protocol.md, "De-duplication between many registries")."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd

from party_client.errors import ParameterError, PartyError
from party_client.files import read_table


def dedup_many(party, registries: list[str], data, *, id_column: str | None = None, rules=None,
               column: str = "also_held_by", **options) -> tuple[pd.DataFrame, dict]:
    """Per own record, the other registries that also hold it (pairwise dedup sessions in parallel)."""
    registries = [r for r in dict.fromkeys(registries) if r and r != party.name]
    if not registries:
        raise ParameterError("registries", "{name} names no other registry")
    frame = data if isinstance(data, pd.DataFrame) else read_table(data)
    if column in frame.columns:
        raise PartyError(f"the input already has a column '{column}'")

    def one(registry: str):
        return registry, party.dedup(registry, frame, id_column, rules=rules, **options)
    with ThreadPoolExecutor(max_workers=len(registries)) as pool:
        results = dict(pool.map(one, registries))
    listed = pd.Series("", index=range(len(frame)), dtype=object)
    for registry in registries:
        listed = listed + np.where(results[registry].frame["matched"].to_numpy(), registry + ";", "")
    output = frame.reset_index(drop=True).assign(**{column: listed.str.rstrip(";")})
    report = {r: {"matched_records": results[r].report["matched_records"], "session_id": results[r].report["session_id"]}
              for r in registries}
    return output, report
