"""The Bayesian Bradley-Terry ranking (BBT) of J. Wainer, "A Bayesian Bradley-Terry model to compare multiple ML
algorithms on multiple data sets", JMLR 24 (2023): each pair's outcome on each dataset, win, loss or tie by the local
ROPE (Sec. 6.1, eqs. (dmin) and (dmin2)) → :func:`win_table`, its ties spread or kept for Davidson's model (Sec. 6.2)
→ ``stan/bbt.stan`` (Sec. 4, eq. (mod1)) → :func:`.result.summarise`.  :func:`rank_wins` starts from a table of wins
instead.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ....sampling import sampler
from ....vocabulary.errors import InputError
from ....vocabulary.options import RankOptions, build
from ....vocabulary.outcomes import counted, divergent_transitions
from ....vocabulary.progress import Progress, notify
from ..common import HEADER, listed
from ..scores import Scores, pick_models
from .result import RankingResult, summarise

__all__ = ["rank_bbt", "refuse_lacking", "rank_wins", "outcomes", "win_table", "handle_ties", "stan_data",
           "HYPER_PRIOR_CODES", "NU_SCALE"]

#: the Stan data codes of :attr:`RankOptions.hyper_prior`
HYPER_PRIOR_CODES = {"lognormal": 0, "cauchy": 1, "normal": 2}
#: Davidson's tie parameter: nu ~ N(0, NU_SCALE) (ties of equal models have probability 1/3 at nu = 0)
NU_SCALE = 1.0


def rank_bbt(scores: Scores, opts: RankOptions, progress: Progress | None = None) -> RankingResult:
    """Rank the models of ``scores`` (read by :func:`..scores.read_scores`, oriented so that greater is better) by
    their wins across its datasets."""
    table = win_table(scores, local_rope=opts.local_rope, factor=opts.local_rope_factor, ties=opts.ties)
    folds = sorted({len(block) for block in scores.blocks})
    return _rank(scores.models, table, opts, progress, {"datasets": scores.datasets, "rows_per_dataset": folds})


def refuse_lacking(scores: Scores, opts: RankOptions) -> None:
    """BBT plays every pair on every dataset: a model that lacks a dataset is refused unless ``skip_missing`` (the
    paper's rule: no game there)."""
    if not opts.skip_missing and scores.lacking():
        raise InputError([*(f"model {m!r} has no scores on {len(ds)} of {len(scores.datasets)} datasets: {listed(ds)}"
                            for m, ds in scores.lacking().items()),
                          "Bayesian Bradley-Terry plays every pair on every dataset: skip_missing=True counts no game "
                          "where a model lacks one (the paper's rule), drop_incomplete=True drops those datasets"],
                         header=HEADER)


def rank_wins(wins: pd.DataFrame, *, models=None, options: RankOptions | None = None,
              progress: Progress | None = None, **settings) -> RankingResult:
    """Rank models from a table of wins, one row per pair: columns model_a, model_b, wins_a, wins_b and optionally
    ties (before any tie handling; ``ties`` of the options says how they enter the model).  ``local_rope`` and
    ``greater_is_better`` play no part."""
    opts = build(RankOptions, options, **settings)
    names, table = _read_wins(wins, models)
    return _rank(names, handle_ties(table, opts.ties), opts, progress, {"datasets": None})


# ------------------------------------------------------------------------------------------------ the win table


def outcomes(block: np.ndarray, local_rope: str = "paired", factor: float = 0.4) -> np.ndarray:
    """(K, K) outcome of the row model against the column model on one dataset: 1 win, -1 loss, 0 tie, NaN no game.

    ``paired``: tie when |mean(x_i - x_j)| <= factor sd(x_i - x_j) (Sec. 6.1, eq. (dmin2)); ``unpaired``: tie when
    |mean_i - mean_j| <= factor sqrt((sd_i^2 + sd_j^2) / 2) (eq. (dmin)); ``off``: tie when the means are equal.
    sds have ddof 1 (R's ``sd``); with a single row the margin is 0, as in bbtcomp.  Missing scores (NaN) are left
    out, as bbtcomp's ``na.rm``: a pair uses the rows both models have, and no rows make no game (Sec. 5.6).
    """
    if local_rope == "paired":
        centre, sd = _mean_sd(block[:, :, None] - block[:, None, :])
    else:
        means, sds = _mean_sd(block)
        centre, sd = means[:, None] - means[None, :], np.sqrt((sds[:, None] ** 2 + sds[None, :] ** 2) / 2)
    margin = 0.0 if local_rope == "off" else factor * np.nan_to_num(sd)
    return np.sign(centre) * (np.abs(centre) > margin)


def _mean_sd(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and sd (ddof 1) along axis 0 of the values that are not NaN: NaN mean without any, NaN sd with one."""
    valid = ~np.isnan(x)
    n = valid.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(valid, x, 0.0).sum(axis=0) / n
        var = np.where(valid, (x - mean) ** 2, 0.0).sum(axis=0) / (n - 1)
    return mean, np.sqrt(var)


def win_table(scores: Scores, *, local_rope: str = "paired", factor: float = 0.4,
              ties: str = "spread") -> pd.DataFrame:
    """One row per pair (model order): model_a, model_b, wins_a, wins_b, ties counted over the datasets, then the
    counts the model sees (:func:`handle_ties`)."""
    k = len(scores.models)
    wins, tied = np.zeros((k, k), dtype=int), np.zeros((k, k), dtype=int)
    for block in scores.blocks:
        outcome = outcomes(block, local_rope, factor)
        wins += outcome > 0
        tied += outcome == 0
    i, j = np.triu_indices(k, 1)
    names = np.asarray(scores.models, dtype=object)
    table = pd.DataFrame({"model_a": names[i], "model_b": names[j], "wins_a": wins[i, j], "wins_b": wins[j, i],
                          "ties": tied[i, j]})
    return handle_ties(table, ties)


def handle_ties(table: pd.DataFrame, rule: str) -> pd.DataFrame:
    """Add wins_a_post, wins_b_post, ties_post, as bbtcomp's ``proc_ties`` (Sec. 6.2): ``spread`` gives
    ceil(ties / 2) to each model (so an odd count adds a game), ``add`` all ties to each, ``forget`` drops them,
    ``davidson`` keeps them as ties for Davidson's model."""
    extra = {"spread": (table["ties"] + 1) // 2, "add": table["ties"]}.get(rule, 0 * table["ties"])
    return table.assign(wins_a_post=table["wins_a"] + extra, wins_b_post=table["wins_b"] + extra,
                        ties_post=table["ties"] if rule == "davidson" else 0 * table["ties"])


def _read_wins(wins, models) -> tuple[list[str], pd.DataFrame]:
    """The models and the table of :func:`rank_wins`, checked."""
    need = ["model_a", "model_b", "wins_a", "wins_b"]
    if not isinstance(wins, pd.DataFrame) or not set(need) <= set(wins.columns):
        raise InputError(f"a table of wins is a DataFrame with columns {', '.join(need)} and optionally ties",
                         header=HEADER)
    table = wins.assign(ties=wins["ties"] if "ties" in wins.columns else 0)[need + ["ties"]]
    table = table.astype({"model_a": str, "model_b": str})
    problems: list[str] = []
    long = pd.DataFrame({"model": table[["model_a", "model_b"]].to_numpy().ravel()})  # in order of appearance
    names = pick_models(long, models, problems)
    counts = table[["wins_a", "wins_b", "ties"]].apply(pd.to_numeric, errors="coerce")
    if counts.isna().any().any() or (counts < 0).any().any() or (counts % 1 != 0).any().any():
        problems.append("wins_a, wins_b and ties must be whole numbers >= 0")
    both = table["model_a"].isin(names) & table["model_b"].isin(names)
    pairs = list(zip(table["model_a"][both], table["model_b"][both]))
    selves = sorted({a for a, b in pairs if a == b})
    if selves:
        problems.append(f"rows pair a model with itself: {', '.join(selves)}")
    seen = pd.Series([" - ".join(sorted(pair)) for pair in pairs], dtype=object)
    if seen.duplicated().any():
        problems.append(f"pairs with several rows: {listed(pd.unique(seen[seen.duplicated()]))}")
    if problems:
        raise InputError(problems, header=HEADER)
    return names, _ordered_pairs(names, table.assign(**counts.astype(int)))


def _ordered_pairs(names: list[str], table: pd.DataFrame) -> pd.DataFrame:
    """Every pair of ``names`` once, in model order, with the counts of ``table`` (zero for a pair it lacks)."""
    index = {m: k for k, m in enumerate(names)}
    k = len(names)
    wins, tied = np.zeros((k, k), dtype=int), np.zeros((k, k), dtype=int)
    for a, b, wa, wb, t in table[["model_a", "model_b", "wins_a", "wins_b", "ties"]].itertuples(index=False):
        if a in index and b in index:
            wins[index[a], index[b]], wins[index[b], index[a]] = wa, wb
            tied[index[a], index[b]] = tied[index[b], index[a]] = t
    i, j = np.triu_indices(k, 1)
    named = np.asarray(names, dtype=object)
    return pd.DataFrame({"model_a": named[i], "model_b": named[j], "wins_a": wins[i, j], "wins_b": wins[j, i],
                         "ties": tied[i, j]})



def stan_data(models: list[str], table: pd.DataFrame, opts: RankOptions, centred: bool) -> dict:
    """The data block of ``stan/bbt.stan`` from a win table with its ties handled."""
    index = {m: k + 1 for k, m in enumerate(models)}
    return {
        "K": len(models), "N": len(table),
        "first": [index[m] for m in table["model_a"]], "second": [index[m] for m in table["model_b"]],
        "wins_first": table["wins_a_post"].astype(int).tolist(),
        "wins_second": table["wins_b_post"].astype(int).tolist(),
        "ties": table["ties_post"].astype(int).tolist(),
        "davidson": int(opts.ties == "davidson"), "hyper_prior": HYPER_PRIOR_CODES[opts.hyper_prior],
        "hyper_scale": opts.hyper_scale, "nu_scale": NU_SCALE, "centred": int(centred),
    }


def _rank(models: list[str], table: pd.DataFrame, opts: RankOptions, progress: Progress | None,
          extra: dict) -> RankingResult:
    games = table[["wins_a", "wins_b", "ties"]].to_numpy().sum()
    if games and not table[["wins_a", "wins_b"]].to_numpy().any():
        raise InputError("every pair of models is tied on every dataset: nothing ranks them (lower "
                         "local_rope_factor, or set local_rope='off' to count only equal means as ties)",
                         header=HEADER)
    if not games:
        raise InputError("the table holds no games between the models", header=HEADER)
    opts = opts.with_seed().with_warmup()
    on = f" on {counted(len(extra['datasets']), 'dataset')}" if extra.get("datasets") is not None else ""
    notify(progress, "sampling", f"{len(models)} models{on} ({opts.chains} chains × {opts.draws} draws)")
    data = stan_data(models, table, opts, centred=_centred_first(models, table, opts))
    run, form = _sample(data, opts, progress)
    return summarise(models, table, run, opts, form=form, extra=extra, stan_data=data)


def _centred_first(models: list[str], table: pd.DataFrame, opts: RankOptions) -> bool:
    """Sample the strengths centred when the games pin them down more tightly than they spread: the precision P of
    a strength (about K/4 per game of a pair at P(win) = 1/2) times sigma^2 at least 1, sigma estimated from the
    net wins (a moment estimate, its noise removed; under the LogNormal prior at least exp(-2 scale), below which
    that prior keeps sigma).  Otherwise the centred form has a funnel at small sigma, and the non-centred one is
    sampled."""
    k = len(models)
    index = {m: i for i, m in enumerate(models)}
    margin = (table["wins_a_post"] - table["wins_b_post"]).to_numpy(dtype=float)
    net = (np.bincount(table["model_a"].map(index), margin, k) - np.bincount(table["model_b"].map(index), margin, k))
    games = float((table["wins_a_post"] + table["wins_b_post"]).mean())
    if not games:
        return False
    precision = games * k / 4
    spread = np.sum((2 * net / (games * k)) ** 2) / (k - 1) - 1 / precision
    floor = np.exp(-2 * opts.hyper_scale) ** 2 if opts.hyper_prior == "lognormal" else 0.0
    return precision * max(spread, floor) >= 1


def _sample(data: dict, opts: RankOptions, progress: Progress | None) -> tuple[sampler.Run, str]:
    """Sample; when the fit diverges, sample the other form too and keep the fit with fewer divergences."""
    def run(stan_data_):
        return sampler.run("bbt", stan_data_, chains=opts.chains, draws=opts.draws, warmup=opts.warmup,
                       seed=opts.seed, backend=opts.backend, progress=progress)

    first = run(data)
    form = _form(data)
    divergences = int(first.sampler["divergent__"].sum())
    if not divergences:
        return first, form
    other = {**data, "centred": 1 - data["centred"]}
    second = run(other)
    tried = int(second.sampler["divergent__"].sum())
    best, kept, dropped, count = ((second, _form(other), form, divergences) if tried < divergences
                                  else (first, form, _form(other), tried))
    best.seconds = first.seconds + second.seconds  # the reported sampling time covers both fits
    return best, f"{kept}; {dropped} was tried too ({divergent_transitions(count)})"


def _form(data: dict) -> str:
    return "centred strengths" if data["centred"] else "non-centred strengths"
