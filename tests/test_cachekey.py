"""Who may reuse a cached pair: the key kept for the user (a file of their own, or MLFLOW_BAYESCOMPARE_CACHE_KEY), the
signature of every row of a pairs table for its requester, and the checks a row must pass against the pair it is read
for (names, test, settings, probabilities, verdict by the decision rule)."""

from __future__ import annotations

import dataclasses
import logging
import os
import stat

import pytest

from mlflow_bayescompare.runs import cachekey, paircache
from mlflow_bayescompare.runs.matrix import PairRow
from mlflow_bayescompare.shared.posterior_summary import posterior_odds, verdict
from mlflow_bayescompare.vocabulary.options import FitOptions

FIT = FitOptions(seed=3, chains=2, draws=200)


def _row(p_a: float, p_rope: float, p_b: float, draws: int = 400) -> PairRow:
    """A pair's row as a fit would give it: its decision and verdict by the product's rule (the probabilities as
    fractions of ``draws``)."""
    probs = {"a_better": p_a, "rope": p_rope, "b_better": p_b}
    decision, sentence = verdict(probs, posterior_odds(probs, draws), "nbc", "hnb", FIT.threshold)
    return PairRow("nbc", "hnb", "hierarchical", p_a, p_rope, p_b, sentence, decision, 6,
                   {"rhat_max": 1.001, "divergences": 0}, {**FIT.to_dict(), "folds": 10}, "k" * 64)


@pytest.fixture
def config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv(cachekey.KEY_ENV, raising=False)
    monkeypatch.delenv("MLFLOW_TRACKING_USERNAME", raising=False)
    return tmp_path


def test_the_key_is_kept_for_its_owner_and_signs_for_one_requester(config, monkeypatch):
    first = cachekey.signer("sqlite:///x.db")
    path = config / "mlflow-bayescompare" / "cache-key"
    assert cachekey.key_file() == path and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert cachekey.signer("sqlite:///x.db") == first and first.requester == ""  # the same key, read back
    assert path.read_text() not in repr(first)  # the key is never shown

    row = _row(0.97, 0.02, 0.01)
    signature = first.sign(row)
    assert first.signed(row, signature) and first.signed(dataclasses.replace(row, cached=True), signature)
    for altered in (dataclasses.replace(row, verdict="hnb is practically better (strong evidence)"),
                    dataclasses.replace(row, p_a_better=0.01, p_b_better=0.97), dataclasses.replace(row, run_id="x")):
        assert not first.signed(altered, signature)
    tampered = signature[:-1] + ("1" if signature[-1] == "0" else "0")  # one digit changed (the key is random)
    assert not first.signed(row, None) and not first.signed(row, tampered)

    alice = cachekey.signer("http://alice:pw@127.0.0.1:5000")
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "bob")
    bob = cachekey.signer("http://127.0.0.1:5000")
    assert (alice.requester, bob.requester) == ("alice", "bob") and alice.key == bob.key == first.key
    assert not alice.signed(row, signature) and not bob.signed(row, alice.sign(row))
    assert len({first.fingerprint, alice.fingerprint, bob.fingerprint}) == 3

    monkeypatch.setenv(cachekey.KEY_ENV, "shared by our CI machines")
    shared = cachekey.signer("http://127.0.0.1:5000")
    assert shared.key != first.key and not shared.signed(row, bob.sign(row))


def test_without_a_key_the_cache_is_off_and_says_why(config, caplog):
    path = cachekey.key_file()
    path.parent.mkdir(parents=True)
    path.write_text("not a key")
    with caplog.at_level(logging.WARNING, logger="mlflow_bayescompare"):
        assert cachekey.signer(None) is None
    assert f"the pair cache is off: no key in {cachekey.KEY_ENV}, and none could be kept in {path}" in caplog.text
    if hasattr(os, "geteuid") and os.geteuid() != 0:  # root may write anywhere
        path.unlink()
        path.parent.chmod(0o500)
        assert cachekey.signer(None) is None


def test_a_row_answers_only_the_pair_it_is_read_for():
    pair = ("nbc", "hnb")
    for row in (_row(0.97, 0.02, 0.01), _row(0.5, 0.3, 0.2), _row(0.0, 1.0, 0.0)):
        assert paircache.mismatch(row, pair, "hierarchical", FIT) is None
    row = _row(0.97, 0.02, 0.01)
    wrong = {
        "names another pair or test": [dataclasses.replace(row, model_a="hnb", model_b="nbc"),
                                       dataclasses.replace(row, test="signed-rank")],
        "was fitted with other settings": [dataclasses.replace(row, settings={**row.settings, "rope": 0.5}),
                                           dataclasses.replace(row, settings={**row.settings, "seed": 4})],
        "holds probabilities that are not a distribution": [
            dataclasses.replace(row, p_a_better=1.5, p_b_better=-0.52), dataclasses.replace(row, p_rope=0.5),
            dataclasses.replace(row, p_rope=float("nan"))],
        "holds a verdict its probabilities do not give": [
            dataclasses.replace(row, decision="b_better"),
            dataclasses.replace(row, verdict="hnb is practically better (strong evidence)"),
            dataclasses.replace(row, p_a_better=0.01, p_b_better=0.97)],
    }
    for why, rows in wrong.items():
        for bad in rows:
            assert paircache.mismatch(bad, pair, "hierarchical", FIT) == why, bad
    assert paircache.mismatch(row, ("nbc", "j48"), "hierarchical", FIT) == "names another pair or test"
    unseeded = dataclasses.replace(FIT, seed=None)  # a seed not given: the row keeps the one drawn for it
    assert paircache.mismatch(row, pair, "hierarchical", unseeded) is None
