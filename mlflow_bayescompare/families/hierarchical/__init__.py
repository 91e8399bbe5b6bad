"""The Bayesian hierarchical correlated t-test (Corani, Benavoli, Demšar, Mangili & Zaffalon, Machine Learning 2017):
:mod:`.engine` (``hierarchical_test``), :mod:`.prepare` (the Stan data), :mod:`.summary` (the answers from the draws,
with the per-dataset tests the paper compares with), :mod:`.result`, :mod:`.report`, :mod:`.plots` and :mod:`.run`
(the pipeline's parts: fit, pre-flight, the comparison run)."""
