"""The scheme registry (common.schemes): one object per name, each with its name and title; one resolver."""
from __future__ import annotations

import pytest

from common.schemes import DEFAULT_SCHEME, RETIRED, SCHEME_NAMES, RetiredScheme, Scheme, all_schemes, get_scheme, \
    parse_scheme_list


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
    assert parse_scheme_list(" ristretto , paillier,ristretto") == (get_scheme("ristretto"), get_scheme("paillier"))
    for bad in ("", " , ", "ristretto,rsa", "paillier,ec"):
        with pytest.raises(ValueError):
            parse_scheme_list(bad)


def test_a_retired_name_is_refused_saying_what_replaces_it():
    """``ec`` was retired (docs/protocol.md, "Comparison schemes"): refused by name, not as unknown, and a
    session of it is refused in one line saying how to go on."""
    assert "ec" not in SCHEME_NAMES and RETIRED == {"ec": "ristretto"}
    with pytest.raises(RetiredScheme, match="^the comparison scheme 'ec' is no longer offered: use ristretto$") as caught:
        get_scheme("ec")
    assert caught.value.of_session("abc") == ("session abc uses the comparison scheme 'ec', no longer offered: close "
                                              "it (party sessions close abc) and link again with --scheme ristretto")


@pytest.mark.parametrize("name", SCHEME_NAMES)
def test_a_scheme_is_one_object_per_process_under_copy_and_pickle(name):
    import copy
    import pickle
    scheme = get_scheme(name)
    assert copy.copy(scheme) is scheme and copy.deepcopy({"s": scheme})["s"] is scheme
    assert pickle.loads(pickle.dumps(scheme)) is scheme and len(pickle.dumps(scheme)) < 100
