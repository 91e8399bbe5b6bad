"""Scores to the tests' input: :mod:`.tensor` (the paired per-fold differences, or the per-dataset means) and
:mod:`.tidy_checks` (every problem of the rows, found at once)."""
