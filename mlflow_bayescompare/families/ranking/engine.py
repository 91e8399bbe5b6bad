"""``rank_models``: rank several models across datasets with the hierarchical model of their fold scores
(:mod:`.hierarchical_k`, Corani et al. 2017 extended to k models: the default) or with the Bayesian Bradley-Terry
model (BBT) of J. Wainer, "A Bayesian Bradley-Terry model to compare multiple ML algorithms on multiple data sets",
JMLR 24 (2023); on one dataset, with the joint correlated-t model of their fold scores (:mod:`.joint`).
:func:`ranking_model` is the one routing rule, :func:`rank_scores` routes.

Pipeline: scores (tidy, wide, or per-dataset means) → :func:`read_scores` → each pair's outcome on each dataset,
win, loss or tie by the local ROPE (Sec. 6.1, eqs. (dmin) and (dmin2)) → :func:`win_table`, its ties spread or kept
for Davidson's model (Sec. 6.2) → ``stan/bbt.stan`` (Sec. 4, eq. (mod1)) → :func:`.ranking.result.summarise`.
:func:`rank_wins` starts from a table of wins instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...sampling import sampler
from ...vocabulary.console import log
from ...vocabulary.errors import InputError
from ...vocabulary.options import ModelsOptions, RankOptions, build
from ...vocabulary.outcomes import counted, divergent_transitions
from ...vocabulary.progress import Progress, notify
from .hierarchical_k import rank_hierarchical
from .hierarchical_k_result import HierarchicalRankingResult
from .joint import JointRankingResult, rank_one_dataset
from .result import MAX_LISTED, RankingResult, listed, summarise

__all__ = ["rank_models", "rank_scores", "ranking_model", "model_across", "RANKING_PROGRAMS", "rank_wins", "Scores",
           "read_scores", "outcomes", "win_table", "handle_ties", "stan_data", "HYPER_PRIOR_CODES", "NU_SCALE",
           "MAX_LISTED"]

#: the Stan data codes of :attr:`RankOptions.hyper_prior`
HYPER_PRIOR_CODES = {"lognormal": 0, "cauchy": 1, "normal": 2}
#: Davidson's tie parameter: nu ~ N(0, NU_SCALE) (ties of equal models have probability 1/3 at nu = 0)
NU_SCALE = 1.0
_HEADER = "cannot rank the models:"
#: the Stan program of each ranking model that samples one (the joint model of one dataset is closed-form)
RANKING_PROGRAMS = {"bbt": "bbt", "hierarchical": "hierarchical_k"}


@dataclass(frozen=True)
class Scores:
    """Scores of K models on q datasets, greater is better: ``blocks[d]`` is an array (rows, K) of dataset d, its rows
    paired across the models (folds; a single row when only the means are known), NaN where a score is missing (a
    model missing on a dataset: its whole column).  ``fold_counts``: each dataset's folds per repeat of its
    cross-validation, None where unknown (ρ = 1/folds of the hierarchical and joint models); ``folds`` the one
    dataset's, of the joint model (:mod:`.joint`)."""

    models: list[str]
    datasets: list[str]
    blocks: list[np.ndarray]
    folds: int | None = None
    fold_counts: tuple[int | None, ...] = ()

    def lacking(self) -> dict[str, list[str]]:
        """The datasets on which each model has no score, by model (the models that lack none left out)."""
        out = {m: [d for d, b in zip(self.datasets, self.blocks) if np.isnan(b[:, j]).all()]
               for j, m in enumerate(self.models)}
        return {m: ds for m, ds in out.items() if ds}


def rank_models(data, *, models=None, dataset: str | None = None, folds: int | None = None,
                options: RankOptions | None = None, progress: Progress | None = None,
                **settings) -> RankingResult | JointRankingResult | HierarchicalRankingResult:
    """Rank models across datasets by the hierarchical model of their fold scores (:mod:`.hierarchical_k`, the
    default) or by their wins (BBT, Wainer 2023: ``model="bbt"``, and on per-dataset means), or on one dataset by
    the joint correlated-t model of their fold scores (:mod:`.joint`).

    Args:
        data: a DataFrame in one of three forms.  *Tidy*: columns dataset, model, score and optionally repeat and
            fold (folds are paired across models by (repeat, fold); without them, one row per dataset and model).
            *Wide*: one column of scores per model and the dataset column named by ``dataset``, one row per fold
            (paired by their order within a dataset, as bbtcomp reads them).  *Means*: wide without a dataset
            column, one row per dataset (named by the index).
        models: the models to rank, in the order of the tables (default: every model, in order of appearance).
        dataset: the dataset column (default ``dataset`` in a tidy table; none in a wide one).
        folds: the folds of the cross-validation (ρ = 1/folds); default: a tidy table's ``folds`` column, or its
            fold labels when a ``repeat`` column pairs them; ``rho=`` gives ρ instead.
        options: a :class:`~.options.RankOptions`; ``settings`` are its fields as keywords instead, which override
            it (local_rope, local_rope_factor, ties, hyper_prior, rope, chains, seed, drop_incomplete, ...).
        progress: a hook receiving the stages ``compiling`` (once per machine) and ``sampling``.
    """
    opts = build(RankOptions, options, **settings)
    scores = read_scores(data, models=models, dataset=dataset, greater_is_better=opts.greater_is_better,
                         drop_incomplete=opts.drop_incomplete, skip_missing=opts.skip_missing, folds=folds)
    return rank_scores(scores, opts, progress)


