"""Our engine side by side with the nearest Python peer, bayes-testkit (PyMC): time to equal effective sample size.

bayes-testkit (import name ``btk``) ships the same two models as this package, written in PyMC: a Bayesian
Bradley-Terry ranking (``BBTTest``, Wainer 2023) and the hierarchical correlated t-test (``HierarchicalTTest``,
Corani et al. 2017 / Benavoli et al. 2017).  Both engines fit the same data here, one after the other in one
process:

* **BBT** on ``tests/data/wainer_ll.csv`` (16 classifiers x 132 datasets x 4 folds): ours is ``rank_models`` with
  its defaults (paired local rope 0.4, ties spread, σ ~ LogNormal(0, 0.5); ``skip_missing=True`` for qda's two
  missing folds, as ``bench_rank.py``); the peer is ``BBTTest(local_rope_effect_size=0.4, tie_solver="spread")``,
  the same tie rule, so both models see the same win/tie counts (checked), and otherwise the peer's defaults.
* **hierarchical test** on ``tests/data/uci_classification.csv`` (54 datasets x 10 runs x 10 folds), rope 0.01,
  ρ = 1/10, for each pair of ``--pairs``: ours is ``hierarchical_test`` with its defaults; the peer is
  ``HierarchicalTTest(rope=0.01).fit(..., fold_col="fold")`` on the same accuracies.

What is timed.  Every model is compiled and fitted once before anything is timed (ours: the Stan programs, cached;
the peer: PyMC's model build and pytensor's C compile, cached on disk, which PyMC partly redoes at every fit).  Per
fit: the sampler's wall time (ours: the chains in httpstan's processes; the peer: PyMC's own ``sampling_time``,
from the first NUTS iteration to the last draw), the whole call (that plus everything else the call does: reading,
the model build and compile for the peer, summaries), CPU seconds of the whole call (this process and its child
processes: steadier than wall time on a shared machine), and the bulk ESS (arviz, rank-normalised) of the key
quantities: β_k (min over k) and σ for BBT; δ0, σ0 and ν for the hierarchical test.  The figure compared is
**seconds per 1000 effective draws** = sampler seconds / (min ESS / 1000), and the ratio peer ÷ ours is the time
the peer needs to reach the same effective sample size.  The target: ours faster on every case (ratio > 1).

The peer's β has a free mean (β_k ~ N(0, σ) iid); only differences of strengths enter its likelihood, so that mean
is set by the prior alone and mixes slowly.  Ours samples the strengths in the sum-to-zero subspace.  The peer's
ESS of β is therefore taken on its centred strengths β_k - mean(β), the same quantity as ours (and the larger of
the two figures, so the choice favours the peer); the raw figure is printed beside it.

The peer's hierarchical test is far slower than its BBT (a 100 x 100 multivariate normal per dataset, explicit σ_i,
each gradient a batch of Cholesky factorisations and triangular solves): at its defaults (1000 tune + 1000 draws)
a pair takes hours on this machine.  It therefore runs its default schedule under a wall-clock budget
(``--peer-hier-budget``, per pair; 0 = no budget) and is stopped there through PyMC's documented ``callback`` hook
(``KeyboardInterrupt``).  Stopped before its first draw, it has no ESS; what it did is reported (iterations,
leapfrog steps, seconds per gradient), and its seconds per 1000 effective draws are bounded from below by 1000
gradient evaluations (at most one effective draw per leapfrog step; NUTS on this posterior is far below that),
spread over its parallel chains.  Such a ratio is printed as ">= x", a lower bound, and is what the target checks.

BLAS threads are pinned to 1 (OPENBLAS/OMP/MKL_NUM_THREADS, unless set): PyMC runs one chain per core, and with a
multi-threaded OpenBLAS under load a gradient of the peer's hierarchical model took 7 times longer.

    python -m venv /tmp/peer-venv && /tmp/peer-venv/bin/pip install -e . bayes-testkit   # once, from the repo root
    /tmp/peer-venv/bin/python benchmarks/bench_peer.py [--seed 1] [--pairs nbc-hnb,j48-j48gr] [--peer-cores 2]
                                                       [--peer-hier-budget 240] [--cases bbt,hier]

Never install bayes-testkit (PyMC, pytensor) into the environment the project is developed in: it changes numpy,
scipy and arviz under it.  Nothing is written into the repository.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("TQDM_DISABLE", "1")  # bayes-testkit's win-table progress bars

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import logging  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from importlib import metadata  # noqa: E402
from pathlib import Path  # noqa: E402

from proc_cpu import cpu_now  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
LL = ROOT / "tests" / "data" / "wainer_ll.csv"
UCI = ROOT / "tests" / "data" / "uci_classification.csv"
VENV = "/tmp/peer-venv"
MAKE_VENV = f"python -m venv {VENV} && {VENV}/bin/pip install -e {ROOT} bayes-testkit"
CLASSIFIERS = {"nbc": 1, "aode": 2, "hnb": 3, "j48": 4, "j48gr": 5}
ROPE, FOLDS = 0.01, 10
LOCAL_ROPE, TIES = 0.4, "spread"
FLAG = 0.05  # headline probabilities differing by more than this are flagged
TOP = 3


class _Collect(logging.Handler):
    """Keeps PyMC's warnings (convergence checks) for the notes of the run that raised them."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage().split(". ")[0])

    def drain(self) -> list[str]:
        out, self.lines = list(dict.fromkeys(self.lines)), []
        return out


