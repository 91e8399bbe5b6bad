"""Layer 0, the vocabulary every other layer speaks: the options and their one validation (:mod:`.options`,
:mod:`.optionspec`, :mod:`.optionparse`), the claims ``--require`` names (:mod:`.claims`), errors, progress and the
console, the outcome words and orientation (:mod:`.outcomes`), the runs' tag names (:mod:`.tags`), the keys built
from names (:mod:`.keys`, :mod:`.runkey`), the links into MLflow's UI (:mod:`.uiroutes`) and every private MLflow
name the package uses (:mod:`.mlflow_internals`).  It imports nothing else of the package."""