def rank_scores(scores: Scores, opts: RankOptions,
                progress: Progress | None = None) -> RankingResult | JointRankingResult | HierarchicalRankingResult:
    """:func:`rank_models` on scores already read (:func:`read_scores`, by ``opts``' direction and rules for
    missing scores): the joint correlated-t model on one dataset, across several the model of
    :func:`ranking_model`."""
    model = ranking_model(scores, opts)
    if model == "joint-t":
        notify(progress, "sampling", f"{len(scores.models)} models on the folds of one dataset (joint correlated-t "
                                     "model, closed form)")
        return rank_one_dataset(scores, opts)
    if model == "hierarchical":
        return rank_hierarchical(scores, opts, progress)
    table = win_table(scores, local_rope=opts.local_rope, factor=opts.local_rope_factor, ties=opts.ties)
    folds = sorted({len(block) for block in scores.blocks})
    return _rank(scores.models, table, opts, progress, {"datasets": scores.datasets, "rows_per_dataset": folds})


def ranking_model(scores: Scores, opts: RankOptions) -> str:
    """The model that ranks ``scores``: ``joint-t`` on one dataset; across datasets ``opts.model``, where ``auto``
    is the hierarchical model on fold scores and BBT on per-dataset means (one score per model and dataset).
    ``vs`` is refused where it has no answer, and BBT where a model lacks a dataset unless ``skip_missing`` (its rule:
    no game there); the hierarchical model takes such datasets as they are."""
    if len(scores.datasets) == 1:
        model = "joint-t"
    else:
        model = model_across(opts, means=all(len(block) == 1 for block in scores.blocks))
    if model == "bbt" and not opts.skip_missing and scores.lacking():
        raise InputError([*(f"model {m!r} has no scores on {len(ds)} of {len(scores.datasets)} datasets: {listed(ds)}"
                            for m, ds in scores.lacking().items()),
                          "Bayesian Bradley-Terry plays every pair on every dataset: skip_missing=True counts no game "
                          "where a model lacks one (the paper's rule), drop_incomplete=True drops those datasets"],
                         header=_HEADER)
    if opts.vs is not None and model != "hierarchical":
        why = ("on one dataset" if model == "joint-t" else "on per-dataset means (bbt ranks them)"
               if opts.model == "auto" else "under model bbt")
        raise InputError(f"vs compares the models with the hierarchical model across datasets, which does not rank "
                         f"{why}", header=_HEADER)
    if opts.vs not in (None, "best") and opts.vs not in scores.models:
        raise InputError(f"vs {opts.vs!r} is not among the models ranked ({', '.join(scores.models)}); give one of "
                         "them, or best for the leader", header=_HEADER)
    return model


def model_across(opts: RankOptions, means: bool) -> str:
    """The model that ranks across datasets: ``opts.model``, where ``auto`` is BBT on per-dataset ``means`` (one
    score per model and dataset) and the hierarchical model on fold scores."""
    if opts.model != "auto":
        return opts.model
    return "bbt" if means else "hierarchical"


def rank_wins(wins: pd.DataFrame, *, models=None, options: RankOptions | None = None,
              progress: Progress | None = None, **settings) -> RankingResult:
    """Rank models from a table of wins, one row per pair: columns model_a, model_b, wins_a, wins_b and optionally
    ties (before any tie handling; ``ties`` of the options says how they enter the model).  ``local_rope`` and
    ``greater_is_better`` play no part."""
    opts = build(RankOptions, options, **settings)
    names, table = _read_wins(wins, models)
    return _rank(names, handle_ties(table, opts.ties), opts, progress, {"datasets": None})


# ------------------------------------------------------------------------------------------------ reading scores


