"""The pairs of a ranking of many models (issue 38): their calibration, their agreement with the pair test, their
invariance to an unrelated model.

* ``calibration``: five models equal on average (30 datasets × 10 folds, rope 0.01, ``simulation/rankings.py``) under
  an interaction sd of 0.005, 0.01, 0.02, 0.03, with heavy tails (Student-t, 3 degrees of freedom, sd 0.02), on a
  ragged grid (30% of the (model, dataset) cells missing, sd 0.02), and with one erratic model among steady ones
  (0.005 × 4 and 0.03; 0.003 × 4 and 0.02): every credible pair is false.  Per scenario: the share of pairs called
  credible by the hierarchical model of k models and by Bradley-Terry, under the rankings' rule (P(better) ≥ 0.975,
  :func:`mlflow_bayescompare.families.ranking.common.credible`) and under the one-sided reading (P(better) ≥ 0.95) it
  replaces; and, on two pairs per replicate (m1 vs m2, m4 vs m5), the two-model test's verdict (``compare``: a
  decision for either model at 0.95) and the claim ``--require a-better`` chosen before seeing the data (m1 better
  than m2, m4 better than m5); with ``--models isotropic``, issue 27's program (one spread for every pair) beside.
  Clopper-Pearson 95% intervals.  Rows are appended to ``calibration/pairs_calibration.csv`` as they come (a second
  run resumes).
* ``heterogeneity``: four steady models and an erratic one (issue 38's): the next dataset's P(rope) of each kind of
  pair against its truth, the current program and issue 27's.
* ``power``: five models 0.015 apart (issue 27's ordered scenario): the share of pairs called credible by gap, the
  order recovered, the true best leading; hierarchical and BBT.
* ``agreement``: the ranking's pairs against ``compare``'s hierarchical test of each pair, on scikit-learn's CV
  (``tests/data/sklearn_cv.csv``), the paper's data (``uci_classification.csv``) and subsets of Wainer's 16 × 131
  (``wainer_ll.csv``): the largest difference of P(better / rope / worse) (compare's statistic, the share of draws in
  which each outcome's mass on the next dataset is the largest) and of the next dataset's probabilities (those masses
  averaged).  The pairs of the current ranking are each pair's own fit of the paper's model; issue 27's program's
  came from its joint fit.
* ``invariance``: the same data with and without a model far from the others: how far every other pair moves.
* ``reference``: ``stan/hierarchical_k.stan`` (its rewrites) against ``benchmarks/hierarchical_k_direct.stan`` (the
  same model with the fold effects and the datasets' effects sampled, every fold score's likelihood) on small data
  drawn from the model, complete and ragged: the posterior means and sds of d, σ0, ν, Ω and the pairs' spreads, in
  units of their Monte-Carlo standard errors.

    python benchmarks/bench_pairs.py calibration [--replicates 20] [--scenarios 0.005,0.01,...] [--models ...]
    python benchmarks/bench_pairs.py power|heterogeneity|agreement|invariance|reference
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from mlflow_bayescompare.families.hierarchical.engine import hierarchical_test
from mlflow_bayescompare.families.ranking.engine import rank_models
from mlflow_bayescompare.families.ranking.hierarchical_k import engine as hierarchical_k
from mlflow_bayescompare.families.ranking.hierarchical_k.result import summarise
from mlflow_bayescompare.families.ranking.scores import read_scores
from mlflow_bayescompare.sampling import convergence, programs, sampler
from mlflow_bayescompare.simulation import rankings
from mlflow_bayescompare.simulation import sbc_models as sbc
from mlflow_bayescompare.vocabulary.options import RankOptions

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "tests" / "data"
OUT = HERE / "calibration"
FIT = dict(chains=4, draws=1000)
#: the calibration's scenarios, by label
SCENARIOS = {
    "0.005": rankings.Scenario(interaction=0.005),
    "0.01": rankings.Scenario(interaction=0.01),
    "0.02": rankings.Scenario(interaction=0.02),
    "0.03": rankings.Scenario(interaction=0.03),
    "t3": rankings.Scenario(interaction=0.02, tails=3),
    "ragged": rankings.Scenario(interaction=0.02, missing=0.3),
    "erratic": rankings.Scenario(interaction=(0.005,) * 4 + (0.03,)),
    "erratic-mild": rankings.Scenario(interaction=(0.003,) * 4 + (0.02,)),
}
#: the pairs fitted by the two-model test in each replicate
TESTED = (("m1", "m2"), ("m4", "m5"))


# ------------------------------------------------------------------------------------------------ issue 27's model


def rank_isotropic(frame: pd.DataFrame, models=None, seed: int = 1):
    """The ranking by issue 27's program (``benchmarks/hierarchical_k_isotropic.stan``: Ω = σ0² I, one spread √2 σ0
    for every pair), summarised as the package summarises the current one: the data of ``stan_inputs`` in the old
    layout (b_i = A_i'v_i, |v_i|²), and Ω = σ0² I per draw."""
    programs.PROGRAMS.setdefault("hierarchical_k_isotropic", HERE / "hierarchical_k_isotropic.stan")
    opts = RankOptions(seed=seed, **FIT).with_seed().with_warmup()
    scores = read_scores(frame, models=models)
    inputs = hierarchical_k.stan_inputs(scores, opts)
    data = inputs.stan_data
    v, maps = hierarchical_k.contrasts(data)
    old = {**data, "b": [(a.T @ x).tolist() for a, x in zip(maps, v)], "v_squared": [float(x @ x) for x in v]}
    run = sampler.run("hierarchical_k_isotropic", old, chains=opts.chains, draws=opts.draws, warmup=opts.warmup,
                      seed=opts.seed)
    sigma0 = run.draws["sigma0"].reshape(run.draws["d"].shape[:2])
    run.draws["Omega"] = sigma0[..., None, None] ** 2 * np.eye(len(inputs.basis) - 1)
    return summarise(scores, inputs, run, opts, form="issue 27's isotropic population")


# ------------------------------------------------------------------------------------------------ calibration


def _count(result, threshold: float) -> dict:
    """Pairs, credible pairs by the rankings' rule, and by the one-sided reading P(better) ≥ threshold."""
    column = "p_better" if "p_better" in result.pairs else "p_above_half"
    return {"pairs": len(result.pairs), "credible": len(result.credible_pairs()),
            "one_sided": int((result.pairs[column] >= threshold).sum())}


def _replicate(label: str, scenario, replicate: int, seed: int, models: list[str]) -> list[dict]:
    frame = rankings.scores(scenario, np.random.default_rng([seed, replicate]))
    rows = []
    for model in [m for m in models if m != "compare"]:
        result = (rank_isotropic(frame, seed=replicate + 1) if model == "isotropic" else
                  rank_models(frame, model=model, seed=replicate + 1, skip_missing=model == "bbt", **FIT))
        rows.append({"model": model, **_count(result, result.settings["threshold"])})
    for a, b in TESTED if "compare" in models else ():
        pair = frame[frame["model"].isin((a, b))]
        pair = pair[pair.groupby("dataset")["model"].transform("nunique") == 2]  # the datasets both have
        test = hierarchical_test(pair, model_a=a, model_b=b, folds=scenario.folds, seed=replicate + 1, draws=1000,
                                 model_check=False)
        rows.append({"model": f"compare {a}-{b}", "pairs": 1,
                     "credible": int(test.decision in ("a_better", "b_better")),
                     "one_sided": int(test.p_a_better >= test.settings["threshold"])})
    return [{"scenario": label, "replicate": replicate, **row} for row in rows]


def _interval(count: int, total: int) -> str:
    low, high = stats.binomtest(count, total).proportion_ci(0.95, method="exact")
    return f"{count}/{total} = {count / total:.1%} [{low:.1%}, {high:.1%}]"


def calibration(args) -> None:
    OUT.mkdir(exist_ok=True)
    path = OUT / args.out
    for label in args.scenarios.split(","):
        for r in range(args.replicates):
            done = pd.read_csv(path) if path.exists() else pd.DataFrame(columns=["scenario", "replicate", "model"])
            here = done[(done["scenario"].astype(str) == label) & (done["replicate"] == r)]["model"]
            models = [m for m in args.models.split(",") if not here.str.startswith(m).any()]
            if not models:
                continue
            start = time.perf_counter()
            rows = pd.DataFrame(_replicate(label, SCENARIOS[label], r, args.seed, models))
            rows.to_csv(path, mode="a", header=not path.exists(), index=False)
            print(f"{label} replicate {r}: {time.perf_counter() - start:.0f} s", flush=True)
    summarise_calibration(pd.read_csv(path))


def summarise_calibration(table: pd.DataFrame) -> None:
    table = table.assign(kind=table["model"].str.split(" ").str[0])
    for (label, kind), part in table.groupby(["scenario", "kind"], sort=False):
        pairs = int(part["pairs"].sum())
        replicates = part["replicate"].nunique()
        if kind == "compare":
            print(f"{label:13s} compare ({replicates} replicates × {len(TESTED)} pairs): verdict for either model "
                  f"{_interval(int(part['credible'].sum()), pairs)}; --require a-better chosen in advance "
                  f"{_interval(int(part['one_sided'].sum()), pairs)}", flush=True)
        else:
            print(f"{label:13s} {kind:12s} ({replicates} replicates): credible (P ≥ 0.975) "
                  f"{_interval(int(part['credible'].sum()), pairs)}; P(better) ≥ 0.95 "
                  f"{_interval(int(part['one_sided'].sum()), pairs)}", flush=True)


# ------------------------------------------------------------------------------------------------ power


def power(args) -> None:
    scenario = rankings.Scenario(means=(0.03, 0.015, 0.0, -0.015, -0.03))
    truth = rankings.model_names(5)
    for model in ("hierarchical", "bbt"):
        by_gap: dict[int, list[int]] = {}
        exact = leading = 0
        for r in range(args.replicates):
            result = rank_models(rankings.scores(scenario, np.random.default_rng([args.seed, r])), model=model,
                                 seed=r + 1, **FIT)
            exact += result.order == truth
            leading += result.best == truth[0]
            credible = result.credible_pairs()
            for i in range(5):
                for j in range(i + 1, 5):
                    by_gap.setdefault(j - i, []).append(frozenset((truth[i], truth[j])) in credible)
        gaps = ", ".join(f"{0.015 * g:.3f} apart {np.mean(v):.0%} ({sum(v)}/{len(v)})" for g, v in by_gap.items())
        print(f"ordered, {model}, {args.replicates} replicates: order recovered {exact}, true best leading {leading}; "
              f"pairs credible: {gaps}", flush=True)


# ------------------------------------------------------------------------------------------------ heterogeneity


def heterogeneity(args) -> None:
    """Issue 38's scenario of four steady models (sd 0.003) and an erratic one (0.02), equal means: the next dataset's
    P(|difference| < rope) of the steady pairs and of the erratic ones, against their truth."""
    scenario = SCENARIOS["erratic-mild"]
    sds = np.asarray(scenario.interaction)
    for population in ("current", "isotropic"):
        found: dict[bool, list[float]] = {False: [], True: []}
        for r in range(args.replicates):
            frame = rankings.scores(scenario, np.random.default_rng([args.seed, r]))
            result = _ranked(frame, rankings.model_names(5), population)
            for row in result.pairs.itertuples(index=False):
                found["m5" in (row.better, row.worse)].append(row.next_rope)
        for erratic, values in found.items():
            spread = np.hypot(sds[0], sds[-1] if erratic else sds[0])
            truth = stats.norm.cdf(0.01, scale=spread) - stats.norm.cdf(-0.01, scale=spread)
            print(f"{population}, {'erratic' if erratic else 'steady'} pairs ({len(values)}): next dataset's P(rope) "
                  f"mean {np.mean(values):.2f} (range {np.min(values):.2f}–{np.max(values):.2f}), truth {truth:.2f}",
                  flush=True)


# ------------------------------------------------------------------------------------------------ real data


def sklearn_scores() -> pd.DataFrame:
    return pd.read_csv(DATA / "sklearn_cv.csv")


def uci_scores() -> pd.DataFrame:
    """The paper's data (5 WEKA classifiers on 54 UCI datasets, 10 × 10-fold CV) as a tidy table."""
    raw = pd.read_csv(DATA / "uci_classification.csv")
    names = {1: "nbc", 2: "aode", 3: "hnb", 4: "j48", 5: "j48gr"}
    return pd.DataFrame({"dataset": "uci" + raw["DatasetID"].astype(str), "model": raw["ClassifierID"].map(names),
                         "repeat": raw["Key.Run"], "fold": raw["Key.Fold"], "folds": 10,
                         "score": raw["Percent.correct"]})


def wainer_scores() -> pd.DataFrame:
    """Wainer's 16 classifiers on 131 datasets (4-fold CV; lymphography, where qda lacks two folds, left out)."""
    raw = pd.read_csv(DATA / "wainer_ll.csv")
    raw = raw[raw["db"] != "lymphography"]
    raw = raw.assign(fold=raw.groupby("db").cumcount())
    tidy = raw.melt(id_vars=["db", "fold"], var_name="model", value_name="score")
    return tidy.rename(columns={"db": "dataset"}).assign(repeat=0, folds=4)


#: (label, scores, models, the far model of the invariance check, datasets or None)
CASES = [
    ("sklearn: the issue's 4 × 6", sklearn_scores, ("logreg", "rf", "knn", "nb"), "nb",
     ("iris", "wine", "breast_cancer", "digits_half", "synthetic_a", "synthetic_b")),
    ("sklearn: 5 × 8", sklearn_scores, ("logreg", "rf", "knn", "nb", "svm"), "nb", None),
    ("paper: 5 × 54", uci_scores, ("nbc", "aode", "hnb", "j48", "j48gr"), "nbc", None),
    ("wainer: trees and nb × 131", wainer_scores, ("rf", "xrf", "gbm", "dt", "nb"), "nb", None),
    ("wainer: linear and qda × 131", wainer_scores, ("lr", "ridge", "svml", "lda", "qda"), "qda", None),
]


def _frame(scores, models, datasets) -> pd.DataFrame:
    frame = scores()
    frame = frame[frame["model"].isin(models)]
    return frame[frame["dataset"].isin(datasets)] if datasets else frame


def _oriented(result) -> dict[tuple[str, str], np.ndarray]:
    """Per pair (alphabetical), P(first better / rope / second better): compare's statistic, then the next dataset's
    probabilities."""
    out = {}
    for r in result.pairs.itertuples(index=False):
        values = [r.p_better, r.p_rope, r.p_worse, r.next_better, r.next_rope, r.next_worse]
        first, second = sorted((r.better, r.worse))
        out[(first, second)] = np.array(values if first == r.better else [values[i] for i in (2, 1, 0, 5, 4, 3)])
    return out


def _pair_test(frame: pd.DataFrame, a: str, b: str) -> np.ndarray:
    folds = int(frame["folds"].iloc[0])
    test = hierarchical_test(frame[frame["model"].isin((a, b))], model_a=a, model_b=b, folds=folds, seed=1,
                             draws=2000, model_check=False)
    left, rope, right = test.next_probs.mean(axis=0)
    return np.array([test.p_a_better, test.p_rope, test.p_b_better, right, rope, left])


def _largest(gaps: np.ndarray) -> str:
    return " / ".join(f"{gaps[:, 3 * i:3 * i + 3].max():.3f}" for i in range(2))


def _ranked(frame: pd.DataFrame, models, population: str):
    """The hierarchical ranking of ``models`` by the current program, or by issue 27's (``isotropic``)."""
    if population == "isotropic":
        return rank_isotropic(frame, models=list(models))
    return rank_models(frame, models=list(models), seed=1, **FIT)


def _cases(args) -> list:
    """The CASES whose label starts with one of ``--cases`` (default: all)."""
    return [case for case in CASES if not args.cases or case[0].startswith(tuple(args.cases.split(",")))]


def agreement(args) -> None:
    for label, scores, models, _, datasets in _cases(args):
        frame = _frame(scores, models, datasets)
        tests = None
        for population in args.populations.split(","):
            ours = _oriented(_ranked(frame, models, population))
            tests = tests or {pair: _pair_test(frame, *pair) for pair in ours}
            gaps = np.array([np.abs(ours[pair] - tests[pair]) for pair in ours])
            print(f"{label}, {population}: largest |ranking − compare| over {len(ours)} pairs (compare's statistic / "
                  f"next dataset): {_largest(gaps)}; median "
                  f"{np.median(gaps[:, :3].max(axis=1)):.3f}", flush=True)


def invariance(args) -> None:
    for label, scores, models, far, datasets in _cases(args):
        frame = _frame(scores, models, datasets)
        rest = [m for m in models if m != far]
        for population in args.populations.split(","):
            every = _oriented(_ranked(frame, models, population))
            without = _oriented(_ranked(frame[frame["model"] != far], rest, population))
            gaps = np.array([np.abs(every[pair] - without[pair]) for pair in without])
            print(f"{label}, {population}, with and without {far}: largest move of the other {len(without)} pairs "
                  f"(compare's statistic / next dataset): {_largest(gaps)}", flush=True)


# ------------------------------------------------------------------------------------------------ reference


def _summaries(d: np.ndarray, omega: np.ndarray, sigma0: np.ndarray, nu: np.ndarray) -> dict[str, np.ndarray]:
    """(draws,) per quantity: d_j, σ0, ν, Ω's entries and every pair's spread √((HΩH')_aa + (HΩH')_bb − 2(HΩH')_ab)."""
    p = d.shape[-1]
    d, omega = d.reshape(-1, p), omega.reshape(-1, p, p)
    basis = hierarchical_k.helmert(p + 1)
    effects = basis @ omega @ basis.T
    out = {f"d_{j + 1}": d[:, j] for j in range(p)}
    out.update({"sigma0": sigma0.ravel(), "nu": nu.ravel()})
    out.update({f"Omega_{a + 1}{b + 1}": omega[:, a, b] for a in range(p) for b in range(a, p)})
    out.update({f"spread_{a + 1}{b + 1}": np.sqrt(effects[:, a, a] + effects[:, b, b] - 2 * effects[:, a, b])
                for a in range(p + 1) for b in range(a + 1, p + 1)})
    return out


def _mc_error(draws: np.ndarray, chains: int) -> float:
    """The Monte-Carlo standard error of a mean, from its bulk ESS."""
    return float(np.std(draws) / np.sqrt(convergence.ess_bulk(draws.reshape(1, chains, -1))[0]))


def _stan_data(blocks: list[np.ndarray]) -> dict:
    """``stan/hierarchical_k.stan``'s data of simulated blocks under the SBC's fixed prior (:data:`sbc.PRIOR_K`)."""
    q, k = len(blocks), blocks[0].shape[1]
    rho, n = np.full(q, 1 / sbc.FOLDS), np.array([len(b) for b in blocks])
    v, c = hierarchical_k.sufficient(blocks, rho)
    data = {**hierarchical_k.sufficient_data(v, c, n, rho, [hierarchical_k.present(b) for b in blocks], k),
            **sbc.PRIOR_K, "shape_df": float(k - 1)}
    return {**data, **hierarchical_k.tau_forms(data), "whiten": hierarchical_k.whitening(data).tolist()}


def reference(args) -> None:
    programs.PROGRAMS.setdefault("hierarchical_k_direct", HERE / "hierarchical_k_direct.stan")
    chains, draws = 4, 5000
    for missing in (0.0, 0.3):
        for r in range(args.replicates):
            _, blocks = sbc.hierarchical_k_scores(np.random.default_rng([args.seed, r, int(missing * 10)]), 6, 4,
                                                  missing, runs=1)
            data = _stan_data(blocks)
            n = len(blocks[0])
            rewritten = sampler.run("hierarchical_k", data, chains=chains, draws=draws, warmup=2000, seed=r + 1,
                                    adapt_delta=0.95)
            direct_data = {"k": 4, "q": 6, "n": n, "y": [np.nan_to_num(b).tolist() for b in blocks],
                           "present": [(~np.isnan(b).all(axis=0)).astype(int).tolist() for b in blocks],
                           "rho": 1 / sbc.FOLDS, "H": hierarchical_k.helmert(4).tolist(), "fold_sd": 100.0,
                           **{key: data[key] for key in ("d_bound", "sigma0_high", "shape_df", "alpha_low",
                                                          "alpha_high", "beta_low", "beta_high")}}
            direct = sampler.run("hierarchical_k_direct", direct_data, chains=chains, draws=draws, warmup=2000,
                                 seed=r + 1, adapt_delta=0.99)
            ours, theirs = (_summaries(x.draws["d"], x.draws["Omega"], x.draws["sigma0"], x.draws["nu"])
                            for x in (rewritten, direct))
            gaps = {name: abs(ours[name].mean() - theirs[name].mean())
                    / np.hypot(_mc_error(ours[name], chains), _mc_error(theirs[name], chains)) for name in ours}
            sds = {name: ours[name].std() / theirs[name].std() for name in ours}
            worst = max(gaps, key=gaps.get)
            print(f"{'ragged' if missing else 'complete'} replicate {r}: {len(gaps)} posterior means, |difference| / "
                  f"its Monte-Carlo se: median {np.median(list(gaps.values())):.2f}, largest {gaps[worst]:.2f} "
                  f"({worst}); over 3: {sum(g > 3 for g in gaps.values())}; sd ratios {min(sds.values()):.2f}–"
                  f"{max(sds.values()):.2f}; divergences {int(rewritten.sampler['divergent__'].sum())} / "
                  f"{int(direct.sampler['divergent__'].sum())}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("study", choices=("calibration", "power", "heterogeneity", "agreement", "invariance",
                                          "reference"))
    parser.add_argument("--replicates", type=int, default=20)
    parser.add_argument("--seed", type=int, default=38)
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--populations", default="current",
                        help="agreement, invariance: the rankings measured (current, isotropic: issue 27's program)")
    parser.add_argument("--out", default="pairs_calibration.csv",
                        help="calibration: the table (in benchmarks/calibration) its replicates are added to")
    parser.add_argument("--cases", default="",
                        help="agreement, invariance: the cases whose label starts so (comma-separated: sklearn,paper)")
    parser.add_argument("--models", default="hierarchical,bbt,compare",
                        help="calibration: the rankings measured (and isotropic: issue 27's program)")
    args = parser.parse_args()
    logging.getLogger("mlflow_bayescompare").setLevel(logging.ERROR)
    {"calibration": calibration, "power": power, "heterogeneity": heterogeneity, "agreement": agreement,
     "invariance": invariance, "reference": reference}[args.study](args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
