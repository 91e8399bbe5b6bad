"""Simulation-based calibration (SBC; Talts et al. 2018) of both Stan programs, from the command line: the method,
the simulated priors and the ranks are :mod:`mlflow_bayescompare.simulation.sbc`'s.

Draws: ``--chains`` chains of ``--warmup`` + ``--draws``; L (``--kept``) draws spread evenly over them are kept.  A
hierarchical simulation whose mean(x̄_i) falls outside δ0's bounds is counted and drawn again (``--fit-outside``
fits it).  BBT: ``--models`` models, each pair plays ``--games`` games.  ``--out`` (default
``benchmarks/calibration/``) receives one PNG of rank histograms and one CSV of ranks per configuration.

    python benchmarks/bench_calibration.py                                   # everything: many hours, see README
    python benchmarks/bench_calibration.py --program hierarchical --q 10 --replicates 50 --forms centred
    python benchmarks/bench_calibration.py --program bbt --replicates 200 --out /tmp/sbc

Exit status 0 when no chi-squared p-value is below ``--alpha`` (default 0.001).
"""

from __future__ import annotations

import argparse
import logging
import os
import time
from pathlib import Path

import pandas as pd

from mlflow_bayescompare.sampling import sampler
from mlflow_bayescompare.simulation.sbc import FORMS, Calibration, Config, calibrate, plot, report

DEFAULT_OUT = Path(__file__).resolve().parent / "calibration"


def save_ranks(calibration: Calibration, path: Path) -> Path:
    """One row per fitted replicate: the rank and bulk ESS of every parameter (to re-bin or re-test later), the
    fit's divergences and sampling seconds."""
    c = calibration
    frame = pd.DataFrame({**{f"rank_{k}": v for k, v in c.ranks.items()}, **{f"ess_{k}": v for k, v in c.ess.items()},
                          "divergences": c.fit_divergences, "seconds": c.fit_seconds})
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index_label="replicate")
    return path


def configurations(program: str, qs: list[int], forms: list[str], models: int, games: int) -> list[Config]:
    out = []
    if program in ("hierarchical", "all"):
        out += [Config("hierarchical", form, q=q) for q in qs for form in forms]
    if program in ("bbt", "all"):
        out += [Config("bbt", form, models=models, games=games) for form in forms]
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--program", choices=("hierarchical", "bbt", "all"), default="all")
    parser.add_argument("--replicates", type=int, default=200)
    parser.add_argument("--q", default="10,50", help="datasets of the hierarchical program, comma-separated")
    parser.add_argument("--forms", default="centred,noncentred",
                        help="forms of δ_i / of the strengths, comma-separated: centred, noncentred, alternate "
                             "(by turns), auto (the package's choice from the data)")
    parser.add_argument("--fit-outside", action="store_true",
                        help="also fit the simulations whose mean(xbar) falls outside δ0's bounds (default: count "
                             "them and draw again)")
    parser.add_argument("--models", type=int, default=5, help="BBT: models")
    parser.add_argument("--games", type=int, default=20, help="BBT: games per pair")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--draws", type=int, default=500, help="draws per chain after the warm-up")
    parser.add_argument("--kept", type=int, default=99, help="L: thinned draws the rank is taken among")
    parser.add_argument("--bins", type=int, default=20)
    parser.add_argument("--alpha", type=float, default=0.001, help="FAIL when a chi-squared p-value is below it")
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="directory of the PNG histograms")
    args = parser.parse_args(argv)
    logging.getLogger("mlflow_bayescompare").setLevel(logging.ERROR)
    forms = [f.strip() for f in args.forms.split(",") if f.strip()]
    unknown = [f for f in forms if f not in (*FORMS, "alternate", "auto")]
    if unknown:
        parser.error(f"unknown form(s): {', '.join(unknown)}")
    configs = configurations(args.program, [int(v) for v in args.q.split(",")], forms, args.models, args.games)
    compile_seconds = sum(sampler.compile_program(p, backend=args.backend) for p in {c.program for c in configs})
    print(f"SBC: {args.replicates} replicates per configuration, {args.chains} chains x ({args.warmup} warm-up + "
          f"{args.draws} draws), ranks among L = {args.kept} thinned draws, {args.bins} bins; seed {args.seed}; "
          f"{os.cpu_count()} CPU(s); compile {compile_seconds:.1f} s (not timed)", flush=True)
    start = time.perf_counter()
    results, worst = [], []
    for config in configs:
        def progress(partial, total, seconds, label=config.label):
            if partial.replicates % 25 == 0 or partial.replicates == total:
                print(f"  {label}: {partial.replicates}/{total} in {seconds:.0f} s", flush=True)
                save_ranks(partial, args.out / f"sbc_{label}.csv")  # the ranks so far, in case the run is stopped

        c = calibrate(config, args.replicates, seed=args.seed, chains=args.chains, warmup=args.warmup,
                      draws=args.draws, kept=args.kept, backend=args.backend, skip_outside=not args.fit_outside,
                      progress=progress)
        results.append(c)
        path = plot(c, args.bins, args.out / f"sbc_{config.label}.png")
        print(report(c, args.bins), flush=True)
        print(f"  histograms: {path}; ranks: {save_ranks(c, args.out / f'sbc_{config.label}.csv')}", flush=True)
        worst += [(p, config.label, name) for name, p in c.pvalues(args.bins).items()]
    total = time.perf_counter() - start
    tests = len(worst)
    p, label, name = min(worst)
    below = [w for w in worst if w[0] < args.alpha]
    print(f"wall time {total:.0f} s ({total / 60:.1f} min) for {sum(r.replicates for r in results)} fits")
    print(f"smallest p-value {p:.4f} ({name}, {label}) of {tests} tests; Bonferroni-adjusted {min(1, p * tests):.3f}")
    verdict = "FAIL" if below else "PASS"
    print(f"{verdict}  no chi-squared p-value below {args.alpha:g}"
          + (": " + ", ".join(f"{n} {lab} ({pv:.2g})" for pv, lab, n in below) if below else ""))
    return 1 if below else 0


if __name__ == "__main__":
    raise SystemExit(main())