def read_scores(data, *, models=None, dataset: str | None = None, greater_is_better: bool = True,
                drop_incomplete: bool = False, skip_missing: bool = False, folds: int | None = None) -> Scores:
    """The scores of :func:`rank_models`'s ``data``, checked: every problem is reported at once.  A model without
    scores on a dataset is kept as a NaN column (the model that ranks decides: :func:`ranking_model`); a model with
    some of a dataset's scores missing (NaN, or no row) is an error unless ``drop_incomplete`` (drop the dataset, with
    a warning) or ``skip_missing`` (keep them as NaN: :func:`outcomes` counts no game there).  On one dataset,
    ``folds`` (or the table's own, see :func:`rank_models`) is kept for the joint model."""
    if not isinstance(data, pd.DataFrame):
        raise InputError(f"scores must be a pandas DataFrame (tidy, wide or per-dataset means); got "
                         f"{type(data).__name__}")
    columns = set(map(str, data.columns))
    rows = _tidy_rows(data, dataset or "dataset") if {"model", "score"} <= columns else _wide_rows(data, dataset)
    problems: list[str] = []
    names = _pick_models(rows, models, problems)
    rows = rows[rows["model"].isin(names)]
    problems += _bad_values(rows)
    grid = rows.pivot(index=["dataset", "row"], columns="model", values="score").reindex(columns=names)
    datasets = list(pd.unique(rows["dataset"]))
    lacking, lines, partial = _missing(grid, rows, names)
    if lacking and skip_missing:
        log.warning("%d dataset(s) lack some scores; pairs count no game where one is missing (Bradley-Terry's "
                    "rule for missing results): %s", len(lacking), listed(lacking))
    elif lacking and drop_incomplete:
        log.warning("dropped %d dataset(s) on which a model lacks scores: %s", len(lacking), listed(lacking))
        datasets = [d for d in datasets if d not in lacking]
    elif partial:
        problems += [*lines, "drop_incomplete=True drops those datasets; skip_missing=True counts no game where a "
                             "score is missing (the paper's rule for missing results)"]
    if not problems and not datasets:
        problems.append("a ranking needs scores on a dataset at least; every dataset was dropped")
    if problems:
        raise InputError(problems, header=_HEADER)
    sign = 1.0 if greater_is_better else -1.0
    blocks = [sign * grid.loc[d].to_numpy(dtype=float) for d in datasets]
    counts = tuple(_fold_count(part, folds) for part in _dataset_parts(data, dataset, datasets))
    return Scores(names, datasets, blocks, counts[0] if len(datasets) == 1 else None, counts)


def _dataset_parts(data: pd.DataFrame, dataset: str | None, datasets: list[str]) -> list[pd.DataFrame]:
    """The rows of ``data`` of each dataset (the whole table when it has no dataset column: a means table)."""
    column = dataset or "dataset"
    if column not in data.columns:
        return [data.iloc[:0]] * len(datasets)
    names = data[column].astype(str)
    return [data[names == d] for d in datasets]


def _fold_count(data: pd.DataFrame, folds: int | None) -> int | None:
    """The folds of one dataset's cross-validation: ``folds``, else the table's ``folds`` column (one value), else
    the count of fold labels when a ``repeat`` column pairs them; None when unknown."""
    if folds is not None:
        return int(folds)
    if "folds" in data.columns:
        given = pd.to_numeric(data["folds"], errors="coerce").dropna().unique()
        return int(given[0]) if len(given) == 1 else None
    if {"repeat", "fold"} <= set(data.columns) and len(data):
        return int(data["fold"].nunique())
    return None


def _tidy_rows(data: pd.DataFrame, dataset: str) -> pd.DataFrame:
    """dataset, model, row (the fold's key), score (NaN: missing) and bad (inf or not a number) of a tidy table."""
    if dataset not in data.columns:
        raise InputError(f"no dataset column {dataset!r} in the tidy table (columns: "
                         f"{', '.join(map(str, data.columns))}); name it with dataset=", header=_HEADER)
    data = data.reset_index(drop=True)
    keys = [c for c in ("repeat", "fold") if c in data.columns]
    score = pd.to_numeric(data["score"], errors="coerce")
    rows = pd.DataFrame({"dataset": data[dataset].astype(str), "model": data["model"].astype(str),
                         "row": list(zip(*(data[k] for k in keys))) if keys else 0, "score": score,
                         "bad": np.isinf(score) | (score.isna() & data["score"].notna())})
    twice = rows[rows.duplicated(["dataset", "model", "row"], keep=False)]
    if len(twice):
        found = twice.groupby("model", sort=False)["dataset"].unique()
        raise InputError([f"model {m!r} has several scores for one {'/'.join(keys) or 'dataset'} on "
                          f"{listed(list(ds))}" for m, ds in found.items()], header=_HEADER)
    return rows


