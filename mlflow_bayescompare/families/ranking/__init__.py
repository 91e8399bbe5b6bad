"""The rankings of several models, one room per ranking model: :mod:`.hierarchical_k` (the hierarchical model of k
models across datasets, the default), :mod:`.bbt` (Bayesian Bradley-Terry, Wainer 2023) and :mod:`.joint` (the joint
correlated-t model of one dataset), each with its engine, result, report and plots.  Beside them: :mod:`.scores`
(the score reader), :mod:`.engine` (the router, ``rank_models``), :mod:`.common` (what every model shares, among it
the one credible rule), :mod:`.report` and :mod:`.plots` (what every model's report and figures share) and
:mod:`.run` (a ranking's MLflow run)."""
