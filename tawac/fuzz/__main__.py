"""`python -m tawac.fuzz`: a fuzz campaign over the corpus, or `--replay FILE`."""

from __future__ import annotations

import argparse
import sys

from tawac.fuzz.harness import FINDINGS, replay, run_campaign
from tawac.fuzz.meaning import CHECK_TIMEOUT


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tawac.fuzz", description=__doc__)
    p.add_argument("--inputs", type=int, default=None, help="how many mutants (default 1000)")
    p.add_argument("--seconds", type=float, default=None, help="stop starting inputs after S s")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--first", type=int, default=0, help="the first mutant's number (a shard)")
    p.add_argument("--jobs", type=int, default=2, help="children (and ptxas runs) at once")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds per input (a hang)")
    p.add_argument("--out", default=None, help="folder for the findings' mutants and reports")
    p.add_argument("--keep", type=int, default=3, help="mutants saved per signature")
    p.add_argument("--corpus-root", default=None, help="repository root (default: this one)")
    p.add_argument("--no-ptxas", action="store_true", help="do not assemble accepted PTX")
    p.add_argument(
        "--check-meaning",
        type=float,
        default=0.0,
        metavar="F",
        help="check this share of the accepted mutants for meaning (the passes up to "
        "lower-aref against the interpreter, at their source's corpus sizes; default 0)",
    )
    p.add_argument(
        "--check-timeout",
        type=float,
        default=CHECK_TIMEOUT,
        help="seconds per meaning check (past them it is skipped as unchecked)",
    )
    p.add_argument("--replay", metavar="FILE", help="run one saved mutant and show the verdict")
    args = p.parse_args(argv)

    if args.replay is not None:
        res = replay(
            args.replay,
            timeout=args.timeout,
            use_ptxas=not args.no_ptxas,
            check_timeout=args.check_timeout,
        )
        print(res.report(), end="" if res.outcome.stderr.endswith("\n") else "\n")
        return 1 if res.cls in FINDINGS else 0
    inputs = args.inputs if args.inputs is not None or args.seconds is not None else 1000
    summary = run_campaign(
        args.corpus_root,
        inputs=inputs,
        seconds=args.seconds,
        seed=args.seed,
        first=args.first,
        jobs=args.jobs,
        timeout=args.timeout,
        out=args.out,
        use_ptxas=not args.no_ptxas,
        keep=args.keep,
        progress=lambda line: print(line, flush=True),
        check_meaning=args.check_meaning,
        check_timeout=args.check_timeout,
    )
    print(summary.format())
    return 1 if summary.findings else 0


if __name__ == "__main__":
    sys.exit(main())
