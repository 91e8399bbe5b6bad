"""The ``bayescompare`` MLflow server app: a page and a JSON API to run comparisons from the tracking server.

Start it with ``mlflow server --app-name bayescompare`` (or ``bayescompare-auth`` to layer MLflow's basic-auth).

* :mod:`.app`: the two ``mlflow.app`` factories;
* :mod:`.routes`: the blueprint, its route table and thin handlers;
* :mod:`.permissions`: the route → permission table and the one hook applying it (and MLflow's auth table);
* :mod:`.requests`: reading a request (body, options, query parameters, the server's limits);
* :mod:`.accept`: the checks before a job is accepted, then its run and its submit;
* :mod:`.serialize`: run summaries and the page form's fields;
* :mod:`.artifacts`: reading a comparison's report;
* :mod:`.security`: CSRF and security headers;
* :mod:`.context`: the worker's settings, store client, job runner and paths;
* :mod:`.jobs`: settings, the job runner and the job itself; :mod:`.owners`: job owners and stale runs;
  :mod:`.locks`: host-wide locks; :mod:`.lifecycle`: start-up housekeeping and shutdown.
"""
