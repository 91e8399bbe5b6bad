"""Warm-up length of the hierarchical test: what a shorter warm-up costs in R-hat, ESS and probabilities, and saves
in sampling time.  The evidence behind ``options.MATRIX_PAIR_WARMUP`` (the warm-up of a matrix's pairs) and its
retry: a pair whose chains disagree after it is sampled again after the full warm-up (row ``matrix``).

Two sets of pairs, each fitted at every warm-up length, and as a matrix samples its pairs, with the same seeds and
4 chains × 1000 draws:

* the paper's data (``tests/data/uci_classification.csv``): all 10 pairs of its 5 classifiers, 54 datasets;
* the data of ``bench_scale.py``: 10 models × 100 datasets × 100 scores, model i better by 0.01 × i; every third of
  its 45 pairs.

Per set and warm-up it prints the mean Stan sampling time per fit and its ratio to the longest warm-up's, the max
R-hat, how many fits exceed R-hat 1.01, the min bulk and tail ESS, divergences, and the largest difference of
P(left), P(rope), P(right) from the first warm-up's fit of the same pair and seed.  Row ``noise`` fits the first
warm-up again with other seeds: its max |dP| is the Monte-Carlo error alone.

    python benchmarks/bench_warmup.py                       # warm-ups 1000,300; seeds 1,2 (about 5 min)
    python benchmarks/bench_warmup.py --warmups 1000,500,300,250 --seeds 1,2,3
"""

from __future__ import annotations

import argparse
import itertools
import time
from pathlib import Path

import numpy as np
import pandas as pd

from mlflow_bayescompare import hierarchical_test
from mlflow_bayescompare.families.hierarchical.engine import as_tensor
from mlflow_bayescompare.vocabulary.options import MATRIX_PAIR_WARMUP

#: Row ``noise``: the reference warm-up again with the seeds shifted by this, so independent chains: its max |dP| is
#: the Monte-Carlo error of the probabilities alone, against which the other rows' are read.
NOISE_SEED = 1000
UCI = Path(__file__).resolve().parents[1] / "tests" / "data" / "uci_classification.csv"


def uci_pairs():
    """The paper's 10 pairs, as tensors."""
    raw = pd.read_csv(UCI)
    tidy = pd.DataFrame({"dataset": raw["DatasetID"].astype(str), "model": raw["ClassifierID"].astype(str),
                         "repeat": raw["Key.Run"], "fold": raw["Key.Fold"], "score": raw["Percent.correct"]})
    for a, b in itertools.combinations(sorted(tidy["model"].unique()), 2):
        yield f"{a}-{b}", dict(scores_a=tidy, model_a=a, model_b=b)


def scale_pairs(step: int = 3):
    """Every ``step``-th pair of bench_scale.py's models (its generator: same seed, same draws)."""
    rng = np.random.default_rng(2017)
    models, datasets, n = 10, 100, 100
    difficulty = rng.uniform(0.6, 0.9, datasets)
    scores = np.clip(difficulty[None, :, None] + 0.01 * np.arange(models)[:, None, None]
                     + rng.normal(0, 0.03, (models, datasets, n)), 0, 1)
    for i, j in list(itertools.combinations(range(models), 2))[::step]:
        yield f"m{i}-m{j}", dict(scores_a=as_tensor(scores[i], scores[j], folds=10, model_a=f"m{i}",
                                                     model_b=f"m{j}"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--warmups", default="1000,300", help="comma-separated; the first is the reference")
    ap.add_argument("--seeds", default="1,2")
    args = ap.parse_args()
    warmups = [int(w) for w in args.warmups.split(",")]
    seeds = [int(s) for s in args.seeds.split(",")]
    hierarchical_test(diffs=np.random.default_rng(0).normal(0, 0.01, (3, 10)), folds=10, seed=0, chains=2,
                      draws=20, warmup=20)  # compile / load the program before timing
    start = time.perf_counter()
    print(f"4 chains x 1000 draws, warm-ups {warmups}, seeds {seeds}; reference: warm-up {warmups[0]}")
    print(f"{'data':8} {'warmup':>6} {'fits':>4} {'stan s':>7} {'ratio':>6} {'R-hat max':>9} {'>1.01':>5} "
          f"{'ESS bulk':>8} {'ESS tail':>8} {'div':>4} {'max |dP|':>8}")
    for name, pairs in (("paper", list(uci_pairs())), ("scale", list(scale_pairs()))):
        reference: dict = {}
        rows = []
        for warmup in [*warmups, "noise", "matrix"]:
            sampler = dict(default_warmup=MATRIX_PAIR_WARMUP) if warmup == "matrix" else \
                dict(warmup=warmups[0]) if warmup == "noise" else dict(warmup=warmup)
            fits = []
            for (pair, data), seed in itertools.product(pairs, seeds):
                res = hierarchical_test(**data, folds=10, seed=seed + (NOISE_SEED if warmup == "noise" else 0),
                                        draws=1000, chains=4, model_check=False, **sampler)
                probs = np.array([res.p_left, res.p_rope, res.p_right])
                reference.setdefault((pair, seed), probs)
                fits.append((res.diagnostics, np.abs(probs - reference[pair, seed]).max()))
            d = [f[0] for f in fits]
            rows.append((warmup, len(fits), np.mean([x["sampling_seconds"] for x in d]),
                         max(x["rhat_max"] for x in d), sum(x["rhat_max"] > 1.01 for x in d),
                         min(x["ess_bulk_min"] for x in d), min(x["ess_tail_min"] for x in d),
                         sum(int(x["divergences"]) for x in d), max(f[1] for f in fits)))
        for warmup, count, seconds, rhat, over, bulk, tail, div, dp in rows:
            print(f"{name:8} {warmup:>6} {count:>4} {seconds:>7.2f} {seconds / rows[0][2]:>6.2f} {rhat:>9.4f} "
                  f"{over:>5} {bulk:>8.0f} {tail:>8.0f} {div:>4} {dp:>8.3f}", flush=True)
    print(f"done in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