PYMC_SAYS = _Collect()


def _first_words(message: str) -> str:
    """A warning's first paragraph on one line (bayes-testkit's start with a newline, then list the problems)."""
    first = message.strip().split("\n\n")[0]
    return " ".join(line.strip() for line in first.splitlines() if line.strip())


def _missing_peer() -> str | None:
    if importlib.util.find_spec("btk") is None:
        return "bayes_testkit is not importable"
    try:
        metadata.version("bayes-testkit")
    except metadata.PackageNotFoundError:
        return "a module btk is importable but it is not bayes-testkit's"
    if importlib.util.find_spec("mlflow_bayescompare") is None:
        return "mlflow_bayescompare is not importable beside it"
    return None


# ------------------------------------------------------------------------------------------------ measuring


def ess(x) -> float:
    """Bulk ESS (arviz, rank-normalised) of draws (chains, draws)."""
    import arviz as az
    import numpy as np

    return float(az.ess(np.asarray(x, dtype=float), method="bulk"))


def rhat(x) -> float:
    import arviz as az
    import numpy as np

    return float(az.rhat(np.asarray(x, dtype=float)))


def leapfrog_per_draw(stats) -> float:
    """Mean leapfrog steps per draw from PyMC's sample stats (``n_steps``; ``tree_size`` inside the sampler)."""
    name = "n_steps" if "n_steps" in stats else "tree_size"
    return float(stats[name].mean())


def load1() -> float:
    return os.getloadavg()[0]


@dataclass
class Run:
    """One engine's fit of one case."""

    case: str
    engine: str
    chains: int
    schedule: str  # warm-up + draws per chain
    sampler_s: float
    call_s: float
    cpu_s: float
    load: float
    ess: dict[str, float] = field(default_factory=dict)  # key quantity -> bulk ESS (the ones the minimum is over)
    shown: str = ""  # how the ESS column reads
    leapfrog: float = float("nan")
    divergences: int = 0
    rhat: float = float("nan")
    floor: float | None = None  # a lower bound of s/1000 ESS when the run has no ESS (stopped by the budget)
    notes: list[str] = field(default_factory=list)

    @property
    def min_ess(self) -> float:
        return min(self.ess.values()) if self.ess else float("nan")

    @property
    def per_1000(self) -> float:
        """Sampler seconds per 1000 effective draws (of the worst key quantity)."""
        if not self.ess:
            return self.floor if self.floor is not None else float("nan")
        return self.sampler_s / (self.min_ess / 1000)


def timed(call, *args, **kwargs):
    """(result, wall seconds, CPU seconds, 1-min load average at the start) of call(*args, **kwargs)."""
    load = load1()
    cpu0, t0 = cpu_now(), time.perf_counter()
    out = call(*args, **kwargs)
    return out, time.perf_counter() - t0, cpu_now() - cpu0, load


# ------------------------------------------------------------------------------------------------ BBT


