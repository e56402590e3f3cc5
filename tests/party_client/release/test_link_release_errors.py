"""A linked release's de-identification refused for a parameter: the error keeps the parameter's name (the
Python API's), and the ``party`` command names the flag a user types, as ``deid`` does."""
from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest

from deid_core.spec import parse_spec
from party_client.cli.main import EXPECTED
from party_client.errors import ParameterError
from party_client.release import dedup_many
from party_client.release.deidentification import deidentify


def _joined() -> tuple[pd.DataFrame, object]:
    joined = pd.DataFrame({"id": [f"p{i}" for i in range(30)], "age": [str(30 + i % 3) for i in range(30)],
                           "sex": ["F", "M"] * 15})
    spec = parse_spec({"columns": {"id": "direct", "age": "quasi", "sex": "quasi"},
                       "hierarchies": {"age": {"builder": "interval", "widths": [5]}},
                       "release": {"type": "non-public", "threshold": 0.2}})
    return joined, spec


def _cli_line(error: BaseException) -> str:
    return next(rule.line(error) for rule in EXPECTED if isinstance(error, rule.kinds))


@pytest.mark.parametrize("options, library, flag", [
    ({"method": "threshold", "max_suppression": 2.0}, "de-identification: max_suppression 2.0 is outside [0, 1]",
     "error: de-identification: --max-suppression 2.0 is outside [0, 1]"),
    ({"method": "safe-harbor", "accepted": {"nope": "a reason"}}, "de-identification: accepted names 'nope'",
     "error: de-identification: --accept-column names 'nope'"),
    ({"method": "policy"}, "method policy needs policy POLICY.json",
     "error: --method policy needs --policy POLICY.json"),
    ({"method": "threshold", "threshold": 1.5}, "threshold must lie in (0, 1]",
     "error: --threshold must lie in (0, 1]"),
])
def test_a_refused_parameter_is_named_by_the_api_and_flagged_by_the_command(options, library, flag):
    joined, spec = _joined()
    with pytest.raises(ParameterError) as refused:
        deidentify(joined, spec, **options)
    assert str(refused.value).startswith(library)
    assert _cli_line(refused.value).startswith(flag)


def test_dedup_many_names_its_registries():
    with pytest.raises(ParameterError) as refused:
        dedup_many(SimpleNamespace(name="registry"), ["registry"], pd.DataFrame({"id": ["a"]}), id_column="id")
    assert refused.value.parameter == "registries"
    assert _cli_line(refused.value) == "error: --registries names no other registry"
