"""The hierarchical model of k models (Corani et al. 2017 extended; ``stan/hierarchical_k.stan``): :mod:`.engine`
(the Stan data and the fit), :mod:`.result`, :mod:`.report` and :mod:`.plots`."""
