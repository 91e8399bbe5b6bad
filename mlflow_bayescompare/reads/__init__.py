"""Reads from MLflow that are not per-fold runs: evaluation runs (:mod:`.evaluations`), one row per item."""
