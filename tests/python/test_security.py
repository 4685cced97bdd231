"""Security through real clients: PasswordAuthenticator + CassandraAuthorizer + a TLS listener.

One ringdb per module, started with a --config file:
  authenticator = PasswordAuthenticator, authorizer = CassandraAuthorizer,
  tls_listen = a second port speaking only TLS (certificates made here with the openssl CLI).
The python driver (PlainTextAuthProvider, ssl_context) and cqlsh (-u/-p, --ssl) connect to it.
"""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import (RingServer, driver_cluster, free_port, run_cqlsh, session_as,
                      stop_and_check)

ADMIN = ("cassandra", "cassandra")


def make_certs(d: Path) -> SimpleNamespace:
    """A CA and a server certificate for localhost / 127.0.0.1 signed by it (EC P-256)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("the openssl CLI is needed to make test certificates")
    d.mkdir(parents=True, exist_ok=True)

    def run(*args: str) -> None:
        subprocess.run([openssl, *args], cwd=d, check=True, capture_output=True, timeout=60)

    run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=ringdb test CA")
    run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost")
    (d / "ext.cnf").write_text(
        "subjectAltName=DNS:localhost,IP:127.0.0.1\n"
        "basicConstraints=CA:FALSE\n"
        "keyUsage=digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth\n")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "ext.cnf")
    return SimpleNamespace(ca=d / "ca.pem", cert=d / "server.pem", key=d / "server.key")


@pytest.fixture(scope="module")
def secure(request, tmp_path_factory):
    """(server, tls_port, certs): a ringdb with passwords, permissions and a TLS port."""
    tmp = tmp_path_factory.mktemp("security")
    certs = make_certs(tmp / "certs")
    tls_port = free_port()
    config = tmp / "ringdb.toml"
    config.write_text(
        'authenticator = "PasswordAuthenticator"\n'
        'authorizer = "CassandraAuthorizer"\n'
        'user_defined_functions_enabled = true\n'
        f'tls_listen = "127.0.0.1:{tls_port}"\n'
        f'tls_cert_file = "{certs.cert}"\n'
        f'tls_key_file = "{certs.key}"\n')
    srv = RingServer(tmp / "ringdb-data", tmp / "ringdb.stderr.log", owner=request.node.nodeid,
                     extra_args=("--config", str(config)))
    srv.start()
    yield srv, tls_port, certs
    stop_and_check(srv)


cluster = driver_cluster


@pytest.fixture(scope="module")
def admin(secure):
    srv, _, _ = secure
    with session_as(srv, *ADMIN) as s:
        yield s


def test_password_authentication_right_and_wrong(secure, admin):
    from cassandra import AuthenticationFailed
    from cassandra.cluster import NoHostAvailable
    srv, _, _ = secure
    row = admin.execute("SELECT release_version FROM system.local").one()
    assert row.release_version.startswith("4")

    c = cluster(srv, "cassandra", "wrong")
    with pytest.raises(NoHostAvailable) as info:
        c.connect()
    c.shutdown()
    errors = list(info.value.errors.values())
    assert errors and isinstance(errors[0], AuthenticationFailed), errors
    assert "Provided username cassandra and/or password are incorrect" in str(errors[0])

    c = cluster(srv)  # no credentials at all
    with pytest.raises(NoHostAvailable):
        c.connect()
    c.shutdown()

    # The server log never holds the password.
    assert "wrong" not in srv.log_text()


def test_user_without_select_is_refused_until_granted_on_the_open_session(secure, admin):
    from cassandra import Unauthorized
    srv, _, _ = secure
    admin.execute("CREATE KEYSPACE sec WITH replication = "
                  "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    admin.execute("CREATE TABLE sec.t (k int PRIMARY KEY, v text)")
    admin.execute("INSERT INTO sec.t (k, v) VALUES (1, 'one')")
    admin.execute("CREATE ROLE reader WITH PASSWORD = 'pw' AND LOGIN = true")
    with session_as(srv, "reader", "pw") as s:  # reads the system tables: always allowed
        with pytest.raises(Unauthorized) as info:
            s.execute("SELECT * FROM sec.t")
        assert ("User reader has no SELECT permission on <table sec.t> or any of its parents"
                in str(info.value))

        admin.execute("GRANT SELECT ON TABLE sec.t TO reader")
        assert [tuple(r) for r in s.execute("SELECT k, v FROM sec.t")] == [(1, "one")]
        with pytest.raises(Unauthorized):
            s.execute("INSERT INTO sec.t (k, v) VALUES (2, 'two')")

        admin.execute("CREATE ROLE writers")
        admin.execute("GRANT MODIFY ON KEYSPACE sec TO writers")
        admin.execute("GRANT writers TO reader")
        s.execute("INSERT INTO sec.t (k, v) VALUES (2, 'two')")

        admin.execute("REVOKE SELECT ON TABLE sec.t FROM reader")
        with pytest.raises(Unauthorized):
            s.execute("SELECT * FROM sec.t")


def test_index_statements_need_alter_on_the_table(secure, admin):
    # CreateIndexStatement.authorize / DropIndexStatement.authorize: ALTER on the indexed table.
    from cassandra import Unauthorized
    srv, _, _ = secure
    admin.execute("CREATE KEYSPACE secidx WITH replication = "
                  "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    admin.execute("CREATE TABLE secidx.t (k int PRIMARY KEY, v int)")
    admin.execute("CREATE ROLE indexer WITH PASSWORD = 'pw' AND LOGIN = true")
    admin.execute("CREATE INDEX by_admin ON secidx.t (v)")
    with session_as(srv, "indexer", "pw") as s:
        with pytest.raises(Unauthorized, match="has no ALTER permission on <table secidx.t>"):
            s.execute("CREATE INDEX ON secidx.t (v) USING 'sai'")
        with pytest.raises(Unauthorized, match="has no ALTER permission on <table secidx.t>"):
            s.execute("DROP INDEX secidx.by_admin")
        admin.execute("GRANT ALTER ON TABLE secidx.t TO indexer")
        s.execute("DROP INDEX secidx.by_admin")
        s.execute("CREATE INDEX ON secidx.t (v) USING 'sai'")


def test_user_functions_need_execute_and_their_keyspaces_functions_create(secure, admin):
    # Cassandra's FunctionResource: CREATE FUNCTION needs CREATE on the keyspace's functions
    # (ALTER on the function for OR REPLACE of one that exists), DROP FUNCTION needs DROP on
    # it, and a call needs EXECUTE on every user function and aggregate it uses (an
    # aggregate's state and final functions too); native functions need nothing.
    from cassandra import Unauthorized
    srv, _, _ = secure
    admin.execute("CREATE KEYSPACE secfn WITH replication = "
                  "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    admin.execute("CREATE TABLE secfn.t (k int PRIMARY KEY, v int)")
    admin.execute("INSERT INTO secfn.t (k, v) VALUES (1, 20)")
    admin.execute("CREATE FUNCTION secfn.twice(x int) RETURNS NULL ON NULL INPUT RETURNS int "
                  "LANGUAGE lua AS 'return x * 2'")
    admin.execute("CREATE FUNCTION secfn.plus(s int, x int) CALLED ON NULL INPUT RETURNS int "
                  "LANGUAGE lua AS 'return (s or 0) + (x or 0)'")
    admin.execute("CREATE AGGREGATE secfn.total(int) SFUNC plus STYPE int INITCOND 0")
    admin.execute("CREATE ROLE caller WITH PASSWORD = 'pw' AND LOGIN = true")
    admin.execute("GRANT SELECT ON KEYSPACE secfn TO caller")
    with session_as(srv, "caller", "pw") as s:
        assert s.execute("SELECT blobasint(intasblob(v)) FROM secfn.t").one()[0] == 20
        with pytest.raises(Unauthorized, match=r"User caller has no EXECUTE permission on "
                           r"<function secfn.twice\(int\)> or any of its parents"):
            s.execute("SELECT secfn.twice(v) FROM secfn.t")
        admin.execute("GRANT EXECUTE ON FUNCTION secfn.twice(int) TO caller")
        assert s.execute("SELECT secfn.twice(v) FROM secfn.t").one()[0] == 40
        prepared_twice = s.prepare("SELECT secfn.twice(v) FROM secfn.t")
        assert s.execute(prepared_twice).one()[0] == 40
        # An aggregate needs EXECUTE on itself and on its state function.
        admin.execute("GRANT EXECUTE ON FUNCTION secfn.total(int) TO caller")
        with pytest.raises(Unauthorized, match=r"<function secfn.plus\(int, int\)>"):
            s.execute("SELECT secfn.total(v) FROM secfn.t")
        admin.execute("GRANT EXECUTE ON ALL FUNCTIONS IN KEYSPACE secfn TO caller")
        assert s.execute("SELECT secfn.total(v) FROM secfn.t").one()[0] == 20
        # Revoked: the prepared statement is checked again at each execution.
        admin.execute("REVOKE EXECUTE ON ALL FUNCTIONS IN KEYSPACE secfn FROM caller")
        admin.execute("REVOKE EXECUTE ON FUNCTION secfn.twice(int) FROM caller")
        with pytest.raises(Unauthorized):
            s.execute(prepared_twice)
        # A call in a value needs EXECUTE too.
        admin.execute("GRANT MODIFY ON TABLE secfn.t TO caller")
        with pytest.raises(Unauthorized, match=r"no EXECUTE permission on "
                           r"<function secfn.twice\(int\)>"):
            s.execute("INSERT INTO secfn.t (k, v) VALUES (2, secfn.twice(1))")
        with pytest.raises(Unauthorized, match="no EXECUTE permission"):
            s.execute("BEGIN BATCH INSERT INTO secfn.t (k, v) VALUES (2, secfn.twice(1)); "
                      "APPLY BATCH")
        # Creating and dropping.
        with pytest.raises(Unauthorized, match=r"has no CREATE permission on "
                           r"<all functions in secfn>"):
            s.execute("CREATE FUNCTION secfn.mine(x int) RETURNS NULL ON NULL INPUT "
                      "RETURNS int LANGUAGE lua AS 'return x'")
        admin.execute("GRANT CREATE ON ALL FUNCTIONS IN KEYSPACE secfn TO caller")
        s.execute("CREATE FUNCTION secfn.mine(x int) RETURNS NULL ON NULL INPUT "
                  "RETURNS int LANGUAGE lua AS 'return x'")
        # The creator holds every permission on what it created.
        assert s.execute("SELECT secfn.mine(v) FROM secfn.t").one()[0] == 20
        perms = {(r.resource, r.permission) for r in admin.execute("LIST ALL PERMISSIONS OF caller")}
        assert ("<function secfn.mine(int)>", "EXECUTE") in perms
        with pytest.raises(Unauthorized, match=r"has no DROP permission on "
                           r"<function secfn.twice\(int\)>"):
            s.execute("DROP FUNCTION secfn.twice(int)")
        s.execute("DROP FUNCTION secfn.mine")
        perms = {r.resource for r in admin.execute("LIST ALL PERMISSIONS OF caller")}
        assert "<function secfn.mine(int)>" not in perms


def test_list_roles_users_and_permissions(secure, admin):
    admin.execute("CREATE ROLE IF NOT EXISTS lister WITH PASSWORD = 'pw' AND LOGIN = true "
                  "AND OPTIONS = {'team': 'ops'}")
    admin.execute("CREATE ROLE IF NOT EXISTS auditors")
    admin.execute("GRANT auditors TO lister")
    admin.execute("GRANT DESCRIBE ON ALL ROLES TO auditors")
    admin.execute("GRANT SELECT ON ALL KEYSPACES TO lister")

    roles = {r.role: r for r in admin.execute("LIST ROLES")}
    assert roles["cassandra"].super and roles["cassandra"].login
    assert roles["lister"].options == {"team": "ops"}
    assert not roles["auditors"].login
    assert list(roles["lister"]._fields) == ["role", "super", "login", "options", "datacenters"]

    mine = [r.role for r in admin.execute("LIST ROLES OF lister")]
    assert mine == ["auditors", "lister"]
    users = [(r.name, r.super) for r in admin.execute("LIST USERS")]
    assert ("cassandra", True) in users and ("lister", False) in users
    assert all(name != "auditors" for name, _ in users)

    perms = [tuple(r) for r in admin.execute("LIST ALL PERMISSIONS OF lister")]
    assert perms == [
        ("auditors", "auditors", "<all roles>", "DESCRIBE"),
        ("lister", "lister", "<all keyspaces>", "SELECT"),
    ]
    rows = admin.execute("SELECT role, resource, permissions FROM system_auth.role_permissions "
                         "WHERE role = 'lister'")
    assert [(r.role, r.resource, set(r.permissions)) for r in rows] == [
        ("lister", "data", {"SELECT"})]
    members = [tuple(r) for r in admin.execute(
        "SELECT role, member FROM system_auth.role_members WHERE role = 'auditors'")]
    assert members == [("auditors", "lister")]


def test_cqlsh_with_username_and_password(secure, admin):
    srv, _, _ = secure
    out = run_cqlsh(srv, "-u", "cassandra", "-p", "cassandra", "-e", "LIST ROLES").stdout
    assert "cassandra" in out and "super" in out
    bad = run_cqlsh(srv, "-u", "cassandra", "-p", "nope", "-e", "SELECT * FROM system.local",
                    check=False)
    assert bad.returncode != 0
    assert "Provided username cassandra and/or password are incorrect" in bad.stdout + bad.stderr


def test_cqlsh_over_ssl(secure, admin, monkeypatch):
    srv, tls_port, certs = secure
    tls = SimpleNamespace(host=srv.host, port=tls_port, data_dir=srv.data_dir,
                          log_tail=srv.log_tail)
    monkeypatch.setenv("SSL_CERTFILE", str(certs.ca))
    monkeypatch.setenv("SSL_VALIDATE", "false")
    out = run_cqlsh(tls, "--ssl", "-u", "cassandra", "-p", "cassandra", "-e",
                    "SELECT key FROM system.local").stdout
    assert "local" in out
    monkeypatch.setenv("SSL_VALIDATE", "true")
    out = run_cqlsh(tls, "--ssl", "-u", "cassandra", "-p", "cassandra", "-e",
                    "SELECT cluster_name FROM system.local").stdout
    assert "Test Cluster" in out


def test_python_driver_with_ssl_context(secure, admin):
    srv, tls_port, certs = secure
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(str(certs.ca))
    ctx.check_hostname = True  # the certificate names 127.0.0.1
    with session_as(srv, *ADMIN, port=tls_port, ssl_context=ctx) as s:
        assert s.execute("SELECT key FROM system.local").one().key == "local"

    # A client that does not trust the CA fails the handshake.
    from cassandra.cluster import NoHostAvailable
    untrusting = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    c = cluster(srv, *ADMIN, port=tls_port, ssl_context=untrusting)
    with pytest.raises(NoHostAvailable):
        c.connect()
    c.shutdown()


def test_plaintext_client_on_the_tls_port_is_closed(secure):
    srv, tls_port, _ = secure
    t0 = time.monotonic()
    with socket.create_connection((srv.host, tls_port), timeout=10) as s:
        s.sendall(bytes([4, 0, 0, 1, 5, 0, 0, 0, 0]))  # OPTIONS
        received = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            received += chunk
    assert time.monotonic() - t0 < 8, "closed promptly, not left hanging"
    # Whatever came back (at most a TLS alert record) is not a CQL frame.
    assert not received.startswith(bytes([0x84]))
