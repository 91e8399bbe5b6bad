"""The Bayesian Bradley-Terry ranking of several models (Wainer, JMLR 2023): :mod:`.engine` (``rank_models``),
:mod:`.result` (its posterior summaries), :mod:`.report` and :mod:`.plots`."""
