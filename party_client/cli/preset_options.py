"""The ``--preset``, ``--map``, ``--write-rules``, ``--dry-run`` and ``--max-comparisons`` options of the
``party`` commands that link (join, dedup, link-release, hold) and how they become matching rules."""
from __future__ import annotations

import argparse
import sys

from party_client.errors import PartyError
from party_client.matching.preset_roles import DEFAULT_PRECISION, DEFAULT_THRESHOLD, PRESETS, ROLES, parse_map

# The matching machinery (pandas, the levels, the blocking passes) is imported on use, so that the
# commands that do not link (init, register, sessions, --help) start without it.


def add_preset_options(sub: argparse.ArgumentParser, querier: bool) -> None:
    sub.add_argument("--preset", choices=PRESETS,
                     help="link people without writing rules: comparison levels, blocking passes and weights "
                          "for the roles in --map (person-typo adds typo levels: costlier)")
    sub.add_argument("--map", metavar="ROLE=COLUMN,...",
                     help=f"your columns for the preset's roles ({', '.join(ROLES)}); any subset of two or more")
    sub.add_argument("--date-format", default="auto",
                     help="format of the dob column (e.g. %%d/%%m/%%Y); auto reads the form the column shows "
                          "(1967-08-18, 19670818, 18 Aug 1967; 18/08/1967 when some first numbers are above 12) "
                          "and never guesses day/month order")
    threshold = sub.add_mutually_exclusive_group()
    threshold.add_argument("--match-threshold", type=float, default=DEFAULT_THRESHOLD,
                           help="Fellegi-Sunter weight (bits) a pair must reach; both parties must give the same")
    threshold.add_argument("--precision", type=float, nargs="?", const=DEFAULT_PRECISION, metavar="P",
                           help=f"instead of --match-threshold: derive it, before any comparison, as the lowest "
                                f"weight at which the model's estimated precision reaches P ({DEFAULT_PRECISION:g} "
                                "if no P is given), from the holder's announced table size; both parties must give "
                                "the same")
    sub.add_argument("--write-rules", metavar="FILE.toml", help="also write the preset as a rules file to edit")
    sub.add_argument("--force", action="store_true",
                     help="link even when more than half of a field's values cannot be read (they count as "
                          "missing); above 5%% a warning says so either way")
    if querier:
        sub.add_argument("--dry-run", action="store_true",
                         help="print per blocking pass the pairs and comparisons, and the time per scheme; "
                              "link nothing")
        sub.add_argument("--max-comparisons", type=int, metavar="N",
                         help="refuse (exit 2, no session opened) when the plan needs more comparisons")
        sub.add_argument("--html", metavar="PAGE.html",
                         help="join with comparison levels: write a page with m, u and weights per level, the "
                              "match weights, estimated precision and recall, and borderline matches")


def preset_rules(args: argparse.Namespace):
    """``--rules`` as given, or the preset's rules (written out with ``--write-rules``)."""
    preset = getattr(args, "preset", None)
    if preset is None:
        if getattr(args, "map", None):
            raise PartyError("--map goes with --preset")
        return getattr(args, "rules", None)
    from party_client.matching.presets import person_rules
    if getattr(args, "rules", None) or getattr(args, "id_column", None):
        raise PartyError(f"party {args.command}: give one of --id-column, --rules and --preset")
    if not args.map:
        raise PartyError(f"--preset {preset} needs --map ROLE=COLUMN,... (e.g. first=given,last=surname,dob=birth)")
    rules = person_rules(parse_map(args.map), args.date_format, args.match_threshold, preset, args.precision)
    if args.write_rules:
        import tomli_w

        from party_client.files import check_output, read_table, write_text
        from party_client.matching.level_rules import rules_document
        check_output(args.write_rules, args.input, suffixes=(".toml",), kind="a .toml")
        rules.codes(read_table(args.input))          # the mapped columns exist before anything is written
        write_text(tomli_w.dumps(rules_document(rules)), args.write_rules)
    return rules