def ours_bbt(ll, seed: int) -> tuple[Run, object]:
    from mlflow_bayescompare.families.ranking.engine import rank_models

    res, wall, cpu, load = timed(rank_models, ll, dataset="db", seed=seed, skip_missing=True, model="bbt")
    d = res.diagnostics
    beta, sigma = res.draws["beta"], res.draws["sigma"]
    e_beta = min(ess(beta[..., k]) for k in range(beta.shape[-1]))
    run = Run("bbt", "ours", beta.shape[0], f"{res.settings['warmup']}+{res.settings['draws']}",
              d["sampling_seconds"], wall, cpu, load, {"beta": e_beta, "sigma": ess(sigma)},
              leapfrog=d["leapfrog_per_draw"], divergences=d["divergences"],
              rhat=max([rhat(beta[..., k]) for k in range(beta.shape[-1])] + [rhat(sigma)]))
    run.shown = f"β {e_beta:.0f}, σ {run.ess['sigma']:.0f}"
    run.notes.append(d["parameterisation"])
    return run, res


def peer_bbt_fit(ll, seed: int, chains: int | None, cores: int, **sample):
    from btk import BBTTest

    test = BBTTest(local_rope_effect_size=LOCAL_ROPE, tie_solver=TIES)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        test.fit(ll, dataset_col="db", random_seed=seed, chains=chains, cores=cores, progressbar=False, **sample)
    test.caught = [_first_words(str(w.message)) for w in caught if "BLAS" not in str(w.message)]
    return test


def peer_bbt(ll, seed: int, chains: int | None, cores: int) -> tuple[Run, object]:
    test, wall, cpu, load = timed(peer_bbt_fit, ll, seed, chains, cores)
    idata = test.idata_
    post, stats = idata.posterior, idata.sample_stats
    beta, sigma = post["beta"].to_numpy(), post["sigma"].to_numpy()
    centred = beta - beta.mean(axis=-1, keepdims=True)
    k = beta.shape[-1]
    e_centred = min(ess(centred[..., i]) for i in range(k))
    e_raw = min(ess(beta[..., i]) for i in range(k))
    run = Run("bbt", "peer", beta.shape[0], f"{int(post.attrs.get('tuning_steps', 0))}+{beta.shape[1]}",
              float(post.attrs["sampling_time"]), wall, cpu, load, {"beta": e_centred, "sigma": ess(sigma)},
              leapfrog=leapfrog_per_draw(stats), divergences=int(stats["diverging"].sum()),
              rhat=max([rhat(centred[..., i]) for i in range(k)] + [rhat(sigma)]))
    run.shown = f"β {e_centred:.0f} (raw β {e_raw:.0f}), σ {run.ess['sigma']:.0f}"
    raw_rhat = max(rhat(beta[..., i]) for i in range(k))
    run.notes.append(f"R-hat of raw β {raw_rhat:.3f}; raw-β s/1000 ESS "
                     f"{run.sampler_s / (min(e_raw, run.ess['sigma']) / 1000):.2f}")
    run.notes += [f"its warning: {w}" for w in dict.fromkeys(test.caught)]
    run.notes += [f"PyMC: {w}" for w in PYMC_SAYS.drain()]
    return run, test


def p_best_peer(test) -> dict[str, float]:
    import numpy as np

    beta = test.idata_.posterior["beta"].to_numpy().reshape(-1, len(test.algorithms))
    best = np.bincount(beta.argmax(axis=1), minlength=beta.shape[1]) / beta.shape[0]
    return dict(zip(test.algorithms, best.tolist()))


def same_counts(ours_res, test) -> tuple[bool, str]:
    mine = ours_res.wins[["model_a", "model_b", "wins_a_post", "wins_b_post", "ties"]]
    theirs = test.win_table.rename(columns={"alg1": "model_a", "alg2": "model_b", "wins1": "wins_a_post",
                                            "wins2": "wins_b_post"})
    merged = mine.merge(theirs, on=["model_a", "model_b"], suffixes=("", "_peer"), how="outer")
    equal = bool(len(merged) == len(mine) == len(theirs) and all(
        (merged[c] == merged[f"{c}_peer"]).all() for c in ("wins_a_post", "wins_b_post", "ties")))
    decisive = int((mine["wins_a_post"] + mine["wins_b_post"]).sum())
    return equal, f"{len(mine)} pairs, {int(mine['ties'].sum())} tied datasets, {decisive} games after the ties"


