"""The versions a result records, so that it can be reproduced: this package's, MLflow's, the numerical packages'
and the Stan backends' (:func:`versions`), and the Stan that sampled (:func:`stan_version`)."""

from __future__ import annotations

import functools
from importlib import metadata

__all__ = ["PACKAGES", "versions", "stan_version"]

#: the distributions whose versions every result records, those installed
PACKAGES = ("mlflow-bayescompare", "mlflow", "numpy", "scipy", "arviz", "pystan", "httpstan", "cmdstanpy")


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def versions() -> dict[str, str]:
    """The version of each installed package of :data:`PACKAGES`, by distribution name (read once a process:
    reading the metadata costs milliseconds per package, and a simulation ranks thousands of times)."""
    return dict(_installed())


@functools.cache
def _installed() -> tuple[tuple[str, str], ...]:
    return tuple((dist, version) for dist in PACKAGES if (version := _version(dist)) is not None)


def stan_version(backend: str | None) -> str | None:
    """The Stan of a resolved backend (``CmdStan 2.36.0``; pystan's and httpstan's versions), None for none."""
    if backend == "cmdstanpy":
        try:
            import cmdstanpy

            return f"CmdStan {cmdstanpy.cmdstan_version()}"
        except Exception:  # CmdStan found at fit time but its version file is unreadable
            return "CmdStan (unknown version)"
    if backend == "pystan":
        return f"pystan {_version('pystan')}, httpstan {_version('httpstan')}"
    return None
