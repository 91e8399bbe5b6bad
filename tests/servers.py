"""Start real ``mlflow server`` processes on 127.0.0.1 for the tests, on sqlite or a fresh PostgreSQL database, and
headless Chromium for the page tests.  Shared by ``conftest.py`` and the server tests, which talk to the JSON API
through :class:`mlflow_bayescompare.client.BayesCompareClient` (:meth:`Server.api`); nothing here depends on pytest,
so failures are plain ``RuntimeError``s; and what a test does when a service it needs is missing (:func:`unavailable`:
skip, or fail in CI), the one place that imports pytest."""

from __future__ import annotations

import contextlib
import http.server
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import requests
from skip_policy import REQUIRE_ENV

from mlflow_bayescompare.client import BayesCompareClient

PG_ENV = "MLFLOW_BAYESCOMPARE_PG_URI"


#: the ports :func:`free_port` hands out: below Linux's ephemeral range (32768-60999), from which the kernel gives
#: every client socket its port, so no connection of any process takes one between its reservation and its use
PORTS = range(20000, 30000)
_PORT_LOCKS = Path(tempfile.gettempdir()) / "mlflow-bayescompare-test-ports"
_reserved: dict[int, object] = {}  # port -> its lock file, held open (so locked) until this process ends


def free_port() -> int:
    """A port on 127.0.0.1 that is free now and that no other test process will take: one of :data:`PORTS`,
    reserved by an exclusive ``flock`` on a file of its own, held until this process ends (the kernel drops the lock
    of a process that dies).  The workers of one run (pytest-xdist), and other runs on the machine, skip a reserved
    port, so a server can stop and start again on its port, and an address meant to be unreachable stays so; the
    kernel's ``bind((host, 0))`` gave every worker the same few ports, and a port between its choice and its use
    could go to anyone's client socket.  The search starts at a place drawn from the process id."""
    import fcntl

    _PORT_LOCKS.mkdir(exist_ok=True)
    start = (os.getpid() * 7919) % len(PORTS)
    for offset in range(len(PORTS)):
        port = PORTS[(start + offset) % len(PORTS)]
        if port in _reserved:
            continue
        lock = open(_PORT_LOCKS / f"{port}.lock", "w")  # held open: the reservation
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            continue
        if _bindable(port):
            _reserved[port] = lock
            return port
        lock.close()
    raise RuntimeError(f"no free port on 127.0.0.1 in {PORTS.start}-{PORTS.stop - 1}")


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


# ------------------------------------------------------------------------------------------------ missing services


def unavailable(reason: str) -> NoReturn:
    """Skip the calling test (or module) because a service, browser or test dependency is missing; with
    ``MLFLOW_BAYESCOMPARE_REQUIRE_SERVICES=1`` (``.ci/run``) fail it instead, for the same reason, so that a run
    cannot pass while leaving those tests out."""
    import pytest

    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{reason} ({REQUIRE_ENV}=1: a missing service fails the test)", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def require_module(name: str, reason: str):
    """The module ``name`` (a package of the ``test`` extra), or :func:`unavailable` for ``reason``."""
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError:
        unavailable(reason)


def require_pg() -> str:
    """The admin URI of :func:`pg_base_uri`, or :func:`unavailable` when it is not set."""
    return pg_base_uri() or unavailable(pg_skip_reason())


def require_chromium() -> str:
    """The Chromium of :func:`chromium_executable`, or :func:`unavailable` when it or playwright is missing."""
    return chromium_executable() or unavailable(
        "no Chromium with playwright (set MLFLOW_BAYESCOMPARE_CHROMIUM, pip install playwright)")


# ------------------------------------------------------------------------------------------------ PostgreSQL


def pg_base_uri() -> str | None:
    """The admin URI from ``MLFLOW_BAYESCOMPARE_PG_URI`` (``postgresql://…``, a role that may CREATE DATABASE)."""
    return os.environ.get(PG_ENV) or None


def pg_skip_reason() -> str:
    return (f"set {PG_ENV}=postgresql://user:pass@127.0.0.1:5432/postgres (a role that may CREATE DATABASE) "
            "to run the tests against a PostgreSQL-backed tracking server")


