"""Precision and recall of the identifier detector on a labelled set of columns it was not written against:
the FEBRL files and their linked output, Adult's categorical columns, and Faker-generated names, addresses
and phones of 19 locales (docs/deid.md, "Identifier detection", gives the figures this file prints)::

    python -m tests.deid_core.test_detect_measured
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from faker import Faker

from deid_core.detect import column_findings

FOLDER = Path(__file__).resolve().parents[1] / "data" / "febrl"

#: Adult's categories (UCI Adult, the ``adult_hierarchy_*.csv`` first columns) with their rough frequencies, so
#: the check needs no file outside the repository; the real columns are added when ``shared/`` is there.
ADULT = {
    "workclass": "Private:22696 Self-emp-not-inc:2541 Local-gov:2093 State-gov:1298 Self-emp-inc:1116 Federal-gov:960 "
                 "Without-pay:14",
    "occupation": "Prof-specialty:4140 Craft-repair:4099 Exec-managerial:4066 Adm-clerical:3770 Sales:3650 "
                  "Other-service:3295 Machine-op-inspct:2002 Transport-moving:1597 Handlers-cleaners:1370 "
                  "Farming-fishing:994 Tech-support:928 Protective-serv:649 Priv-house-serv:149 Armed-Forces:9",
    "race": "White:27816 Black:3124 Asian-Pac-Islander:1039 Amer-Indian-Eskimo:311 Other:271",
    "sex": "Male:21790 Female:10771",
    "marital-status": "Married-civ-spouse:14976 Never-married:10683 Divorced:4443 Separated:1025 Widowed:993 "
                      "Married-spouse-absent:418 Married-AF-spouse:23",
    "native-country": "United-States:29170 Mexico:643 Philippines:198 Germany:137 Canada:121 Puerto-Rico:114 "
                      "El-Salvador:106 India:100 Cuba:95 England:90 Jamaica:81 South:80 China:75 Italy:73 "
                      "Dominican-Republic:70 Vietnam:67 Guatemala:64 Japan:62 Poland:60 Columbia:59 Taiwan:51 "
                      "Haiti:44 Iran:43 Portugal:37 Nicaragua:34 Peru:31 Greece:29 France:29 Ecuador:28 Ireland:24 "
                      "Hong:20 Cambodia:19 Trinadad&Tobago:19 Laos:18 Thailand:18 Yugoslavia:16 "
                      "Outlying-US(Guam-USVI-etc):14 Honduras:13 Hungary:13 Scotland:12 Holand-Netherlands:1",
    "education": "HS-grad:10501 Some-college:7291 Bachelors:5355 Masters:1723 Assoc-voc:1382 11th:1175 "
                 "Assoc-acdm:1067 10th:933 7th-8th:646 Prof-school:576 9th:514 12th:433 Doctorate:413 5th-6th:333 "
                 "1st-4th:168 Preschool:51",
}
NAME_LOCALES = ("en_US", "en_GB", "en_AU", "de_DE", "fr_FR", "es_ES", "it_IT", "nl_NL", "pl_PL", "pt_BR",
                "sv_SE", "fi_FI", "cs_CZ", "tr_TR", "hu_HU", "da_DK", "ro_RO", "ru_RU", "ja_JP")
ROWS = 250


def _adult(rows: int, seed: int) -> dict[str, pd.Series]:
    rng = np.random.default_rng(seed)
    out = {}
    for column, spec in ADULT.items():
        values, counts = zip(*(item.rsplit(":", 1) for item in spec.split()))
        p = np.array(counts, dtype=float)
        out[column] = pd.Series(rng.choice(values, size=rows, p=p / p.sum()))
    return out


def labelled_columns() -> list[tuple[str, str, str, pd.Series]]:
    """(source, column name, true kind or "none", values): the labelled set."""
    cols: list[tuple[str, str, str, pd.Series]] = []
    febrl_kinds = {"rec_id": "serial", "given_name": "name", "surname": "name", "street_number": "street_number",
                   "address_1": "address", "address_2": "address", "suburb": "none", "postcode": "none",
                   "state": "none", "date_of_birth": "date", "soc_sec_id": "long_digits"}
    rng = np.random.default_rng(7)
    for name in ("dataset1", "dataset2", "dataset3", "dataset4a", "dataset4b"):
        df = pd.read_csv(FOLDER / f"{name}.csv.gz", dtype=str, skipinitialspace=True)
        df["match_weight"] = np.round(rng.normal(10, 6, len(df)), 3).astype(str)
        df["cluster_id"] = df["rec_id"].str.extract(r"rec-(\d+)")[0]
        df["pair_id"] = [f"p{i}" for i in rng.permutation(len(df))]
        kinds = {**febrl_kinds, "match_weight": "linkage", "cluster_id": "linkage", "pair_id": "linkage"}
        cols += [(f"febrl/{name}", c, kinds[c], df[c]) for c in df.columns]
    for rows, seed in ((300, 1), (5000, 2)):
        cols += [(f"adult-{rows}", c, "none", s) for c, s in _adult(rows, seed).items()]
    adult_csv = Path(__file__).resolve().parents[3] / "shared" / "data" / "adult" / "adult.csv"
    if adult_csv.exists():
        adult = pd.read_csv(adult_csv, sep=";", dtype=str)
        for rows in (300, len(adult)):
            part = adult.sample(n=rows, random_state=3) if rows < len(adult) else adult
            cols += [(f"adult.csv-{rows}", c, "age_over_89" if c == "age" and (part[c].astype(int) > 89).any()
                      else "none", part[c]) for c in adult.columns]
    for i, locale in enumerate(NAME_LOCALES):
        fake = Faker(locale)
        fake.seed_instance(100 + i)
        made = {"first_name": ("name", fake.first_name), "last_name": ("name", fake.last_name),
                "full_name": ("name", fake.name), "street_address": ("address", fake.street_address),
                "home_address": ("address", fake.address), "phone": ("phone", fake.phone_number),
                "city": ("none", fake.city), "country": ("none", fake.country), "job": ("none", fake.job),
                "company": ("none", fake.company)}
        for column, (kind, make) in made.items():
            values = pd.Series([make() for _ in range(ROWS)])
            cols.append((f"faker/{locale}", column, kind, values))
            if kind in ("name", "address"):       # the same values under a name that says nothing
                cols.append((f"faker/{locale}", f"field_{column[:2]}", kind, values))
    return cols


def predictions(cols) -> pd.DataFrame:
    rows = []
    for source, column, kind, values in cols:
        found = column_findings(values, column)
        rows.append({"source": source, "column": column, "label": kind, "predicted": found[0].kind if found else "none",
                     "cued": not column.startswith("field_")})
    return pd.DataFrame(rows)


def scores(table: pd.DataFrame) -> pd.DataFrame:
    """Per kind and for identifier vs not: columns labelled, precision, recall."""
    out = []
    for kind in [*sorted(set(table["label"]) - {"none"}), "all"]:
        if kind == "all":
            label, pred = table["label"] != "none", table["predicted"] != "none"
        else:
            label, pred = table["label"] == kind, table["predicted"] == kind
        tp = int((label & pred).sum())
        out.append({"kind": kind, "columns": int(label.sum()), "flagged": int(pred.sum()),
                    "precision": tp / pred.sum() if pred.sum() else float("nan"), "recall": tp / label.sum()})
    return pd.DataFrame(out)


def test_precision_and_recall_on_columns_the_rules_were_not_written_against():
    table = predictions(labelled_columns())
    wrong = table[table["label"] != table["predicted"]]
    s = scores(table).set_index("kind")
    assert s.loc["all", "precision"] >= 0.97 and s.loc["all", "recall"] >= 0.9, wrong.to_string()
    for kind in ("name", "address", "street_number", "linkage"):
        assert s.loc[kind, "precision"] >= 0.95 and s.loc[kind, "recall"] >= 0.85, (kind, wrong.to_string())
    # no false positive on Adult or the FEBRL places, and every FEBRL and linkage identifier is found
    assert not ((table["label"] == "none") & (table["predicted"] != "none")
                & table["source"].str.startswith(("adult", "febrl"))).any(), wrong.to_string()
    assert (table[table["source"].str.startswith("febrl")].eval("label == predicted")).all(), wrong.to_string()


if __name__ == "__main__":
    t = predictions(labelled_columns())
    print(scores(t).to_string(index=False, float_format="%.2f"))
    print(scores(t[t["cued"] | (t["label"] == "none")]).iloc[-1:].to_string(index=False, float_format="%.2f"))
    print(scores(t[~t["cued"] | (t["label"] == "none")]).iloc[-1:].to_string(index=False, float_format="%.2f"))
    print(t[t["label"] != t["predicted"]].to_string())
