"""The Bayesian signed-rank test on one score per dataset (Benavoli, Corani, Demšar & Zaffalon, JMLR 2017):
:mod:`.engine` (``signed_rank_test``, its result), :mod:`.report`, :mod:`.plots` and :mod:`.run` (the pipeline's
parts: fit, pre-flight, the comparison run)."""
