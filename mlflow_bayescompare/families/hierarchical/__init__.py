"""The Bayesian hierarchical correlated t-test (Corani, Benavoli, Demšar, Mangili & Zaffalon, Machine Learning 2017):
:mod:`.engine` (``hierarchical_test``), :mod:`.prepare` (the Stan data), :mod:`.baselines` (the tests the paper
compares with), :mod:`.result`, :mod:`.report` and :mod:`.plots`."""
