"""Shared fixtures for ringdb's end-to-end client tests.

Every test module gets a fresh ringdb server (`server` fixture): a free port, a temporary data
directory, its stderr captured to a file whose tail is attached to any failing test's report.
On teardown the server gets SIGTERM and must exit 0 within 10 s.

The binary comes from $RINGDB_BIN (default: target/debug/ringdb in the repo).

Tests marked `dml` exercise INSERT/SELECT on user tables; they always run.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

import pytest

import cqlwire

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT = 20.0
STOP_TIMEOUT = 10.0
LOG_TAIL_LINES = 60
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def ringdb_bin() -> Path:
    raw = os.environ.get("RINGDB_BIN", "target/debug/ringdb")
    p = Path(raw)
    if not p.is_absolute():
        p = REPO / p
    return p


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class RingServer:
    """One ringdb process. `host, port = server` works (it unpacks like a tuple)."""

    instances: list["RingServer"] = []

    def __init__(self, data_dir: Path, log_path: Path, owner: str, host: str = "127.0.0.1",
                 port: int | None = None, extra_args: tuple = (), log_level: str | None = None):
        self.host = host
        self.port = port or free_port(host)
        self.data_dir = Path(data_dir)
        self.log_path = Path(log_path)
        self.owner = owner
        self.extra_args = tuple(extra_args)
        self.log_level = log_level
        self.proc: subprocess.Popen | None = None
        self.startup_seconds: float | None = None
        RingServer.instances.append(self)

    def __iter__(self):
        return iter((self.host, self.port))

    @property
    def addr(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self, timeout: float = START_TIMEOUT) -> "RingServer":
        binary = ringdb_bin()
        if not binary.exists():
            pytest.fail(f"ringdb binary not found at {binary} (build it: cargo build --bin ringdb)")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        log.write(f"\n===== starting ringdb on {self.addr} data-dir {self.data_dir} =====\n".encode())
        log.flush()
        args = [str(binary), "--listen", self.addr, "--data-dir", str(self.data_dir),
                "--log-level", self.log_level or os.environ.get("RINGDB_LOG_LEVEL", "info"), *self.extra_args]
        t0 = time.monotonic()
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                     cwd=self.data_dir.parent)
        log.close()
        deadline = t0 + timeout
        last_err = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"ringdb exited with code {self.proc.returncode} during startup\n{self.log_tail()}")
            try:
                opts = cqlwire.supported(self.host, self.port, timeout=2.0)
                if "CQL_VERSION" in opts:
                    self.startup_seconds = time.monotonic() - t0
                    return self
                last_err = f"SUPPORTED without CQL_VERSION: {opts}"
            except (OSError, cqlwire.ConnectionClosed, AssertionError, ValueError) as e:
                last_err = repr(e)
            time.sleep(0.05)
        self.kill()
        raise AssertionError(
            f"ringdb did not answer OPTIONS within {timeout}s (last error: {last_err})\n{self.log_tail()}")

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig: int = signal.SIGTERM, timeout: float = STOP_TIMEOUT) -> int | None:
        """Send `sig` and wait; returns the exit code, or None if it did not exit (then SIGKILLs)."""
        if self.proc is None:
            return None
        if self.proc.poll() is not None:
            return self.proc.returncode
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def log_tail(self, n: int = LOG_TAIL_LINES) -> str:
        try:
            lines = ANSI.sub("", self.log_path.read_text(errors="replace")).splitlines()
        except OSError:
            return "(no server log)"
        return f"--- last {min(n, len(lines))} lines of {self.log_path} ---\n" + "\n".join(lines[-n:])

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""


def new_server(tmp_dir: Path, owner: str, name: str = "ringdb", port: int | None = None) -> RingServer:
    tmp_dir.mkdir(parents=True, exist_ok=True)
    return RingServer(tmp_dir / f"{name}-data", tmp_dir / f"{name}.stderr.log", owner, port=port)


def stop_and_check(server: RingServer) -> None:
    """SIGTERM; assert a clean exit 0 within 10 s."""
    if not server.running():
        rc = server.proc.returncode if server.proc else None
        raise AssertionError(f"ringdb was no longer running at teardown (exit code {rc})\n{server.log_tail()}")
    t0 = time.monotonic()
    rc = server.stop(signal.SIGTERM, STOP_TIMEOUT)
    took = time.monotonic() - t0
    assert rc is not None, f"ringdb did not exit within {STOP_TIMEOUT}s of SIGTERM\n{server.log_tail()}"
    assert rc == 0, f"ringdb exited with {rc} after SIGTERM (took {took:.2f}s)\n{server.log_tail()}"
    assert_no_panics(server)


def assert_no_panics(server: RingServer) -> None:
    """A panic caught inside a connection task leaves the server up but is still a bug."""
    text = ANSI.sub("", server.log_text())
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if "panicked at" in line:
            context = "\n".join(lines[max(0, i - 5):i + 15])
            raise AssertionError(f"ringdb logged a panic:\n{context}")


# ---------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def server(request, tmp_path_factory):
    """A fresh ringdb per test module; yields the RingServer (unpacks as (host, port))."""
    tmp = tmp_path_factory.mktemp(Path(request.node.nodeid).stem or "ringdb")
    srv = new_server(tmp, owner=request.node.nodeid).start()
    yield srv
    stop_and_check(srv)


@pytest.fixture(scope="module")
def metrics_served(request, tmp_path_factory):
    """A fresh ringdb per module with its metrics address on a free port; yields (server,
    the metrics address's base URL)."""
    tmp = tmp_path_factory.mktemp("metrics")
    port = free_port()
    srv = RingServer(tmp / "data", tmp / "stderr.log", request.node.nodeid,
                     extra_args=("--metrics-listen", f"127.0.0.1:{port}")).start()
    yield srv, f"http://127.0.0.1:{port}"
    stop_and_check(srv)


@pytest.fixture
def fresh_server(request, tmp_path):
    """A server of the test's own (function scope), for restart / fresh-schema tests."""
    srv = new_server(tmp_path, owner=request.node.nodeid).start()
    yield srv
    if srv.running():
        stop_and_check(srv)


def make_cluster(srv: RingServer, **kwargs):
    """A python-driver Cluster for srv; no forced protocol version unless given in kwargs."""
    from cassandra.cluster import Cluster
    kwargs.setdefault("connect_timeout", 10)
    kwargs.setdefault("control_connection_timeout", 10)
    return Cluster(contact_points=[srv.host], port=srv.port, **kwargs)


@pytest.fixture(scope="module")
def cluster(server):
    c = make_cluster(server)
    try:
        yield c
    finally:
        c.shutdown()


@pytest.fixture(scope="module")
def session(cluster):
    return cluster.connect()


_names = itertools.count()


def driver_cluster(srv: RingServer, user=None, password=None, port=None, **kwargs):
    """A python-driver Cluster for `srv` (its CQL port, or `port`), logging in as `user` when
    given."""
    from cassandra.auth import PlainTextAuthProvider
    from cassandra.cluster import Cluster
    if user is not None:
        kwargs["auth_provider"] = PlainTextAuthProvider(username=user, password=password)
    return Cluster(contact_points=[srv.host], port=port or srv.port, connect_timeout=10,
                   control_connection_timeout=10, **kwargs)


@contextmanager
def session_as(srv: RingServer, user=None, password=None, **kwargs):
    """A session at `srv` as `user` (see `driver_cluster`), its cluster shut down after."""
    c = driver_cluster(srv, user, password, **kwargs)
    try:
        yield c.connect()
    finally:
        c.shutdown()


def one(session, query) -> tuple:
    """The first row of `query` as a tuple."""
    return tuple(session.execute(query).one())


def fresh_name(prefix: str = "ks") -> str:
    """A unique lower-case identifier."""
    return f"{prefix}_{next(_names)}_{uuid.uuid4().hex[:6]}"


def new_keyspace(session, prefix: str = "ks") -> str:
    """Creates a keyspace with a fresh name (SimpleStrategy, replication factor 1); returns
    its name."""
    name = fresh_name(prefix)
    session.execute(f"CREATE KEYSPACE {name} WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    return name


@pytest.fixture
def ks(session):
    """A fresh SimpleStrategy keyspace (dropped afterwards, errors ignored)."""
    name = new_keyspace(session)
    yield name
    try:
        session.execute(f"DROP KEYSPACE IF EXISTS {name}")
    except Exception:
        pass


# ---------------------------------------------------------------- cqlsh

def cqlsh_path() -> Path:
    p = Path(sys.executable).parent / "cqlsh"
    if not p.exists():
        found = shutil.which("cqlsh")
        if found:
            return Path(found)
    return p


def run_cqlsh(srv: RingServer, *args: str, timeout: float = 90, home: Path | None = None,
              check: bool = True) -> subprocess.CompletedProcess:
    """Run `cqlsh HOST PORT ARGS...` against srv with an empty HOME (no user cqlshrc)."""
    env = dict(os.environ)
    if home is None:
        home = srv.data_dir.parent / "cqlsh-home"
    home.mkdir(parents=True, exist_ok=True)
    env["HOME"] = str(home)
    env.pop("CQLSH_HOST", None)
    env.pop("CQLSH_PORT", None)
    cmd = [str(cqlsh_path()), srv.host, str(srv.port), "--connect-timeout", "20",
           "--request-timeout", "30", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                          stdin=subprocess.DEVNULL)
    if check and proc.returncode != 0:
        raise AssertionError(
            f"cqlsh {' '.join(args)!r} exited {proc.returncode}\nstdout:\n{proc.stdout}\n"
            f"stderr:\n{proc.stderr}\n{srv.log_tail()}")
    return proc


# ---------------------------------------------------------------- hooks

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for srv in RingServer.instances:
            if item.nodeid.startswith(srv.owner) or srv.owner.startswith(item.nodeid):
                report.sections.append((f"ringdb stderr {srv.addr}", srv.log_tail()))