def check_plan(args: argparse.Namespace, rules) -> bool:
    """``--dry-run``: print the plan (True: stop here); ``--max-comparisons``: refuse a costlier plan."""
    dry_run, limit = getattr(args, "dry_run", False), getattr(args, "max_comparisons", None)
    if not dry_run and limit is None:
        return False
    from party_client.matching.level_rules import LevelRules
    if not isinstance(rules, LevelRules):
        from party_client.matching.rules_file import load_rules
        rules = load_rules(rules) if rules is not None else None
        if not isinstance(rules, LevelRules):
            raise PartyError("--dry-run and --max-comparisons need --preset or a rules file with comparison levels")
    from party_client.matching.parsing import check_unparsed, unparsed_fields
    from party_client.matching.plan import plan, plan_text
    from party_client.files import read_table
    frame = read_table(args.input)
    check_unparsed(unparsed_fields(rules, frame), getattr(args, "force", False))
    rows = rules.announced_rows(frame)          # the holder assumed as large as our table, as the plan assumes
    rules = rules.at_holder_rows(rows)
    estimate = plan(rules, frame, timed=dry_run)
    if limit is not None and estimate["comparisons"] > limit:
        cheaper = ", or use --preset person instead of person-typo" if getattr(args, "preset", None) == "person-typo" \
            else ""
        raise PartyError(f"the plan needs about {estimate['comparisons']:,} comparisons, above --max-comparisons "
                         f"{limit:,}; block on rarer keys or map fewer roles{cheaper}")
    if dry_run:
        from party_client.matching.parsing import date_forms
        for line in date_forms(rules, frame):
            print(line)
        print(plan_text(estimate))
        if rules.model.m and rules.model.u:
            print(threshold_text(rules, rows, "a holder as large as your table, announcing"))
        scheme, timeout = getattr(args, "scheme", None), getattr(args, "timeout", None)
        needed = estimate["seconds"].get(scheme)
        if needed is not None and timeout is not None and needed > timeout:
            print(f"party: warning: under {scheme} the plan needs about {needed:,.0f} s, beyond --timeout "
                  f"{timeout:g}: raise --timeout, or the querier stops waiting before the holder is done",
                  file=sys.stderr)
    return dry_run


def threshold_text(rules, holder_rows: int, holder: str) -> str:
    """The threshold, the precision target it came from (if any), and the model's estimated precision and
    recall around it, for ``holder`` (who) announcing ``holder_rows`` rows."""
    from party_client.matching.precision import ASSUMED_OVERLAP, curve_text, match_prior, precision_curve
    prior = match_prior(holder_rows)
    threshold = rules.model.threshold
    source = (f"the lowest weight at which the model's estimated precision reaches the target {rules.precision:g}"
              if rules.precision is not None else "as given")
    lines = [f"threshold {threshold:g} bits, {source}; estimated for {holder} {holder_rows:,} rows, with "
             f"{ASSUMED_OVERLAP:g} of your records assumed to match one of them (prior {prior:.3g} per pair):",
             *curve_text(precision_curve(rules.model, prior), threshold),
             "(the model's own estimate, fields independent given the match status: on sets with known links it "
             "was optimistic, by up to 0.063 in precision at thresholds derived from --precision; "
             "docs/linking.md, \"A precision target\")"]
    return "\n".join(lines)


def write_page(args: argparse.Namespace, rules, result) -> None:
    """``--html``: the linkage page of a join over comparison levels (the holder assumed as large as our table)."""
    path = getattr(args, "html", None)
    if not path:
        return
    from party_client.matching.level_rules import LevelRules
    if not isinstance(rules, LevelRules) or "match_weight" not in result.frame.columns:
        raise PartyError("--html needs a join with --preset or a rules file with comparison levels")
    from party_client.matching.linkage_page import render_page
    from party_client.files import read_table, write_text
    own = read_table(args.input)
    records = len(own)          # the holder is assumed as large as our table
    if rules.precision is not None:             # the threshold the run derived from the holder's announced size
        rules = rules.at_holder_rows(result.report["holder_rows"])
    write_text(render_page(rules.model, result.frame, "match_weight", args.matched_column, list(own.columns), records,
                           int(result.report["matched_records"]), records, target=rules.precision,
                           target_rows=rules.holder_rows), path)


def estimate_preset(args: argparse.Namespace, frame) -> int:
    """``party estimate --preset``: m by EM over the table's own blocked pairs, u from its frequencies,
    written as a rules file for both parties (refused when EM did not converge)."""
    import tomli_w

    from party_client.files import write_text
    from party_client.matching.level_rules import rules_document
    from party_client.matching.presets import estimate_person, person_rules
    if args.rules:
        raise PartyError("party estimate: give --rules or --preset, not both")
    if not args.map:
        raise PartyError(f"--preset {args.preset} needs --map ROLE=COLUMN,...")
    if args.precision is not None and args.threshold is not None:
        raise PartyError("party estimate: give --threshold or --precision, not both")
    rules = person_rules(parse_map(args.map), args.date_format,
                         args.match_threshold if args.threshold is None else args.threshold, args.preset,
                         args.precision)
    from party_client.matching.parsing import check_unparsed, unparsed_fields
    check_unparsed(unparsed_fields(rules, frame), args.force)
    estimated, fit, pairs = estimate_person(rules, frame, max_pairs=args.max_pairs, seed=args.seed)
    write_text(tomli_w.dumps(rules_document(estimated)), args.out)
    print(f"{len(frame):,} records, {pairs:,} training pairs; EM converged in {fit.iterations} iterations; "
          f"about {fit.match_proportion * pairs:,.0f} matching pairs among them")
    print(f"{'field':<14} {'level':<16} {'m':>8} {'u':>10} {'weight':>8}")
    for f in estimated.model.fields:
        for level, weight in estimated.model.weights[f.name].items():
            print(f"{f.name:<14} {level:<16} {fit.m[f.name][level]:>8.4f} {fit.u[f.name][level]:>10.6f} {weight:>8.2f}")
    return 0