# ------------------------------------------------------------------------------------------------ hierarchical


def uci_scores(frame, name: str):
    """(54, 100) accuracies of one classifier, datasets in order, each row run-major (run, fold)."""
    sub = frame[frame.ClassifierID == CLASSIFIERS[name]].sort_values(["DatasetID", "Key.Run", "Key.Fold"])
    return sub["Percent.correct"].to_numpy().reshape(sub.DatasetID.nunique(), -1)


def peer_frame(frame, a: str, b: str):
    """The peer's wide input: dataset, fold (1..10, each repeated once per run), a, b."""
    import pandas as pd

    fa = frame[frame.ClassifierID == CLASSIFIERS[a]].sort_values(["DatasetID", "Key.Run", "Key.Fold"])
    fb = frame[frame.ClassifierID == CLASSIFIERS[b]].sort_values(["DatasetID", "Key.Run", "Key.Fold"])
    if not ((fa.DatasetID.to_numpy() == fb.DatasetID.to_numpy()).all()
            and (fa["Key.Fold"].to_numpy() == fb["Key.Fold"].to_numpy()).all()):
        sys.exit("internal error: the two classifiers' folds do not line up")
    return pd.DataFrame({"dataset": fa.DatasetID.to_numpy(), "fold": fa["Key.Fold"].to_numpy(),
                         a: fa["Percent.correct"].to_numpy(), b: fb["Percent.correct"].to_numpy()})


def ours_hier(frame, a: str, b: str, seed: int, **settings):
    from mlflow_bayescompare import hierarchical_test

    datasets = [str(d) for d in sorted(frame.DatasetID.unique())]
    return hierarchical_test(uci_scores(frame, a), uci_scores(frame, b), folds=FOLDS, rope=ROPE, seed=seed,
                             model_a=a, model_b=b, datasets=datasets, **settings)


def ours_hier_run(frame, a: str, b: str, seed: int) -> tuple[Run, object]:
    res, wall, cpu, load = timed(ours_hier, frame, a, b, seed)
    d, dr = res.diagnostics, res.draws
    keys = {"δ0": dr["delta0"], "σ0": dr["sigma0"], "ν": dr["nu"]}
    run = Run(f"{a}-{b}", "ours", dr["delta0"].shape[0], f"{res.settings['warmup']}+{res.settings['draws']}",
              d["sampling_seconds"], wall, cpu, load, {k: ess(v) for k, v in keys.items()},
              leapfrog=d["leapfrog_per_draw"], divergences=d["divergences"],
              rhat=max(rhat(v) for v in keys.values()))
    run.shown = ", ".join(f"{k} {v:.0f}" for k, v in run.ess.items())
    run.notes.append(d["parameterisation"])
    if res.settings["perturbed"]:
        run.notes.append(f"{len(res.settings['perturbed'])} constant datasets patched")
    return run, res


class Budget:
    """PyMC's ``callback``: records each iteration's tree size and wall time per chain, and stops sampling (the
    documented ``KeyboardInterrupt``) once ``seconds`` have passed since ``start`` (0: never)."""

    def __init__(self, seconds: float, start: float):
        self.seconds, self.start, self.stopped = seconds, start, False
        self.iters: dict[int, list[tuple[bool, float, float]]] = {}  # chain -> (tuning, tree size, wall s)
        self.first: float | None = None  # perf_counter at the start of the first iteration (system-wide clock)

    def __call__(self, trace, draw):
        stats = draw.stats[0] if isinstance(draw.stats, list) else draw.stats
        self.iters.setdefault(draw.chain, []).append(
            (bool(draw.tuning), float(stats.get("tree_size", 0)), float(stats.get("perf_counter_diff", 0))))
        if "perf_counter_start" in stats:
            start = float(stats["perf_counter_start"])
            self.first = start if self.first is None else min(self.first, start)
        if self.seconds and time.perf_counter() - self.start > self.seconds:
            self.stopped = True
            raise KeyboardInterrupt

    def summary(self) -> tuple[int, int, float, float]:
        """(warm-up iterations, draws, leapfrog steps, wall seconds inside the iterations), over all chains."""
        rows = [r for chain in self.iters.values() for r in chain]
        return (sum(r[0] for r in rows), sum(not r[0] for r in rows), sum(r[1] for r in rows),
                sum(r[2] for r in rows))


