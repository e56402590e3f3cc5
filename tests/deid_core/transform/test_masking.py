"""Masking (El Emam & Arbuckle, ch. 11): format-preserving pseudonyms (FF3-1), randomized names from a real
name-frequency list, the dominant-value field as a two-valued quasi-identifier, the sealed reversal table."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from ff3 import FF3Cipher
from hypothesis import given, settings, strategies as st
from scipy.stats import ks_2samp

from deid_core.errors import DeidInputError
from deid_core.risk.equivalence_classes import class_index
from deid_core.spec import SUPPRESSED
from deid_core.transform import Policy
from deid_core.transform.fpe import fpe_decrypt, fpe_encrypt, luhn_digit, luhn_valid, ssn_valid
from deid_core.transform.names import draw_names, name_pool
from deid_core.transform.reversal import open_sealed, seal

KEY = b"owner key of the data custodian"
OTHER = b"another owner's key, 16+ bytes"
SETTINGS = settings(max_examples=40, deadline=None, derandomize=True)


# ------------------------------------------------------------------ FPE

def test_ff3_1_nist_sample_through_the_package():
    """The package is FF3-1 as NIST publishes it (ACVP FF3-1 sample 1, AES-128, radix 10)."""
    c = FF3Cipher("EF4359D8D580AA4F7F036D6F04FC6A94", "D8E7920AFA330A")
    assert c.encrypt("890121234567890000") == "477064185124354662"
    assert c.decrypt("477064185124354662") == "890121234567890000"


def test_luhn_reference_numbers():
    assert luhn_digit("7992739871") == "3" and luhn_valid("79927398713") and not luhn_valid("79927398710")
    assert luhn_valid("4532015112830366")


ssn_text = st.from_regex(r"\A[0-9]{3}-[0-9]{2}-[0-9]{4}\Z")


@SETTINGS
@given(st.lists(ssn_text, min_size=1, max_size=8, unique=True))
def test_ssn_round_trip_format_and_validity_class(ssns):
    enc = fpe_encrypt(ssns, KEY, "ssn", "ssn")
    assert fpe_decrypt(enc, KEY, "ssn", "ssn") == ssns
    for s, e in zip(ssns, enc):
        assert re.fullmatch(r"[0-9]{3}-[0-9]{2}-[0-9]{4}", e) and len(e) == 11
        assert ssn_valid(e.replace("-", "")) == ssn_valid(s.replace("-", ""))  # a valid SSN stays valid
    assert len(set(enc)) == len(ssns)  # a bijection: distinct identifiers, distinct pseudonyms


mixed = st.text(alphabet="0123456789-/ AB", min_size=6, max_size=30).filter(lambda v: 6 <= sum(c.isdigit() for c in v) <= 56)


@SETTINGS
@given(mixed)
def test_digits_keep_every_separator_and_length(value):
    (enc,) = fpe_encrypt([value], KEY, "digits", "mrn")
    assert len(enc) == len(value)
    assert [c for c in enc if not c.isdigit()] == [c for c in value if not c.isdigit()]
    assert [i for i, c in enumerate(enc) if c.isdigit()] == [i for i, c in enumerate(value) if c.isdigit()]
    assert fpe_decrypt([enc], KEY, "digits", "mrn") == [value]


@SETTINGS
@given(st.from_regex(r"\A[0-9]{6,18}\Z"))
def test_luhn_mrn_gets_a_valid_recomputed_check_digit(body):
    mrn = "MRN-" + body + luhn_digit(body)
    (enc,) = fpe_encrypt([mrn], KEY, "luhn", "mrn")
    digits = enc[4:]
    assert enc.startswith("MRN-") and len(enc) == len(mrn) and luhn_valid(digits)
    assert fpe_decrypt([enc], KEY, "luhn", "mrn") == [mrn]


def test_keys_and_domains_give_different_pseudonyms():
    ssns = [f"{100 + i:03d}-{10 + i:02d}-{1000 + 7 * i:04d}" for i in range(50)]
    a, b = fpe_encrypt(ssns, KEY, "ssn", "ssn"), fpe_encrypt(ssns, OTHER, "ssn", "ssn")
    assert sum(x == y for x, y in zip(a, b)) == 0
    assert fpe_encrypt(ssns, KEY, "ssn", "ssn") == a  # deterministic: the same in every table
    assert sum(x == y for x, y in zip(a, fpe_encrypt(ssns, KEY, "ssn", "patient"))) == 0
    assert fpe_decrypt(b, KEY, "ssn", "ssn") != ssns


def test_fpe_refuses_short_numbers_bad_check_digits_and_keys():
    with pytest.raises(DeidInputError, match="6 to 56"):
        fpe_encrypt(["12-345"], KEY)
    with pytest.raises(DeidInputError, match="Luhn"):
        fpe_encrypt(["79927398710"], KEY, "luhn")
    with pytest.raises(DeidInputError, match="9 digits"):
        fpe_encrypt(["1234567890"], KEY, "ssn")
    with pytest.raises(DeidInputError, match="16 bytes"):
        fpe_encrypt(["123456789"], b"short")


def test_policy_fpe_step_keeps_missing_and_suppressed():
    df = pd.DataFrame({"ssn": ["123-45-6789", None, SUPPRESSED, "123-45-6789"]}).astype("category")
    out, _ = Policy([{"op": "fpe", "column": "ssn", "format": "ssn"}]).apply(df, key=KEY)
    v = out["ssn"].astype(object).tolist()
    assert v[0] == v[3] != "123-45-6789" and pd.isna(v[1]) and v[2] == SUPPRESSED


# ------------------------------------------------------------------ names

def test_name_pool_is_fakers_frequency_list():
    from faker.providers.person.en_US import Provider
    names, cdf = name_pool("en_US", "last", "any")
    assert len(names) == len(Provider.last_names) == 1000 and cdf[-1] == pytest.approx(1.0)
    i = names.index("Smith")
    share = cdf[i] - (cdf[i - 1] if i else 0.0)
    assert share == pytest.approx(Provider.last_names["Smith"] / sum(Provider.last_names.values()))


def test_name_length_is_independent_of_the_original_length():
    """The book: a replacement of the same length would let a frequency attack through."""
    short = [f"{a}{b}" for a in "ABCDEFGHIJ" for b in "abcdefghij"]          # 100 two-letter names
    long_ = [f"Wolfeschlegelstein{a}{b}" for a in "ABCDEFGHIJ" for b in "abcdefghij"]  # 100 of 20 letters
    ls = [len(x) for x in draw_names(short, KEY, "last")]
    ll = [len(x) for x in draw_names(long_, KEY, "last")]
    assert ks_2samp(ls, ll).pvalue > 0.05
    assert abs(np.corrcoef([2] * 100 + [20] * 100, ls + ll)[0, 1]) < 0.2


def _people() -> pd.DataFrame:
    return pd.DataFrame({
        "pid": ["1", "1", "2", "3", "4", "5"],
        "first": ["Maria", "Maria", "Maria", "Jo", "Jo", None],
        "sex": ["F", "F", "F", "M", SUPPRESSED, "M"],
    }).astype("category")


def test_names_consistent_per_person_conditioned_on_released_sex():
    step = {"op": "names", "column": "first", "sex": "sex", "person": "pid"}
    out, ctx = Policy([step]).apply(_people(), key=KEY, reversal=True)
    f = out["first"].astype(object).tolist()
    assert f[0] == f[1]  # the same person's name: the same replacement in every row
    female, _ = name_pool("en_US", "first", "female")
    male, _ = name_pool("en_US", "first", "male")
    assert f[0] in female and f[2] in female and f[3] in male and pd.isna(f[5])
    assert all(x not in ("Maria", "Jo") for x in f[:5])
    again, _ = Policy([step]).apply(_people(), key=KEY)  # another table, same key: the same replacements
    assert again["first"].astype(object).tolist()[:5] == f[:5]
    assert set(ctx["reversal"]["first"]) == set(f[:5])
    # without a person column the same name gets the same replacement
    out2, _ = Policy([{"op": "names", "column": "first"}]).apply(_people(), key=KEY)
    g = out2["first"].astype(object).tolist()
    assert g[0] == g[1] == g[2] and g[3] == g[4]


def test_names_refuse_a_sex_that_is_not_released():
    with pytest.raises(DeidInputError, match="not released"):
        Policy([{"op": "drop", "columns": ["sex"]},
                {"op": "names", "column": "first", "sex": "sex"}]).apply(_people(), key=KEY)
    with pytest.raises(DeidInputError, match="later 'blank' step"):
        Policy([{"op": "names", "column": "first", "sex": "sex"},
                {"op": "blank", "column": "sex"}]).apply(_people(), key=KEY)


# ------------------------------------------------------------------ dominant value

def test_dominant_hospital_as_two_valued_quasi_identifier():
    n = 200
    rng = np.random.default_rng(7)
    age = rng.choice([f"{10 * d}-{10 * d + 9}" for d in range(1, 9)], n)
    hosp = np.where(rng.random(n) < 0.85, "TOH", rng.choice(["CHEO", "Queensway", "Montfort"], n))
    df = pd.DataFrame({"age": age, "hospital": hosp}).astype("category")
    step = {"op": "pseudonymize", "column": "hospital", "dominant": {"columns": ["age"], "k": 5}}
    out, ctx = Policy([step]).apply(df, key=KEY)
    info = ctx["dominant"]["hospital"]
    assert info["dominant_share"] == pytest.approx((hosp == "TOH").mean())
    suppressed = (out["hospital"].astype(object) == SUPPRESSED).to_numpy()
    assert info["pseudonyms_suppressed"] == suppressed.sum() > 0
    # every record still carrying its pseudonym sits in a class of >= 5 on (age, dominant vs other)
    two = pd.Series(np.where(hosp == "TOH", "d", "o")).where(~suppressed, SUPPRESSED)
    frame = pd.DataFrame({"age": age, "two": two}).astype("category")
    cls, sizes = class_index(frame, ["age", "two"])
    assert (sizes[cls][~suppressed] >= 5).all()
    # exactly the records whose (age, two-valued) class was below 5 lost their pseudonym
    full = pd.DataFrame({"age": age, "two": np.where(hosp == "TOH", "d", "o")}).astype("category")
    cls0, sizes0 = class_index(full, ["age", "two"])
    assert (suppressed == (sizes0[cls0] < 5)).all()
    assert not ctx["warnings"]  # handled, not only warned about
    _, ctx_warn = Policy([{"op": "pseudonymize", "column": "hospital"}]).apply(df, key=KEY)
    assert ctx_warn["warnings"]


def test_dominant_option_validation():
    df = pd.DataFrame({"h": ["a", "a", "b"], "age": ["1", "1", "2"]}).astype("category")
    with pytest.raises(DeidInputError, match="dominant must be"):
        Policy([{"op": "pseudonymize", "column": "h", "dominant": {"k": 2}}]).apply(df, key=KEY)
    with pytest.raises(DeidInputError, match="unknown column 'zip'"):
        Policy([{"op": "pseudonymize", "column": "h", "dominant": {"columns": ["zip"], "k": 2}}]).apply(df, key=KEY)


# ------------------------------------------------------------------ sealed table

def test_sealed_table_opens_only_with_the_key_and_hides_the_originals():
    table = {"name": {"Herring": {"Salmon"}, "Trout": {"Wolfeschlegelsteinhausen"}}}
    blob = seal(table, KEY)
    assert b"Salmon" not in blob and b"Wolfeschlegel" not in blob and b"Herring" not in blob
    assert open_sealed(blob, KEY) == {"name": {"Herring": ["Salmon"], "Trout": ["Wolfeschlegelsteinhausen"]}}
    with pytest.raises(DeidInputError, match="does not open with this key"):
        open_sealed(blob, OTHER)
    tampered = bytearray(blob)
    tampered[10] ^= 1  # the salt is authenticated too
    with pytest.raises(DeidInputError, match="does not open"):
        open_sealed(bytes(tampered), KEY)
    assert seal(table, KEY) != blob  # a fresh salt and nonce each time
