"""Several evaluation suites (items grouped into suites, as datasets): the input of the package's hierarchical
model across suites, which answers for the **next** suite as the paper does for the next dataset (Corani et al.
2017, Sec. 3: δ_i ~ t(δ0, σ0, ν) per suite, the suites' mean differences shrunk towards each other).

Within a suite the units are the items, independent, so their correlation is ρ = 0 (folds of a cross-validation
would give 1/folds); with clusters the units are the clusters' mean differences, which are independent where the
items of a cluster are not (Miller 2024, "Adding error bars to evals", Sec. 2.2).  The hierarchical model is its own
family, so this module builds its input and the caller runs it:

    from mlflow_bayescompare import hierarchical_test
    result = hierarchical_test(**suite_inputs(table, "baseline", "candidate", "correctness"), seed=1)

The differences are a − b, the hierarchical test's x (its P(A better) and P(B better) read as usual).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ...vocabulary.errors import InputError
from .pairing import MIN_OVERLAP, align

__all__ = ["MIN_UNITS", "suite_inputs"]

#: the fewest units (items or clusters) a suite needs: its spread must be estimable
MIN_UNITS = 2


def suite_inputs(table: pd.DataFrame, system_a: str, system_b: str, scorer: str, *, rope: float | None = None,
                 kinds: Mapping | None = None, direction: str | Mapping[str, str] | None = None, cluster: bool = True,
                 min_overlap: float = MIN_OVERLAP) -> dict:
    """The keywords of :func:`.hierarchical.engine.hierarchical_test` for one scorer across the table's suites:
    ``diffs`` (per suite the units' differences a − b), ``datasets`` (the suites), ``rho=0``, the ``rope`` (default:
    the kind's), ``greater_is_better`` and the systems' names.  The other arguments as for
    :func:`.engine.compare_evaluations`."""
    aligned = align(table, (system_a, system_b), [scorer], kinds, direction, min_overlap)
    if aligned.suites is None:
        raise InputError("the table names no suite (column suite): compare_evaluations answers for its items")
    scores = aligned.scorers[scorer]
    complete = scores.complete
    x = scores.values[:, 0] - scores.values[:, 1]
    clustered = cluster and aligned.clusters is not None
    units = aligned.clusters if clustered else np.arange(len(x))
    diffs, names, problems = [], [], []
    for suite in pd.unique(aligned.suites):
        mine = complete & (aligned.suites == suite)
        means = pd.Series(x[mine]).groupby(units[mine]).mean().to_numpy()
        if len(means) < MIN_UNITS:
            problems.append(f"suite {suite!r} has {len(means)} paired {'clusters' if clustered else 'items'} with "
                            f"values of scorer {scorer!r}; it needs {MIN_UNITS}")
        diffs.append(means)
        names.append(str(suite))
    if len(names) < 2:
        problems.append(f"the table holds {len(names)} suite; the model across suites needs at least 2")
    if problems:
        raise InputError(problems, header="Cannot compare across suites:")
    return {"diffs": diffs, "datasets": names, "rho": 0.0, "model_a": system_a, "model_b": system_b,
            "rope": scores.kind.default_rope if rope is None else float(rope),
            "greater_is_better": scores.kind.greater_is_better}
