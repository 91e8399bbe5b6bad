"""One ranking of Wainer's 16 models × 131 datasets × 4 folds by the hierarchical model of k models, end to end
(``rank_models``, 4 chains × (1000 + 1000), seed 1), with the package found first on ``PYTHONPATH``: timed by
``farm-bench`` against another checkout's (benchmarks/README.md, "Speed on a complete grid").

    farm-bench -n 3 --vs "env PYTHONPATH=<other checkout> python benchmarks/bench_rank_wainer.py" \\
        -- env PYTHONPATH=. python benchmarks/bench_rank_wainer.py
"""

import logging
from pathlib import Path

import pandas as pd

from mlflow_bayescompare.families.ranking.engine import rank_models
from mlflow_bayescompare.vocabulary.options import RankOptions

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "wainer_ll.csv"

if __name__ == "__main__":
    logging.disable(logging.WARNING)
    options = RankOptions(seed=1, chains=4, draws=1000, drop_incomplete=True)  # lymphography: qda lacks two folds
    result = rank_models(pd.read_csv(DATA), dataset="db", folds=4, options=options)
    print(result.ranking["model"].iloc[0], round(float(result.ranking["p_best"].iloc[0]), 3))
