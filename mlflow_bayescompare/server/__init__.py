"""The ``bayescompare`` MLflow server app: a page and a JSON API to run comparisons from the tracking server.

Start it with ``mlflow server --app-name bayescompare`` (or ``bayescompare-auth`` to layer MLflow's basic-auth);
see docs/server.md.  :mod:`.app` holds the factories, :mod:`.views` the routes, :mod:`.jobs` the job runner,
:mod:`.security` CSRF and permission checks.
"""
