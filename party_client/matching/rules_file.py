"""The rules file (TOML): ``[[field]]``, ``[rule]`` (a boolean expression or
Fellegi-Sunter m, u and threshold) and ``[[blocking]]`` passes
(docs/protocol.md, "Fuzzy, multi-field matching").  Each party writes its own
file (its own column names and date formats); what both must agree on is
checked through :attr:`party_client.matching.term_rules.Rules.spec`.
"""
from __future__ import annotations

import tomllib
from pathlib import Path

from party_client.errors import PartyError
from party_client.matching.blocking import BlockingPass, parse_pass_options, refuse_risk_table
from party_client.matching.dates import AUTO
from party_client.matching.fields import ENCODERS, Field
from party_client.matching.term_rules import MAX_RULE_FIELDS, Rules, fellegi_sunter_terms, parse_boolean_rule


def load_rules(source: str | Path | dict) -> Rules:
    """Parse a rules file (TOML) or an equivalent dict (fields with comparison levels and
    ``[rule.levels]``: a :class:`party_client.matching.level_rules.LevelRules`)."""
    if isinstance(source, dict):
        document, where = source, "rules"
    else:
        path = Path(source)
        try:
            document = tomllib.loads(path.read_text())
        except FileNotFoundError:
            raise PartyError(f"rules file {path} does not exist") from None
        except tomllib.TOMLDecodeError as error:
            raise PartyError(f"rules file {path}: {error}") from None
        where = str(path)
    refuse_risk_table(document, where)
    if "levels" in document.get("rule", {}):
        from party_client.matching.level_rules import load_level_rules
        return load_level_rules(document, where)
    fields = []
    for entry in document.get("field", []):
        try:
            field = Field(name=entry["name"], column=entry["column"], encoder=entry["encoder"],
                          date_format=entry.get("date_format") or (AUTO if entry.get("encoder") == "dob_ndi" else None),
                          transposed=bool(entry.get("transposed", False)))
        except KeyError as missing:
            raise PartyError(f"{where}: every [[field]] needs {missing}") from None
        if field.encoder not in ENCODERS:
            raise PartyError(f"{where}: encoder '{field.encoder}' unknown (use one of {', '.join(ENCODERS)})")
        if not field.name.isidentifier():
            raise PartyError(f"{where}: field name '{field.name}' must be an identifier")
        fields.append(field)
    if not fields:
        raise PartyError(f"{where}: no [[field]] defined")
    if len(fields) > MAX_RULE_FIELDS:
        raise PartyError(f"{where}: at most {MAX_RULE_FIELDS} [[field]] entries ({len(fields)} given)")
    if len({f.name for f in fields}) != len(fields):
        raise PartyError(f"{where}: field names must be unique")
    rule = document.get("rule", {})
    names = {f.name for f in fields}
    if "match" in rule:
        terms = parse_boolean_rule(rule["match"], names)
    elif "fellegi_sunter" in rule:
        fs = rule["fellegi_sunter"]
        try:
            m, u, threshold = fs["m"], fs["u"], float(fs["threshold"])
        except KeyError as missing:
            raise PartyError(f"{where}: [rule.fellegi_sunter] needs {missing}") from None
        except (TypeError, ValueError):
            raise PartyError(f"{where}: [rule.fellegi_sunter] threshold must be a number") from None
        if set(m) != names or set(u) != names:
            raise PartyError(f"{where}: m and u must give a probability for every field")
        terms = fellegi_sunter_terms(m, u, threshold)
    else:
        raise PartyError(f"{where}: [rule] needs match = \"...\" or a [rule.fellegi_sunter] table")
    compare = rule.get("compare", "auto")
    if compare not in ("auto", "terms", "fields"):
        raise PartyError(f"{where}: [rule] compare must be auto, terms or fields")
    return Rules(fields, terms, where, _blocking(document, where, fields), compare)


def _blocking(document: dict, where: str, fields: list[Field]) -> list[BlockingPass]:
    """``[[blocking]]`` passes: fields (names, or date parts such as ``dob.year``), optional capacity."""
    names = {f.name for f in fields}
    parts = {f"{f.name}.{p}" for f in fields if f.encoder == "dob_ndi" for p in ("day", "month", "year")}
    passes = []
    for entry in document.get("blocking", []):
        chosen = entry.get("fields")
        if not isinstance(chosen, list) or not chosen or not all(isinstance(n, str) for n in chosen):
            raise PartyError(f"{where}: every [[blocking]] needs fields = [\"name\", ...]")
        unknown = [n for n in chosen if n not in names | parts]
        if unknown:
            raise PartyError(f"{where}: [[blocking]] field '{unknown[0]}' is not a [[field]] name")
        passes.append(BlockingPass(tuple(chosen), parse_pass_options(entry, where)))
    return passes
