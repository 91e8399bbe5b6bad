"""The one redaction of credentials (:func:`mlflow_bayescompare.vocabulary.console.redact_uri`): every URI in a text
loses its user information, up to the authority's last ``@``, whatever the password holds; nothing else changes."""

from __future__ import annotations

import pytest

from mlflow_bayescompare.vocabulary import console


@pytest.mark.parametrize("text, shown", [
    ("http://alice:PW@host:5000/x", "http://host:5000/x"),
    ("postgresql://u:p@db/mlflow", "postgresql://db/mlflow"),
    ("http://u:pre@TAIL@127.0.0.1:5000", "http://127.0.0.1:5000"),
    ("http://u:a:b@c@127.0.0.1:5000/x?y=1", "http://127.0.0.1:5000/x?y=1"),
    ("https://u:pre%40TAIL%2Fx@host/mlflow/#/experiments/1", "https://host/mlflow/#/experiments/1"),
    ("http://u:p#w?q@host:5000/health", "http://host:5000/health"),  # '#' and '?' unencoded in a password
    ("MLflow at http://u:pre@TAIL@host:5000 failed: HTTP 503", "MLflow at http://host:5000 failed: HTTP 503"),
    ("see 'http://u:pre@TAIL@h1/api' and (postgresql://v:x@y@z/db).", "see 'http://h1/api' and (postgresql://z/db)."),
    ("ray://user:pw@head:10001", "ray://head:10001"),
])
def test_redaction_reaches_the_last_at_before_the_host(text, shown):
    """A password may hold ``@`` (and ``:``, ``?``, ``#``): everything up to the authority's last ``@`` goes, in every
    URI of a message."""
    assert console.redact_uri(text) == shown


@pytest.mark.parametrize("text", [
    "sqlite:///mlflow.db", "http://host:5000/#/experiments/1/runs/abc", "mail bob@example.org about it",
    "file:///tmp/a@b/mlruns",  # an '@' in the path, after the authority: kept
])
def test_text_without_credentials_is_unchanged(text):
    assert console.redact_uri(text) == text


def test_nothing_is_nothing():
    assert console.redact_uri(None) is None and console.redact_uri("") == ""


def test_the_ui_address_of_a_server_holds_no_credentials():
    address, serve = console.ui_address("https://bob:secret@mlflow.example/", "3", "abc")
    assert address == "https://mlflow.example/#/experiments/3/runs/abc?workflowType=machine_learning" and serve is None
