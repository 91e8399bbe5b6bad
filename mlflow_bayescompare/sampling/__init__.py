"""The Stan layer: :mod:`.programs` (the ``.stan`` files, priors, backends, caches and seeds), :mod:`.sampler`
(one fit on either backend), :mod:`.pystan_backend` and :mod:`.cmdstan_backend` (each backend's insides),
:mod:`.workers` (many fits in parallel processes) and :mod:`.convergence` (R-hat and ESS)."""