def peer_hier_fit(wide, seed: int, chains: int | None, cores: int, budget: Budget, **sample):
    from btk import HierarchicalTTest

    test = HierarchicalTTest(rope=ROPE)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            test.fit(wide, dataset_col="dataset", fold_col="fold", random_seed=seed, chains=chains, cores=cores,
                     progressbar=False, callback=budget, **sample)
        except ValueError as exc:  # stopped before any draw: "Not enough samples to build a trace"
            if not budget.stopped:
                raise
            test.error = str(exc)
    test.caught = [_first_words(str(w.message)) for w in caught if "BLAS" not in str(w.message)]
    return test


def peer_hier_run(frame, a: str, b: str, seed: int, chains: int | None, cores: int,
                  seconds: float) -> tuple[Run, object]:
    wide = peer_frame(frame, a, b)
    start = time.perf_counter()
    budget = Budget(seconds, start)
    test, wall, cpu, load = timed(peer_hier_fit, wide, seed, chains, cores, budget)
    warm, drawn, leapfrogs, inside = budget.summary()
    n_chains = len(budget.iters) or (chains or 2)
    sampler = (start + wall - budget.first) if budget.first else wall
    if test.fitted and not getattr(test, "error", None):
        idata = test.idata_
        post, stats = idata.posterior, idata.sample_stats
        keys = {"δ0": post["mu_0"].to_numpy(), "σ0": post["sigma_0"].to_numpy(), "ν": post["nu"].to_numpy()}
        sampler = float(post.attrs.get("sampling_time", sampler))
        run = Run(f"{a}-{b}", "peer", post.sizes["chain"], f"{int(post.attrs.get('tuning_steps', 0))}+"
                  f"{post.sizes['draw']}", sampler, wall, cpu, load, {k: ess(v) for k, v in keys.items()},
                  leapfrog=leapfrog_per_draw(stats), divergences=int(stats["diverging"].sum()),
                  rhat=max(rhat(v) for v in keys.values()))
        run.shown = ", ".join(f"{k} {v:.0f}" for k, v in run.ess.items())
        if budget.stopped:
            run.notes.append(f"stopped by the {seconds:g} s budget: ESS of the {post.sizes['draw']} draws kept")
    else:
        per_gradient = inside / leapfrogs if leapfrogs else float("nan")
        parallel = min(n_chains, cores)
        run = Run(f"{a}-{b}", "peer", n_chains, "1000+1000", sampler, wall, cpu, load,
                  leapfrog=leapfrogs / max(warm + drawn, 1),
                  floor=1000 * per_gradient / parallel)
        per_iter = inside / max(warm + drawn, 1)
        run.shown = (f"none: stopped at {seconds:g} s, {warm} warm-up its over {n_chains} chains "
                     f"({warm // max(n_chains, 1)} of 1000 each), no draw")
        run.notes.append(f"{per_gradient * 1000:.0f} ms per gradient, {leapfrogs / max(warm + drawn, 1):.0f} leapfrog "
                         f"steps per iteration, {per_iter:.2f} s per iteration; its default 1000+1000 would take "
                         f"~{per_iter * 2000 / 60:.0f} min per chain at that pace (a rough guess from its first "
                         "iterations)")
        run.notes.append("s/1000 ESS bounded below by 1000 gradients (<= 1 effective draw per leapfrog step) "
                         f"over {parallel} parallel chain(s)")
    run.notes += [f"its warning: {w}" for w in dict.fromkeys(test.caught)]
    run.notes += [f"PyMC: {w}" for w in PYMC_SAYS.drain()]
    return run, test


def warm_peer_hier(frame, a: str, b: str, seed: int, cores: int) -> float:
    """Build and compile the peer's hierarchical model and run its first iteration, stopped there: pytensor's C
    modules land in its disk cache, as a first fit would leave them."""
    wide = peer_frame(frame, a, b)
    start = time.perf_counter()
    peer_hier_fit(wide, seed, 1, 1, Budget(1e-9, start))
    return time.perf_counter() - start


# ------------------------------------------------------------------------------------------------ the report


