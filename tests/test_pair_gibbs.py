"""The Gibbs sampler of the ranking's pairs (``sampling/pair_gibbs.py``) against the Stan program it replaces there:
the same posterior, a pair's draws independent of the pairs sampled with it, an interrupt that stops every batch."""

import dataclasses
import os
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from mlflow_bayescompare.families.ranking.hierarchical_k.engine import PAIR_THIN, sample_program, stan_inputs
from mlflow_bayescompare.families.ranking.scores import read_scores
from mlflow_bayescompare.sampling import pair_gibbs
from mlflow_bayescompare.vocabulary.options import RankOptions

DATA = Path(__file__).parent / "data"
OPTIONS = RankOptions(seed=1, chains=4, draws=1000, warmup=1000)


def _pair(frame: pd.DataFrame, a: str, b: str, **read) -> tuple:
    """The pair's scores and Stan data as the ranking's pair_tests makes them."""
    scores = read_scores(frame, **read)
    index = [scores.models.index(a), scores.models.index(b)]
    alone = dataclasses.replace(scores, models=[a, b], blocks=[block[:, index] for block in scores.blocks])
    return alone, stan_inputs(alone, OPTIONS)


@pytest.fixture(scope="module")
def wainer() -> pd.DataFrame:
    return pd.read_csv(DATA / "wainer_ll.csv")


def _summary(draws: dict, scale: float, rope: float = 0.01) -> dict:
    """The pair's δ0, σ0 (the paper's, in metric units), log ν and the next dataset's three probabilities."""
    delta0 = np.sqrt(2) * scale * np.asarray(draws["d"])[..., 0].ravel()
    sigma0 = np.sqrt(2) * scale * np.asarray(draws["sigma0"]).ravel()
    nu = np.asarray(draws["nu"]).ravel()
    following = delta0 + sigma0 * np.random.default_rng(0).standard_t(nu)
    return {"delta0": delta0, "sigma0": sigma0, "log_nu": np.log(nu),
            "next": np.array([np.mean(following < -rope), np.mean(abs(following) <= rope), np.mean(following > rope)])}


@pytest.fixture(scope="module")
def sklearn() -> pd.DataFrame:
    return pd.read_csv(DATA / "sklearn_cv.csv")


@pytest.mark.parametrize("data, a, b", [("wainer", "knn", "dt"), ("wainer", "rf", "xgb"), ("sklearn", "rf", "knn"),
                                        ("sklearn", "logreg", "rf")])
def test_a_pair_has_the_posterior_of_the_stan_program(request, data, a, b):
    # Wainer's pairs on 131 four-fold datasets and scikit-learn's on 8 datasets of 5 × 2 CV, sampled by the Stan
    # program at k = 2 (NUTS, 4 × 1000 after 1000) and by Gibbs as the ranking does: δ0, σ0 and log ν's means within
    # 4 Monte-Carlo standard errors of their difference (ESS-based, 400 draws' worth each side at least), the next
    # dataset's probabilities within 0.03.  A wrong prior or conditional fails: on scikit-learn's 8 datasets, ν' ~
    # Gamma(α, β) with α ≤ 1 in place of the paper's α ≤ 5 moved rf vs knn's mean log ν from 3.1 to 1.9; on Wainer's,
    # Gamma(ν/2) for τ_i's Gamma((ν + 1)/2) moved rf vs xgb's σ0 by 2.6 ×
    read = {"dataset": "db", "folds": 4, "drop_incomplete": True} if data == "wainer" else {}
    _, inputs = _pair(request.getfixturevalue(data), a, b, **read)
    stan, _ = sample_program(inputs.stan_data, OPTIONS, None)
    (gibbs,) = pair_gibbs.sample_pairs([inputs.stan_data], chains=4, draws=1000, warmup=300, thin=PAIR_THIN, seed=1)
    ours, theirs = _summary(gibbs.draws, inputs.scale), _summary(stan.draws, inputs.scale)
    for name in ("delta0", "sigma0", "log_nu"):
        se = np.sqrt(np.var(ours[name]) / 400 + np.var(theirs[name]) / 400)
        assert abs(ours[name].mean() - theirs[name].mean()) < 4 * se, (name, ours[name].mean(), theirs[name].mean())
    np.testing.assert_allclose(ours["next"], theirs["next"], atol=0.03)


def test_a_pairs_draws_do_not_depend_on_the_pairs_sampled_with_it(wainer):
    # the invariance of issue 38 item 4, at its root: knn vs dt's draws are the same to the bit alone (sampled in
    # this process), beside two pairs of the same dataset count (one batch, split across the worker processes) and
    # beside one of another count; and a pair with other bounds on α (another prior of ν') keeps its own prior beside
    # pairs of the same count
    _, alone = _pair(wainer, "knn", "dt", dataset="db", folds=4, drop_incomplete=True)
    _, same = _pair(wainer, "rf", "svm", dataset="db", folds=4, drop_incomplete=True)
    _, other = _pair(wainer, "lr", "ridge", dataset="db", folds=4, drop_incomplete=True)
    short = dataclasses.replace(other)
    short.stan_data = {**other.stan_data}
    for key in ("c", "m", "w", "p_i", "v_c"):
        short.stan_data[key] = other.stan_data[key][:40]
    short.stan_data.update(q=40, q_c=40, idx_c=list(range(1, 41)))
    other_prior = {**same.stan_data, "alpha_low": 2.0}
    settings = dict(chains=4, draws=50, warmup=40, thin=2, seed=7)
    first = pair_gibbs.sample_pairs([alone.stan_data], **settings)[0]
    other_alone = pair_gibbs.sample_pairs([other_prior], **settings)[0]
    together = pair_gibbs.sample_pairs([same.stan_data, alone.stan_data, same.stan_data, short.stan_data, other_prior],
                                       **settings)
    for name in ("d", "sigma0", "nu"):
        assert np.array_equal(first.draws[name], together[1].draws[name]), name
        assert np.array_equal(other_alone.draws[name], together[4].draws[name]), name
    assert not np.array_equal(first.draws["d"], pair_gibbs.sample_pairs([same.stan_data], **settings)[0].draws["d"])