def _wide_rows(data: pd.DataFrame, dataset: str | None) -> pd.DataFrame:
    """The rows of :func:`_tidy_rows` from a wide table: its rows are folds paired by their order within a dataset;
    without a dataset column each row is one dataset, named by the index."""
    if dataset is not None and dataset not in data.columns:
        raise InputError(f"no dataset column {dataset!r} (columns: {', '.join(map(str, data.columns))})",
                         header=_HEADER)
    frame = data.rename(columns=str)
    if dataset is None:
        if not frame.index.is_unique:
            raise InputError("the rows' index repeats names: give the dataset column with dataset=", header=_HEADER)
        frame = frame.assign(_dataset=frame.index.astype(str), _row=0)
    else:
        frame = frame.assign(_dataset=frame[dataset].astype(str)).drop(columns=dataset)
        frame = frame.assign(_row=frame.groupby("_dataset", sort=False).cumcount())
    texts = [c for c in frame.columns if c not in ("_dataset", "_row") and not pd.api.types.is_numeric_dtype(frame[c])]
    if texts:
        hint = "; name the dataset column with dataset=" if dataset is None else ""
        raise InputError([f"column {c!r} is not numeric: every column but the dataset's must hold one model's "
                          f"scores{hint}" for c in texts], header=_HEADER)
    long = frame.melt(id_vars=["_dataset", "_row"], var_name="model", value_name="score")
    long = long.rename(columns={"_dataset": "dataset", "_row": "row"}).astype({"score": float})
    return long.assign(bad=np.isinf(long["score"]))


def _pick_models(rows: pd.DataFrame, models, problems: list[str]) -> list[str]:
    found = list(pd.unique(rows["model"]))
    try:
        asked = list(ModelsOptions(models=models or ()).models)
    except InputError as exc:
        problems += exc.problems
        asked = []
    unknown = [m for m in asked if m not in found]
    if unknown:
        problems.append(f"models not in the data: {', '.join(unknown)} (found: {', '.join(found)})")
    names = [m for m in asked if m in found] or found
    if len(names) < 3:
        problems.append(f"a ranking needs at least 3 models; got {len(names)} ({', '.join(names)}): compare two "
                        "models with the two-model test (the command `compare`; in Python, compare_runs or "
                        "hierarchical_test)")
    return names


def _bad_values(rows: pd.DataFrame) -> list[str]:
    """One line per model with infinite or non-numeric scores (always an error, unlike a NaN)."""
    return [f"model {model!r} has infinite or non-numeric scores on {listed(pd.unique(part['dataset']))}"
            for model, part in rows[rows["bad"]].groupby("model", sort=False)]


def _missing(grid: pd.DataFrame, rows: pd.DataFrame, names: list[str]) -> tuple[list[str], list[str], bool]:
    """The datasets on which a model lacks a score (no row, or NaN), the lines that say so, per model, and whether a
    model lacks some of a dataset's scores but not all."""
    size = grid.groupby(level="dataset", sort=False).size()

    def count(part: pd.DataFrame) -> pd.DataFrame:
        table = part.groupby(["dataset", "model"], sort=False).size().unstack(fill_value=0)
        return table.reindex(index=size.index, columns=names, fill_value=0)

    given, nan = count(rows), count(rows[rows["score"].isna() & ~rows["bad"]])
    lines = []
    for model in names:
        none, some, nans = given[model] == 0, (given[model] > 0) & (given[model] < size), nan[model] > 0
        if none.any():
            lines.append(f"model {model!r} has no scores on {none.sum()} of {len(size)} datasets: "
                         f"{listed(size.index[none])}")
        if some.any():
            lines.append(f"model {model!r} lacks rows (folds) on {some.sum()} dataset(s): "
                         f"{listed(f'{d} ({given.at[d, model]} of {size[d]} rows)' for d in size.index[some])}")
        if nans.any():
            lines.append(f"model {model!r} has NaN scores on {nans.sum()} dataset(s): "
                         f"{listed(f'{d} ({nan.at[d, model]} of {size[d]} rows)' for d in size.index[nans])}")
    gaps = given.lt(size, axis=0) | (nan > 0)
    partial = gaps & (given > 0) & (nan < given)
    return list(size.index[gaps.any(axis=1)]), lines, bool(partial.to_numpy().any())


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
                         header=_HEADER)
    table = wins.assign(ties=wins["ties"] if "ties" in wins.columns else 0)[need + ["ties"]]
    table = table.astype({"model_a": str, "model_b": str})
    problems: list[str] = []
    long = pd.DataFrame({"model": table[["model_a", "model_b"]].to_numpy().ravel()})  # in order of appearance
    names = _pick_models(long, models, problems)
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
        raise InputError(problems, header=_HEADER)
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


# ------------------------------------------------------------------------------------------------ the fit


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
                         header=_HEADER)
    if not games:
        raise InputError("the table holds no games between the models", header=_HEADER)
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
