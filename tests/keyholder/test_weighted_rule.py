"""K's weighted pair rule (Fellegi-Sunter over comparison levels): each field's first agreeing group decides
its weight, the row matches when the sum reaches the threshold, K reports only the deciding groups; a
malformed weighted rule is refused before any work."""
from __future__ import annotations

import pytest

from keyholder.errors import ServiceError
from keyholder.limits import Limits
from keyholder.pair_rule import PairRule, WeightedRule
from keyholder.validation import pair_rule
from proto import linkage_pb2 as pb

# two fields: field 0 has groups 0 (exact, 5000) and 1 (typo, 2000); field 1 has group 2 (exact, 4000)
RULE = PairRule((1, 2, 1), (), WeightedRule((0, 0, 1), (5000, 2000, 4000), (-3000, -4000), 3000))


@pytest.mark.parametrize("zeros, fired", [
    ([True, False, False, True], [0, 2]),        # exact + exact: 9000
    ([True, True, False, True], [0, 2]),         # exact decides field 0 even when typo agrees too
    ([False, False, True, True], [1, 2]),        # typo (second variant) + exact: 6000
    ([True, False, False, False], []),           # 5000 - 4000 below the threshold
    ([False, True, False, False], []),           # 2000 - 4000
])
def test_first_agreeing_group_per_field_decides(zeros, fired):
    assert RULE.fired(zeros) == fired


def test_malformed_weighted_rules_are_refused():
    def rule(**changes) -> pb.PairRule:
        weighted = dict(group_fields=[0, 0, 1], group_weights=[5000, 2000, 4000], field_else=[-3000, -4000],
                        threshold=3000)
        weighted.update(changes)
        return pb.PairRule(group_sizes=[1, 2, 1], weighted=pb.WeightedRule(**weighted))
    pair_rule(rule(), [4], Limits())
    for bad, message in ((dict(group_fields=[0, 1]), "one field and one weight per group"),
                         (dict(group_fields=[0, 0, 2]), "name a field with an else weight"),
                         (dict(threshold=1 << 41), "within")):
        with pytest.raises(ServiceError, match=message):
            pair_rule(rule(**bad), [4], Limits())
    with_terms = rule()
    with_terms.terms.add(groups=[0])
    with pytest.raises(ServiceError, match="no terms"):
        pair_rule(with_terms, [4], Limits())
