"""Generate ``deid_core/data/person_names.txt`` once from Faker's name lists (the detector reads the file).

Run with the project installed (Faker is one of its dependencies)::

    python tests/data/make_name_list.py

Given names and surnames of the Latin-script locales common in North American and European health
data, accents folded to ASCII, lower case, one a line. Words that are also everyday English or
clinical words (colours, months, virtues, common nouns) are left out so that a column of such words
is not taken for names (see docs/deid.md, "Identifier detection").
"""
from __future__ import annotations

import importlib
import unicodedata
from pathlib import Path

LOCALES = ("en_US", "en_GB", "en_IE", "en_IN", "es_ES", "es_MX", "fr_FR", "de_DE", "it_IT", "pt_BR",
           "nl_NL", "pl_PL", "vi_VN")
#: Everyday or clinical words that Faker also lists as names.
COMMON_WORDS = frozenset("""
white black brown green gray grey young long short little small rich poor king major price lane hill wood
woods stone field fields bay case care chance summer winter spring autumn fall son sun art sky river star love
blue golden gold silver mercy patience unity honor honour justice worthy noble power rice cash cook baker
will may june april august january march hope grace faith joy rose lily daisy ivy holly iris violet hazel
dawn eve sunny bill mark page sterling pearl ruby amber crystal jade ginger candy honey penny rusty sandy
dale glen forest sage storm rain cloud snow frost heath moss reed rush marsh ford bridge street wall hall
house bank banks church chapel castle tower moore more most best good well early late day night may
oral nurse doctor don dean judge bishop abbot monk pope mayor parson sergeant marshal constable chancellor
hunter fisher fowler archer bowman carter porter potter turner walker weaver wheeler mason miller taylor
cooper butler steward chamberlain page prince duke earl lord lady knight squire baron
normal acute chronic stable positive negative high low none other unknown yes no male female
child baby man men woman women wife husband mother father sister brother family
""".split())


def fold(name: str) -> str:
    return unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode().lower().strip()


def main() -> None:
    names: set[str] = set()
    for locale in LOCALES:
        provider = importlib.import_module(f"faker.providers.person.{locale}").Provider
        for attr in ("first_names", "first_names_male", "first_names_female", "first_names_nonbinary",
                     "last_names"):
            for name in getattr(provider, attr, ()) or ():
                for part in fold(name).replace("-", " ").split():
                    if len(part) >= 2 and part.isalpha() and part not in COMMON_WORDS:
                        names.add(part)
    out = Path(__file__).resolve().parents[2] / "deid_core" / "data" / "person_names.txt"
    out.write_text("".join(f"{n}\n" for n in sorted(names)))
    print(f"{len(names)} names -> {out}")


if __name__ == "__main__":
    main()
