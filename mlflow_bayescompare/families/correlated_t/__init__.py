"""The Bayesian correlated t-test on the per-fold scores of one dataset (Corani & Benavoli, Machine Learning 2015):
:mod:`.engine` (``correlated_t_test``), :mod:`.result`, :mod:`.report` and :mod:`.plots`."""
