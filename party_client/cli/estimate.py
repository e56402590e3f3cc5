"""``party estimate``: Fellegi-Sunter m and u by EM on the querier's own table (no key holder involved)."""
from __future__ import annotations

import argparse
import sys

from common.cli import UsageError
from party_client.cli.preset_options import add_preset_options, estimate_preset


def cmd_estimate(args) -> int:
    """Fellegi-Sunter m and u by EM on the querier's own table; no key holder involved."""
    import math
    from party_client.files import check_output, read_table, require_records, write_text
    from party_client.matching.estimate import estimate_rules, rules_text
    check_output(args.out, args.rules, args.input, suffixes=(".toml",), kind="a .toml")
    frame = read_table(args.input)
    require_records(frame, args.input)
    if args.preset:
        return estimate_preset(args, frame)
    if not args.rules:
        raise UsageError("party estimate: give --rules or --preset")
    from party_client.matching.parsing import check_unparsed, unparsed_fields
    from party_client.matching.rules_file import load_rules
    check_unparsed(unparsed_fields(load_rules(args.rules), frame), args.force)
    document, result = estimate_rules(args.rules, frame, args.threshold, max_pairs=args.max_pairs, seed=args.seed)
    write_text(rules_text(document, result, len(frame)), args.out)
    prior = math.log2((1 - result.match_proportion) / result.match_proportion)
    print(f"{len(frame):,} records, {result.pairs:,} training pairs; EM: {result.iterations} iterations, "
          f"{'converged' if result.converged else 'NOT converged'}; about {result.expected_matches:,.0f} "
          f"matching pairs (even odds within this table at weight {prior:.1f})")
    print(f"{'field':<12} {'m':>10} {'u':>10} {'log2(m/u)':>10}")
    for name, m in result.m.items():
        u = result.u[name]
        print(f"{name:<12} {m:>10.4g} {u:>10.4g} {math.log2(m / u):>10.2f}")
    threshold = document["rule"]["fellegi_sunter"]["threshold"]
    print(f"wrote {args.out} (threshold {threshold:g})")
    if result.not_above_u:
        print(f"party: warning: m did not exceed u for {', '.join(result.not_above_u)} (set just above u: these "
              "fields barely count)", file=sys.stderr)
    if not result.converged or result.not_above_u:
        print("party: warning: EM learns m from the duplicates in the input; without enough of them the "
              "estimates mean little", file=sys.stderr)
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    estimate = commands.add_parser("estimate", help="estimate Fellegi-Sunter m and u (EM) on your own table")
    estimate.add_argument("--rules", help="rules file (TOML) naming the fields")
    add_preset_options(estimate, querier=False)
    estimate.add_argument("--input", required=True, help="your table (CSV or Parquet); it must contain duplicates")
    estimate.add_argument("--out", required=True, help="rules file to write (.toml) with [rule.fellegi_sunter]")
    estimate.add_argument("--threshold", type=float,
                          help="log2 weight threshold (default: the rules file's Fellegi-Sunter threshold)")
    estimate.add_argument("--max-pairs", type=int, default=1_000_000, help="training pairs drawn at most")
    estimate.add_argument("--seed", type=int, default=0, help="random seed for drawing training pairs")
    estimate.set_defaults(run=cmd_estimate)
