"""Peer: splink (DuckDB backend) links two CSV registries with its documented FEBRL 4 model; run with
splink's own environment's python (benchmarks/README.md, "Linkage peers"), never the project's.

    /work/peers/splink/venv/bin/python benchmarks/peers/splink_link.py A.csv B.csv OUT.csv

The model is the "detailed" one of splink's FEBRL 4 example (UK Ministry of Justice, splink
documentation, "Linking the febrl4 datasets"): its seven blocking rules, Jaro-Winkler name
comparisons with term-frequency adjustment, the date-of-birth comparison, Damerau-Levenshtein on the
id and postcode, exact street number; the probability of a match from two deterministic rules at
recall 0.8, u by random sampling (10^6 pairs), m by EM blocked on date of birth and on postcode.
Every column is read as text, '' as null.  Writes ``rec_id_a,rec_id_b,match_probability`` for
every predicted pair with probability at least 0.01 (the caller applies thresholds).
"""
import sys
import time

import duckdb
import splink.comparison_library as cl
from splink import DuckDBAPI, Linker, SettingsCreator, block_on

COLUMNS = ("given_name", "surname", "street_number", "address_1", "address_2", "suburb", "postcode", "state",
           "date_of_birth", "soc_sec_id")


def read(connection, path: str, name: str):
    columns = ", ".join(f"nullif(trim({c}), '') as {c}" for c in COLUMNS)
    connection.execute(f"create table {name} as select trim(rec_id) as rec_id, {columns} "
                       f"from read_csv('{path}', all_varchar=true, header=true)")


def main(path_a: str, path_b: str, out: str) -> int:
    started = time.perf_counter()
    connection = duckdb.connect()
    read(connection, path_a, "registry_a")
    read(connection, path_b, "registry_b")
    blocking_rules = [
        block_on("given_name", "surname"),
        "l.given_name = r.surname and l.surname = r.given_name",
        block_on("date_of_birth"),
        block_on("soc_sec_id"),
        block_on("state", "address_1"),
        block_on("street_number", "address_1"),
        block_on("postcode"),
    ]
    settings = SettingsCreator(
        unique_id_column_name="rec_id",
        link_type="link_only",
        blocking_rules_to_generate_predictions=blocking_rules,
        comparisons=[
            cl.NameComparison("given_name").configure(term_frequency_adjustments=True),
            cl.NameComparison("surname").configure(term_frequency_adjustments=True),
            cl.DateOfBirthComparison("date_of_birth", input_is_string=True, datetime_format="%Y%m%d",
                                     invalid_dates_as_null=True),
            cl.DamerauLevenshteinAtThresholds("soc_sec_id", [1, 2]),
            cl.ExactMatch("street_number").configure(term_frequency_adjustments=True),
            cl.DamerauLevenshteinAtThresholds("postcode", [1, 2]).configure(term_frequency_adjustments=True),
        ],
        retain_intermediate_calculation_columns=True,
    )
    db_api = DuckDBAPI(connection=connection)
    tables = [db_api.register("registry_a", table_name="a"), db_api.register("registry_b", table_name="b")]
    linker = Linker(tables, settings)
    linker.training.estimate_probability_two_random_records_match(
        [block_on("soc_sec_id"), block_on("given_name", "surname", "date_of_birth")], recall=0.8)
    linker.training.estimate_u_using_random_sampling(max_pairs=1e6)
    linker.training.estimate_parameters_using_expectation_maximisation(
        block_on("date_of_birth"), estimate_without_term_frequencies=True)
    linker.training.estimate_parameters_using_expectation_maximisation(
        block_on("postcode"), estimate_without_term_frequencies=True)
    predictions = linker.inference.predict(threshold_match_probability=0.01)
    relation = predictions.as_duckdbpyrelation()
    pairs = relation.query("p", "select case when source_dataset_l = 'a' then rec_id_l else rec_id_r end as rec_id_a, "
                                "case when source_dataset_l = 'a' then rec_id_r else rec_id_l end as rec_id_b, "
                                "match_weight, match_probability from p")
    pairs.write_csv(out, header=True)
    print(f"splink {len(pairs)} pairs in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