def create_pg_database(base: str | None = None, prefix: str = "bayescompare") -> str:
    """Create ``<prefix>_<random>`` and return MLflow's store URI for it, with the ``postgresql+psycopg2`` scheme
    (MLflow's default ``postgresql://`` driver is psycopg 3, which may be absent; psycopg2 only takes the plain
    scheme, so the admin connection below uses the URI as given)."""

    base = base or pg_base_uri()
    if not base:
        raise RuntimeError(pg_skip_reason())
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    _admin_execute(base, f'CREATE DATABASE "{name}"')
    parts = urllib.parse.urlsplit(base)
    return urllib.parse.urlunsplit(parts._replace(scheme="postgresql+psycopg2", path=f"/{name}"))


def drop_pg_database(store_uri: str, base: str | None = None) -> None:
    """Drop the database of ``store_uri`` (made by :func:`create_pg_database`), closing its connections."""

    base = base or pg_base_uri()
    name = urllib.parse.urlsplit(store_uri).path.lstrip("/")
    _admin_execute(base, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _admin_execute(base: str, sql: str) -> None:
    """Run one statement outside a transaction (CREATE/DROP DATABASE) on the admin connection ``base``."""
    import psycopg2

    conn = psycopg2.connect(_plain_scheme(base))
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
    finally:
        conn.close()


def _plain_scheme(uri: str) -> str:
    parts = urllib.parse.urlsplit(uri)
    return urllib.parse.urlunsplit(parts._replace(scheme="postgresql")) if parts.scheme.startswith("postgres") else uri


# ------------------------------------------------------------------------------------------------ servers


class Server:
    """``mlflow server`` (optionally ``--app-name``) in its own process group; :meth:`stop`, :meth:`kill` and
    :meth:`start` (again, on the same port and store) for fault injection."""

    def __init__(self, tmp: Path, backend: str, *, app: str | None = "bayescompare", extra=(), env=None,
                 prefix: str = "", port: int | None = None, artifacts: Path | str | None = None,
                 start: bool = True, timeout: float = 120):
        self.tmp = Path(tmp)
        self.port = port or free_port()
        self.root = f"http://127.0.0.1:{self.port}"
        self.url = self.root + prefix  # MLflow's base URL (REST and UI) including the static prefix
        self.backend = backend
        self.log = self.tmp / f"server-{self.port}.log"
        cmd = [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(self.port),
               "--backend-store-uri", backend, "--artifacts-destination", str(artifacts or self.tmp / "artifacts"),
               *extra]
        if app:
            cmd[4:4] = ["--app-name", app]
        if prefix:
            cmd += ["--static-prefix", prefix]
        self.cmd = cmd
        self.env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
        # MLflow's own job runner (huey consumers) is not used here, and takes ~20 s to stop
        self.env.update({"MLFLOW_BAYESCOMPARE_STATE_DIR": str(self.tmp / "state"),
                         "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false", **(env or {})})
        self.timeout = timeout
        self.proc: subprocess.Popen | None = None
        if start:
            self.start()

    def start(self) -> Server:
        with open(self.log, "ab") as out:  # own process group: uvicorn runs as a child of `mlflow server`
            self.proc = subprocess.Popen(self.cmd, stdout=out, stderr=subprocess.STDOUT, env=self.env,
                                         start_new_session=True)
        self._wait(self.timeout)
        return self

    def _wait(self, timeout: float):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.kill()
                raise RuntimeError(f"mlflow server exited with {self.proc.returncode}:\n{self.tail()}")
            try:
                if requests.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"mlflow server at {self.url} not healthy after {timeout} s:\n{self.tail()}")

    def tail(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""

    def stop(self, timeout: float = 30):
        """SIGTERM the process group and wait until every process of it has ended (as a service manager does),
        then SIGKILL what is left."""
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout)
        while time.monotonic() < deadline and group_alive(self.proc.pid):
            time.sleep(0.2)
        self.kill()

    def kill(self):
        """SIGKILL the whole process group (uvicorn workers included) at once, as a crash would."""
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(10)

    def api(self, auth: tuple[str, str] | None = None) -> BayesCompareClient:
        """A client of the bayescompare app's JSON API on this server (its ``session`` for the raw routes)."""
        return BayesCompareClient(self.url, auth)


