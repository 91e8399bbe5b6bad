"""Whose pair cache a row belongs to (:mod:`.paircache`): every row of a matrix's pairs table is signed with an HMAC
(RFC 2104, SHA-256) of its fields, the requester and a key that only the requester's side holds, and a later matrix
takes a row only when the signature is its own.

Anyone who may write to an experiment may log a run that looks like a matrix, with any pairs table and any tags
(MLflow's REST API lets every user with write access set any tag): a tag cannot tell who wrote a table, a signature
under a key the writer does not hold can.

* **The key**: ``MLFLOW_BAYESCOMPARE_CACHE_KEY`` when set (any string; the same on machines that share a cache),
  else a random key kept in a file of the user's own, ``<config>/mlflow-bayescompare/cache-key`` (``<config>``:
  ``$XDG_CONFIG_HOME``, else ``%APPDATA%`` on Windows, else ``~/.config``), made on first use, readable by its owner
  only.  A server's jobs sign with the server's (its environment, or its own user's file), the command line and the
  Python API with the caller's.  Without either (the file cannot be made), the cache is off, and the log says why.
* **The requester**: the MLflow user the calls are made as (:func:`~..vocabulary.mlflow_internals.tracking_user`:
  a server job's, the basic-auth user who asked for it; '' on a local store), signed with each row, so that one key
  serving many users (a server's) keeps each user's cache their own.
* **The fingerprint** (:attr:`Signer.fingerprint`, the tag :data:`~..vocabulary.tags.CACHE_FOR` of a matrix run
  holding a signed table) says whose cache a run claims to hold, without telling the key or the user: the cache
  reads only the runs that claim to be the requester's, and refuses those whose rows do not verify.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from ..vocabulary import mlflow_internals
from ..vocabulary.console import log
from .matrix import PairRow

__all__ = ["KEY_ENV", "Signer", "signer", "key_file"]

KEY_ENV = "MLFLOW_BAYESCOMPARE_CACHE_KEY"
_FORMAT = "pair-cache-signature-1"  # changes when what is signed does
_UNSIGNED = ("cached",)  # a row's fields left out of its signature: whether this table read it from another


@dataclass(frozen=True)
class Signer:
    """The key (never shown) and the requester whose cache rows are signed for and read from."""

    key: bytes = field(repr=False)
    requester: str

    @property
    def fingerprint(self) -> str:
        """Whose cache a run holds: a MAC of the requester alone (32 hex digits)."""
        return self._mac("fingerprint", "")[:32]

    def sign(self, row: PairRow) -> str:
        """The signature of ``row``: a MAC of every field of it as its pairs table holds it (but ``cached``)."""
        canonical = PairRow.from_record(row.record()).record()  # as the table gives it back
        return self._mac("row", json.dumps({k: v for k, v in canonical.items() if k not in _UNSIGNED},
                                           sort_keys=True, default=str))

    def signed(self, row: PairRow, signature: object) -> bool:
        """Is ``signature`` this signer's of ``row``?"""
        return isinstance(signature, str) and hmac.compare_digest(self.sign(row), signature)

    def _mac(self, purpose: str, payload: str) -> str:
        message = json.dumps([_FORMAT, purpose, self.requester, payload]).encode()
        return hmac.new(self.key, message, hashlib.sha256).hexdigest()


def signer(tracking_uri: str | None) -> Signer | None:
    """The signer of the pair cache of the user calling ``tracking_uri``, or None (the cache is off, and the log
    says why) when no key can be had."""
    given = os.environ.get(KEY_ENV)
    if given:
        key = hashlib.sha256(given.encode()).digest()
    else:
        path = key_file()
        try:
            key = _kept_key(path)
        except (OSError, ValueError) as exc:
            log.warning("the pair cache is off: no key in %s, and none could be kept in %s (%s)", KEY_ENV, path,
                        getattr(exc, "strerror", None) or exc)
            return None
    return Signer(key, mlflow_internals.tracking_user(tracking_uri))


def key_file() -> Path:
    """Where the user's own key is kept when :data:`KEY_ENV` is not set."""
    config = os.environ.get("XDG_CONFIG_HOME") or (os.environ.get("APPDATA") if os.name == "nt" else None)
    return Path(config or Path.home() / ".config") / "mlflow-bayescompare" / "cache-key"


def _kept_key(path: Path) -> bytes:
    """The key in ``path``, made there first (readable by its owner only) when there is none; two processes making
    it at once keep the same one."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        draft = path.with_name(f".{path.name}-{secrets.token_hex(8)}")
        descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(descriptor, "w") as out:
                out.write(secrets.token_hex(32))
            with contextlib.suppress(FileExistsError):
                os.link(draft, path)  # the first one made wins
        finally:
            draft.unlink()
    key = bytes.fromhex(path.read_text().strip())
    if len(key) < 16:
        raise ValueError(f"the key in {path} is too short")
    return key
