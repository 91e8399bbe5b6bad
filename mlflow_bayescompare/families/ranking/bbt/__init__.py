"""The Bayesian Bradley-Terry ranking (Wainer 2023): :mod:`.engine` (the wins and the fit), :mod:`.result`,
:mod:`.report` and :mod:`.plots`."""
