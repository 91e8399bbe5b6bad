"""Simulators that check the package against known truths: :mod:`.sbc` (simulation-based calibration of the Stan
programs), :mod:`.studies` (the simulation studies of Corani et al. 2017 on the Appendix's generator),
:mod:`.rankings` (k models' fold scores with a dataset × model interaction, for the ranking's calibration) and
:mod:`.friedman` (the paper's experiment on Friedman's functions, whose generator the ``demo`` command uses).
Used by the tests, ``benchmarks/bench_calibration.py`` and ``examples/reproduce_paper``; nothing else in the
package imports them.  :mod:`.studies` and :mod:`.friedman` need scikit-learn (the ``demo`` extra) where they
cross-validate."""
