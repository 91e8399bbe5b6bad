"""MLflow I/O: :mod:`.collect` and :mod:`.fetch` read scores from runs, :mod:`.cvlog` logs them, :mod:`.bundle`
computes what a result's run holds and :mod:`.runlog` writes it; :mod:`.tags` names the runs' tags and
:mod:`.uiroutes` the links into MLflow's UI."""