def group_alive(pgid: int) -> bool:
    """Is any process of the process group ``pgid`` still running (zombies aside)?"""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    ps = subprocess.run(["ps", "-e", "-o", "pgid=,stat="], capture_output=True, text=True)
    return any(fields[0] == str(pgid) and not fields[1].startswith("Z")
               for fields in (line.split() for line in ps.stdout.splitlines()) if len(fields) == 2)


@contextlib.contextmanager
def gateway(status: int, health: int = 200) -> Iterator[str]:
    """A loopback HTTP server that is not MLflow but stands where one should: a proxy whose MLflow is down or failing.
    ``/health`` answers ``health``, every other path ``status``; yields its address."""

    class Answer(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(health if self.path.split("?")[0].endswith("/health") else status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_POST = do_GET

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def trickling(part: str, total: float = 8.0, every: float = 1.0) -> Iterator[str]:
    """A loopback listener that answers every request ``200 OK`` a byte at a time, one each ``every`` seconds, for
    about ``total`` seconds, then the rest at once: its status line and headers (``part="head"``), or only its body
    (``part="body"``).  A thread per connection; yields its address."""
    body = b"x" * int(total / every)
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n" % len(body)
    slow, fast = (head, body) if part == "head" else (body, b"")
    stop = threading.Event()

    def answer(conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            conn.recv(65536)
            if part == "body":
                conn.sendall(head)
            steps = int(total / every)
            for i in range(min(steps, len(slow))):
                if stop.wait(every):
                    return
                conn.sendall(slow[i:i + 1])
            conn.sendall(slow[steps:] + fast)

    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)

    def serve() -> None:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError, OSError):
                conn, _ = listener.accept()
                threading.Thread(target=answer, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        listener.close()


# ------------------------------------------------------------------------------------------------ browser

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]


def chromium_executable() -> str | None:
    """Chromium for the page tests: ``MLFLOW_BAYESCOMPARE_CHROMIUM``, else Debian's ``/usr/bin/chromium`` (None
    when absent, or when playwright is not installed)."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return None
    executable = os.environ.get("MLFLOW_BAYESCOMPARE_CHROMIUM", "/usr/bin/chromium")
    return executable if Path(executable).exists() else None


def show_past_run(page, run_id: str, shown: str, timeout_ms: float = 30_000) -> None:
    """Click a run's "show" link in the page's history, once the page's requests have settled (the history is
    rebuilt when a shown run's answer arrives), and wait for ``shown``; on a timeout, fail with what the page showed
    (its job title, status and error line), so that a slow or lost answer can be told apart."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.wait_for_load_state("networkidle")
    page.click(f'#past tr[data-run-id="{run_id}"] a.show')
    try:
        page.wait_for_selector(shown, timeout=timeout_ms)
    except PlaywrightTimeout:
        state = page.evaluate("() => ['job-title', 'job-status', 'job-error'].map("
                              "(id) => id + ': ' + (document.getElementById(id) || {}).textContent).join('; ')")
        raise AssertionError(f"{shown} not shown {timeout_ms / 1000:.0f} s after showing run {run_id}: {state}; "
                             f"at {page.url}") from None


@contextlib.contextmanager
def chromium_page(*, bypass_csp: bool = False, http_credentials: tuple[str, str] | None = None):
    """A page in headless Chromium and the messages of every dialog (alert, confirm, prompt) it opened.
    ``bypass_csp`` turns the page's Content-Security-Policy off, so that escaping is tested on its own."""
    from playwright.sync_api import sync_playwright

    dialogs: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_executable(), args=CHROMIUM_ARGS, headless=True)
        try:
            credentials = {"username": http_credentials[0], "password": http_credentials[1]} \
                if http_credentials else None
            context = browser.new_context(viewport={"width": 1280, "height": 1000}, bypass_csp=bypass_csp,
                                          http_credentials=credentials)
            page = context.new_page()
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            yield page, dialogs
        finally:
            browser.close()
