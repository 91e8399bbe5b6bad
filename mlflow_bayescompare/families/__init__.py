"""Layer 4, the test families, one package each: the two-model tests (:mod:`.hierarchical`, :mod:`.signed_rank`,
:mod:`.correlated_t`) and the rankings of k models (:mod:`.ranking`).  A family imports only itself and the layers
below."""
