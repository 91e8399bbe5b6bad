"""The Bayesian correlated t-test on the per-fold scores of one dataset (Corani & Benavoli, Machine Learning 2015):
:mod:`.formula` (its posterior, the Nadeau-Bengio test and ρ: read by the hierarchical test and the joint ranking
too), :mod:`.engine` (``correlated_t_test``), :mod:`.result`, :mod:`.report`, :mod:`.plots` and :mod:`.run` (the
pipeline's parts: fit, pre-flight, the comparison run)."""
