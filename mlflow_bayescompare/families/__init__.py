"""The test families: each a package that answers "is A better than B" (and "which of k is best") on one kind of
data, importing only itself and the layers below it (``tests/test_layout.py``).

Today: ``evals`` (paired per-item comparisons of evaluation runs, issue 39).  The other families still sit at the
package's root (``hierarchical``, ``signed_rank``, ``correlated_t``, ``ranking``) until the re-organisation of issue
37 moves them here, with the table of families in this module.
"""

__all__: list[str] = []
