"""Layer 2, reading MLflow: one quick look that the server answers (:mod:`.reach`), the runs found and named by
their model and dataset (:mod:`.identify`), their fold scores fetched (:mod:`.fetch`) into a tidy table
(:mod:`.collect`), a scikit-learn search's candidates (:mod:`.search`), and the layout those reads expect, which
:func:`.cvlog.log_cv_scores` writes; evaluation runs, one row per item and scorer (:mod:`.evaluations`).  Nothing
here writes a comparison run."""
