"""Layer 6, the pipelines: :mod:`.compare` (``compare_runs``, ``compare_matrix``, ``rank_runs``), their one
pre-flight (:mod:`.preflight`) and a matrix's pairs (:mod:`.pairfits`).  The command line, the demo and the
server's jobs call them."""