def test_the_gamma_variates_follow_their_law():
    # τ_i's Gamma((ν + 1)/2) variates (single precision, drawn at their sweep, one call per pair and chain, between
    # the blocks of the other variates): mean, variance and the Kolmogorov-Smirnov test against scipy's law, shapes
    # from ν = 1 to ν = 79
    randoms = pair_gibbs._Randoms([np.random.default_rng(i) for i in range(3)], 4, 500, np.full((3, 500), 1.5))
    shape = np.tile([1.0, 1.3, 5.0, 40.0], (3, 1))
    draws = []
    for sweep in range(2 * pair_gibbs.BLOCK):
        randoms.sweep(sweep)
        draws.append(randoms.gamma(shape))
    draws = np.array(draws)
    for j, a in enumerate(shape[0]):
        values = draws[:, :, j, :].ravel()
        assert values.mean() == pytest.approx(a, rel=0.02) and values.var() == pytest.approx(a, rel=0.05)
        assert stats.kstest(values, stats.gamma(a).cdf).pvalue > 0.001, a


def test_nus_marginal_prior_is_the_papers_hierarchy():
    # ν' ~ Gamma(α, β), α ~ U(0.5, 5), β ~ U(0.05, 0.15) (the paper's prior) drawn 400,000 times against nu_prior's
    # table with α and β integrated out: the CDF of log ν' within 0.004 at 999 quantiles (0.0018 measured; a
    # Kolmogorov-Smirnov distance of 0.004 at 400,000 draws has p < 1e-5); the table's mass is 1.  A wrong integral
    # fails by far more: without the factor α (the β integral's Γ(α + 1)/Γ(α)) the CDFs part by 0.18
    rng = np.random.default_rng(5)
    draws = np.log(rng.gamma(rng.uniform(0.5, 5, 400_000), 1 / rng.uniform(0.05, 0.15, 400_000)))
    grid = pair_gibbs.NU_GRID
    density = np.exp(pair_gibbs.nu_prior(0.5, 5.0, 0.05, 0.15) + grid)  # per unit of log ν'
    cdf = np.concatenate([[0], np.cumsum((density[1:] + density[:-1]) / 2 * np.diff(grid))])
    assert cdf[-1] == pytest.approx(1, abs=1e-4)
    at = np.quantile(draws, np.linspace(0.001, 0.999, 999))
    assert np.max(np.abs(np.interp(at, grid, cdf) - np.linspace(0.001, 0.999, 999))) < 0.004


def _workers() -> list[int]:
    """The pids of this process's worker processes (sampling/subprocesses.py; Linux: /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if ppid == os.getpid() and b"_serve" in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


@pytest.mark.timeout(120)  # a worker left running would hang it
def test_an_interrupt_stops_every_batch(wainer):
    # Ctrl-C (here: the progress hook raising it) ends sample_pairs at once: the worker processes are killed and
    # reaped, the threads that read them end; run to its end, this call would sweep 10⁷ times
    _, inputs = _pair(wainer, "knn", "dt", dataset="db", folds=4, drop_incomplete=True)
    raised = []

    def interrupt(sweep, sweeps):
        if sweep >= pair_gibbs.BLOCK:
            raise KeyboardInterrupt

    def call():
        try:
            pair_gibbs.sample_pairs([inputs.stan_data] * 4, chains=2, draws=10, warmup=10**7, thin=1, seed=1,
                                    report=interrupt)
        except KeyboardInterrupt:
            raised.append(True)

    caller = threading.Thread(target=call)
    caller.start()
    caller.join(timeout=120)
    assert not caller.is_alive() and raised
    assert not [t for t in threading.enumerate() if t.name.startswith("worker-relay")]
    assert not _workers()


@pytest.mark.timeout(120)  # a worker left running would hang it
def test_a_workers_failure_is_raised_here_and_ends_the_others(wainer):
    # a batch that fails in its worker process (here: data without c) raises here, naming the cause, at once (the
    # other worker, given 10⁷ sweeps, is killed) and leaves no process behind
    _, inputs = _pair(wainer, "knn", "dt", dataset="db", folds=4, drop_incomplete=True)
    broken = {key: value for key, value in inputs.stan_data.items() if key != "c"}  # in the second worker's batch
    with pytest.raises(RuntimeError, match="a worker process failed: KeyError: 'c'"):
        pair_gibbs.sample_pairs([inputs.stan_data] * 3 + [broken], chains=2, draws=10, warmup=10**7, thin=1, seed=1)
    assert not _workers()
