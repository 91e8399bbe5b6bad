"""Layer 5, what a result's MLflow run holds and writing it: :mod:`.bundle` computes a run's content before the run
is touched, :mod:`.runlog` writes it, :mod:`.several` is the one run of a decision on several metrics,
:mod:`.matrix` the pairs table of a matrix and :mod:`.paircache` reads those tables back as a cache."""
