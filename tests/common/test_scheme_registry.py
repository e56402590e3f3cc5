"""The scheme registry (common.schemes): one object per name, each with its name and title; one resolver."""
from __future__ import annotations

import pytest

from common.schemes import DEFAULT_SCHEME, SCHEME_NAMES, Scheme, all_schemes, get_scheme, parse_scheme_list


def test_every_registered_scheme_carries_its_name_and_a_title():
    assert SCHEME_NAMES == tuple(s.name for s in all_schemes())
    for name in SCHEME_NAMES:
        scheme = get_scheme(name)
        assert isinstance(scheme, Scheme) and scheme.name == name == str(scheme)
        assert scheme.title                                 # what a report calls it
        assert get_scheme(name) is scheme                  # built once per process


def test_the_one_resolver_gives_the_default_for_an_empty_name_and_refuses_unknown_ones():
    assert get_scheme("") is get_scheme(None) is get_scheme() is get_scheme(DEFAULT_SCHEME)
    for bad in ("rsa", "EC", "\x00"):
        with pytest.raises(ValueError, match=f"unknown comparison scheme .* \\(known: {', '.join(SCHEME_NAMES)}\\)"):
            get_scheme(bad)


def test_a_scheme_list_flag_gives_scheme_objects():
    assert parse_scheme_list(" ec , paillier,ec") == (get_scheme("ec"), get_scheme("paillier"))
    for bad in ("", " , ", "ec,rsa"):
        with pytest.raises(ValueError):
            parse_scheme_list(bad)


@pytest.mark.parametrize("name", SCHEME_NAMES)
def test_a_scheme_is_one_object_per_process_under_copy_and_pickle(name):
    import copy
    import pickle
    scheme = get_scheme(name)
    assert copy.copy(scheme) is scheme and copy.deepcopy({"s": scheme})["s"] is scheme
    assert pickle.loads(pickle.dumps(scheme)) is scheme and len(pickle.dumps(scheme)) < 100
