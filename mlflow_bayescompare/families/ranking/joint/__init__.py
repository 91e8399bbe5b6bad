"""The joint correlated-t model of k models on the folds of one dataset (Corani & Benavoli 2015, generalised):
:mod:`.engine` (the model, closed form), :mod:`.result`, :mod:`.report` and :mod:`.plots`."""