def fmt_ratio(peer: Run, ours: Run) -> tuple[float, str]:
    ratio = peer.per_1000 / ours.per_1000
    return ratio, (f">= {ratio:.1f}" if peer.floor is not None and not peer.ess else f"{ratio:.1f}")


def table(runs: list[Run]) -> None:
    print(f"{'case':<10} {'engine':<6} {'chains':>6} {'schedule':>10} {'sampler s':>9} {'call s':>7} {'cpu s':>7} "
          f"{'load':>5} {'leapfrog':>8} {'div':>4} {'R-hat':>6} {'min ESS':>8} {'s/1000 ESS':>10} {'ratio':>8}  "
          "ESS (bulk) of the key quantities")
    ours = {r.case: r for r in runs if r.engine == "ours"}
    for r in runs:
        ratio = fmt_ratio(r, ours[r.case])[1] if r.engine == "peer" and r.case in ours else ""
        per = (f">= {r.per_1000:.2f}" if r.floor is not None and not r.ess else f"{r.per_1000:.2f}")
        print(f"{r.case:<10} {r.engine:<6} {r.chains:>6} {r.schedule:>10} {r.sampler_s:9.2f} {r.call_s:7.2f} "
              f"{r.cpu_s:7.1f} {r.load:5.1f} {r.leapfrog:8.1f} {r.divergences:>4} {r.rhat:6.3f} {r.min_ess:8.0f} "
              f"{per:>10} {ratio:>8}  {r.shown}", flush=True)
        for note in r.notes:
            print(f"{'':<18}{r.engine}: {note}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", default="bbt,hier", help="comma-separated: bbt, hier")
    ap.add_argument("--pairs", default="nbc-hnb,j48-j48gr", help="hierarchical pairs, comma-separated a-b")
    ap.add_argument("--peer-chains", type=int, default=None,
                    help="the peer's chains (default: PyMC's, max(2, cores) = 2 here)")
    ap.add_argument("--peer-cores", type=int, default=os.cpu_count() or 1,
                    help="processes PyMC runs the chains in (default: every CPU, as ours; PyMC's own default is "
                         "cpu_count // 2)")
    ap.add_argument("--peer-hier-budget", type=float, default=240.0,
                    help="wall seconds per pair the peer's hierarchical test may sample (0: no limit; hours)")
    args = ap.parse_args(argv)
    missing = _missing_peer()
    if missing:
        print(f"{missing} in {sys.executable}: make its venv with `{MAKE_VENV}` and run "
              f"`{VENV}/bin/python {Path(__file__).resolve()}`", file=sys.stderr)
        return 2
    cases = {c.strip() for c in args.cases.split(",") if c.strip()}
    if not cases or cases - {"bbt", "hier"}:
        ap.error(f"--cases {args.cases!r}: choose from bbt, hier")
    pairs = [p.strip() for p in args.pairs.split(",") if p.strip()] if "hier" in cases else []
    for p in pairs:
        a, _, b = p.partition("-")
        if a not in CLASSIFIERS or b not in CLASSIFIERS:
            ap.error(f"unknown pair {p!r}: use names {', '.join(CLASSIFIERS)} as a-b")

    warnings.filterwarnings("ignore", message=".*BLAS.*")
    import pandas as pd
    import pymc  # noqa: F401  (sets its loggers' levels on import: quiet them after it)
    import pytensor

    for name in ("mlflow_bayescompare", "pytensor"):
        logging.getLogger(name).setLevel(logging.ERROR)
    pymc_log = logging.getLogger("pymc")  # its convergence warnings go into the notes, not onto the screen
    for handler in list(pymc_log.handlers):
        pymc_log.removeHandler(handler)
    pymc_log.addHandler(PYMC_SAYS)
    pymc_log.setLevel(logging.WARNING)
    pymc_log.propagate = False

    from mlflow_bayescompare.sampling import sampler

    blas = pytensor.config.blas__ldflags or "none linked (NumPy C-API fallback)"
    print(f"ours: mlflow-bayescompare {metadata.version('mlflow-bayescompare')} (Stan via pystan "
          f"{metadata.version('pystan')}, httpstan {metadata.version('httpstan')}); peer: bayes-testkit "
          f"{metadata.version('bayes-testkit')} (PyMC {metadata.version('pymc')}, pytensor "
          f"{metadata.version('pytensor')}, linker {pytensor.config.linker}, BLAS: {blas}); arviz "
          f"{metadata.version('arviz')}; {os.cpu_count()} CPU(s); BLAS threads "
          f"{os.environ['OPENBLAS_NUM_THREADS']}; seed {args.seed}")
    print(f"load average at the start: {' / '.join(f'{x:.2f}' for x in os.getloadavg())} (1 / 5 / 15 min)")

    ll = pd.read_csv(LL)
    uci = pd.read_csv(UCI)
    runs: list[Run] = []
    heads: list[str] = []
    flags: list[str] = []
    t_all = time.perf_counter()

    # ---- first use: compile and warm up everything (not timed below)
    t0 = time.perf_counter()
    compiled = {prog: sampler.compile_program(prog) for prog in (["bbt"] if "bbt" in cases else [])
                + (["hierarchical"] if pairs else [])}
    if "bbt" in cases:
        from mlflow_bayescompare.families.ranking.engine import rank_models

        rank_models(ll, dataset="db", seed=args.seed, skip_missing=True, draws=50, warmup=50, model="bbt")
    if pairs:
        a, _, b = pairs[0].partition("-")
        ours_hier(uci, a, b, args.seed, draws=50, warmup=50)
    ours_first = time.perf_counter() - t0
    peer_first = []
    if "bbt" in cases:
        t0 = time.perf_counter()
        peer_bbt_fit(ll, args.seed, args.peer_chains, args.peer_cores, draws=50, tune=50)
        peer_first.append(f"BBT model build + pytensor compile + a 50+50 fit {time.perf_counter() - t0:.1f} s")
    if pairs:
        a, _, b = pairs[0].partition("-")
        seconds = warm_peer_hier(uci, a, b, args.seed, 1)
        peer_first.append(f"hierarchical model build + compile + 1 iteration {seconds:.1f} s")
    PYMC_SAYS.drain()  # the short warm-up fits' complaints
    print("first use (not timed below): ours: compile " + ", ".join(f"{k} {v:.1f} s" for k, v in compiled.items())
          + f" (0 = cached), with short warm-up fits {ours_first:.1f} s; peer: " + "; ".join(peer_first))

    # ---- BBT
    if "bbt" in cases:
        print(f"\nBBT on {LL.name}: {ll['db'].nunique()} datasets x {ll.shape[1] - 1} models x 4 folds; paired local "
              f"rope {LOCAL_ROPE}, ties '{TIES}' (ceil(ties/2) to each model) for both")
        ours_run, ours_res = ours_bbt(ll, args.seed)
        peer_run, test = peer_bbt(ll, args.seed, args.peer_chains, args.peer_cores)
        equal, what = same_counts(ours_res, test)
        print(f"  same win/tie counts in both models: {'yes' if equal else 'NO'} ({what})")
        print("  priors: ours σ ~ LogNormal(0, 0.5) (Wainer's eq. 2 scale, bbtcomp's default), β = sum-to-zero "
              "(N(0, σ) with its mean integrated out); peer σ ~ LogNormal(0, 1) (its default scale=1.0), "
              "β_k ~ N(0, σ) iid (free mean)")
        print(f"  schedules: ours {ours_run.chains} chains x {ours_run.schedule} (its defaults); peer "
              f"{peer_run.chains} chains x {peer_run.schedule} (PyMC's defaults) in "
              f"{min(args.peer_cores, peer_run.chains)} process(es)")
        runs += [ours_run, peer_run]
        ours_pb = dict(zip(ours_res.ranking["model"], ours_res.ranking["p_best"]))
        peer_pb = p_best_peer(test)
        peer_top = sorted(peer_pb, key=peer_pb.get, reverse=True)[:TOP]
        models = list(dict.fromkeys(list(ours_res.order[:TOP]) + peer_top))
        heads.append("BBT P(best), top 3 of each: " + ", ".join(
            f"{m} ours {ours_pb[m]:.3f} / peer {peer_pb[m]:.3f}" for m in models))
        for m in models:
            if abs(ours_pb[m] - peer_pb[m]) > FLAG:
                flags.append(f"BBT P(best) of {m}: ours {ours_pb[m]:.3f}, peer {peer_pb[m]:.3f} (|diff| "
                             f"{abs(ours_pb[m] - peer_pb[m]):.3f} > {FLAG}): σ's prior differs (LogNormal(0, 0.5) vs "
                             "(0, 1)), and P(best) of two near-equal models is sensitive to it and to MC error")

    # ---- hierarchical
    if pairs:
        print(f"\nhierarchical test on {UCI.name}: {uci.DatasetID.nunique()} datasets x 10 runs x {FOLDS} folds, "
              f"rope {ROPE}, rho 1/{FOLDS}, x = acc(a) - acc(b)")
        print("  priors: ours δ0 ~ U(±max|x|), σ0 ~ U(0, 1000 sd(x̄_i)), σ_i ~ U(0, 1000 mean sd_i) integrated "
              "out, ν = 1 + ν', ν' ~ Gamma(α, β), α ~ U(0.5, 5), β ~ U(0.05, 0.15) (the authors' code); constant "
              "datasets patched with U(±rope) noise; peer μ0 ~ U(-1, 1) (the paper's eq. 18), σ0 and σ_i as ours (σ_i "
              "sampled), ν ~ Gamma(α, β) (no +1: ν may fall below 1), same α, β; no patch")
        print(f"  schedules: ours 4 chains x 1000+1000 (its defaults); peer {args.peer_chains or 2} chains x 1000+1000"
              f" (PyMC's defaults) in {min(args.peer_cores, args.peer_chains or 2)} process(es), "
              + (f"stopped after {args.peer_hier_budget:g} s of sampling per pair" if args.peer_hier_budget
                 else "no time limit"))
        for p in pairs:
            a, _, b = p.partition("-")
            ours_run, res = ours_hier_run(uci, a, b, args.seed)
            peer_run, test = peer_hier_run(uci, a, b, args.seed, args.peer_chains, args.peer_cores,
                                           args.peer_hier_budget)
            runs += [ours_run, peer_run]
            mine = (res.p_left, res.p_rope, res.p_right)
            if test.fitted and not getattr(test, "error", None):
                row = test.decision_table(round_ndigits=None).iloc[0]
                theirs = (float(row.p_left), float(row.p_rope), float(row.p_right))
                heads.append(f"{p} P(left/rope/right): ours {mine[0]:.3f} / {mine[1]:.3f} / {mine[2]:.3f}; peer "
                             f"{theirs[0]:.3f} / {theirs[1]:.3f} / {theirs[2]:.3f}")
                worst = max(abs(u - v) for u, v in zip(mine, theirs))
                if worst > FLAG:
                    why = ["priors differ (δ0 range, ν = 1 + ν' vs ν)"]
                    if res.settings["perturbed"]:
                        why.append(f"{len(res.settings['perturbed'])} constant datasets: ours patched, the peer's "
                                   "σ_i of those can shrink to 0 (improper there)")
                    if peer_run.notes and "budget" in " ".join(peer_run.notes):
                        why.append("the peer's run was cut short (few draws: MC error)")
                    flags.append(f"{p} P(left/rope/right) differ by up to {worst:.3f} > {FLAG}: " + "; ".join(why))
            else:
                heads.append(f"{p} P(left/rope/right): ours {mine[0]:.3f} / {mine[1]:.3f} / {mine[2]:.3f}; peer n/a "
                             "(no draw within the budget)")

    # ---- summary
    print()
    table(runs)
    print("\nheadline numbers (the same question answered by both):")
    for line in heads:
        print(f"  {line}")
    for line in flags:
        print(f"  FLAG {line}")
    ours = {r.case: r for r in runs if r.engine == "ours"}
    ratios = [(r.case, *fmt_ratio(r, ours[r.case])) for r in runs if r.engine == "peer"]
    print("\ntime to equal ESS, peer ÷ ours (sampler seconds per 1000 effective draws of the worst key quantity): "
          + "; ".join(f"{case} {text}" for case, _, text in ratios))
    slower = [case for case, ratio, _ in ratios if not ratio > 1]
    ok = not slower
    print(f"total run time {time.perf_counter() - t_all:.0f} s; load average at the end: "
          f"{' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'PASS' if ok else 'FAIL'}  ours faster to equal ESS on every case"
          + (f" (min ratio {min(r for _, r, _ in ratios):.1f})" if ok else f": not on {', '.join(slower)}"))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
