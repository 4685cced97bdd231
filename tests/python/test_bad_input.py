"""Hostile and malformed input over raw sockets.

The rule (issue 2, section 7): a bad frame gets a ProtocolError or a clean close within seconds,
never silence; any CQL text gets a RESULT or an ERROR and the connection stays usable; other
connections, including an open python-driver session, keep working throughout.
"""

from __future__ import annotations

import random
import socket
import struct
import time

import pytest

import cqlwire

REPLY_WITHIN = 5.0


@pytest.fixture(autouse=True)
def healthy_after(server, session):
    """After every test: the process is alive, the long-lived driver session and a new raw
    connection both work."""
    yield
    assert server.running(), f"ringdb died\n{server.log_tail()}"
    row = session.execute("SELECT release_version FROM system.local").one()
    assert row.release_version.startswith("4.")
    with cqlwire.connect_ready(server.host, server.port) as c:
        f = c.query("SELECT key FROM system.local")
        assert f.opcode == cqlwire.RESULT


def rss_mib(server) -> float:
    with open(f"/proc/{server.proc.pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def expect_error_or_close(conn: cqlwire.Conn, what: str, codes=(cqlwire.ERR_PROTOCOL,)):
    kind, frame = cqlwire.wait_closed_or_frame(conn, REPLY_WITHIN)
    assert kind != "silence", f"{what}: no reply and no close within {REPLY_WITHIN}s"
    if kind == "frame":
        assert frame.opcode == cqlwire.ERROR, f"{what}: expected ERROR, got opcode {frame.opcode:#x}"
        err = cqlwire.parse_error(frame.body)
        assert err.code in codes, f"{what}: {err}"
        assert frame.version & 0x80
    return kind, frame


def close_with_rst(sock: socket.socket):
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


# ---------------------------------------------------------------- framing

def test_short_frame_then_close(server):
    for n in (1, 5, 8):
        with cqlwire.Conn(server.host, server.port) as c:
            c.send_raw(cqlwire.encode_frame(cqlwire.OPTIONS)[:n])


def test_short_frame_then_rst(server):
    c = cqlwire.Conn(server.host, server.port)
    c.send_raw(b"\x04\x00\x00")
    close_with_rst(c.sock)


@pytest.mark.parametrize("length", [0x7FFFFFFF, 256 * 1024 * 1024 + 1, -1, -0x80000000])
@pytest.mark.parametrize("ready", [False, True], ids=["before-startup", "after-startup"])
def test_oversized_or_negative_length(server, length, ready):
    before = rss_mib(server)
    c = cqlwire.connect_ready(server.host, server.port) if ready else cqlwire.Conn(server.host, server.port)
    with c:
        c.send_raw(struct.pack(">BBhBi", 4, 0, 3, cqlwire.QUERY, length) + b"A" * 4096)
        kind, frame = expect_error_or_close(c, f"length {length}")
        if frame is not None:
            assert frame.stream in (3, 0)
    after = rss_mib(server)
    assert after - before < 256, f"RSS grew from {before:.0f} to {after:.0f} MiB after a {length}-byte header"


def test_unknown_opcode_after_startup(server):
    with cqlwire.connect_ready(server.host, server.port) as c:
        c.send(0x42, b"", stream=5)
        kind, frame = expect_error_or_close(c, "opcode 0x42")
        assert kind == "frame", "an unknown opcode should get an ERROR, not a bare close"


def test_unknown_opcode_before_startup(server):
    with cqlwire.Conn(server.host, server.port) as c:
        c.send(0x42, b"", stream=5)
        kind, _ = expect_error_or_close(c, "opcode 0x42 before STARTUP")
        assert kind == "frame"


@pytest.mark.parametrize("opcode", [cqlwire.RESULT, cqlwire.READY, cqlwire.SUPPORTED, cqlwire.EVENT, cqlwire.ERROR])
def test_response_opcodes_sent_by_a_client(server, opcode):
    with cqlwire.connect_ready(server.host, server.port) as c:
        c.send(opcode, b"\x00\x00\x00\x01", stream=9)
        expect_error_or_close(c, f"client-sent opcode {opcode:#x}")


def test_request_with_response_version_bit(server):
    with cqlwire.Conn(server.host, server.port) as c:
        c.send_raw(struct.pack(">BBhBi", 0x84, 0, 1, cqlwire.OPTIONS, 0))
        expect_error_or_close(c, "version byte 0x84 on a request")


def test_query_before_startup(server):
    with cqlwire.Conn(server.host, server.port) as c:
        body = cqlwire.enc_long_string_bytes(b"SELECT * FROM system.local") + struct.pack(">HB", 1, 0)
        c.send(cqlwire.QUERY, body, stream=1)
        kind, frame = expect_error_or_close(c, "QUERY before STARTUP")
        assert kind == "frame"


def test_startup_without_cql_version(server):
    with cqlwire.Conn(server.host, server.port) as c:
        c.send(cqlwire.STARTUP, cqlwire.enc_string_map({"DRIVER_NAME": "x"}), stream=1)
        kind, frame = expect_error_or_close(c, "STARTUP without CQL_VERSION")
        assert kind == "frame"
        assert "CQL_VERSION" in cqlwire.parse_error(frame.body).message


def test_startup_with_old_cql_version(server):
    with cqlwire.Conn(server.host, server.port) as c:
        f = c.startup({"CQL_VERSION": "2.0.0"})
        assert f.opcode == cqlwire.ERROR
        assert cqlwire.parse_error(f.body).code == cqlwire.ERR_PROTOCOL
    with cqlwire.Conn(server.host, server.port) as c:  # the rust driver sends 4.0.0
        assert c.startup({"CQL_VERSION": "4.0.0"}).opcode == cqlwire.READY


@pytest.mark.parametrize("body", [
    b"",  # no query string at all
    b"\x00\x00\x03\xe8SELECT",  # long string says 1000 bytes, has 6
    cqlwire.enc_long_string_bytes(b"SELECT * FROM system.local"),  # no consistency/flags
    cqlwire.enc_long_string_bytes(b"SELECT * FROM system.local") + struct.pack(">HB", 1, 0x01),  # values flag, no values
    cqlwire.enc_long_string_bytes(b"SELECT * FROM system.local") + struct.pack(">HBh", 1, 0x01, 3) + b"\x00",
    b"\xff\xff\xff\xff",  # negative length
])
def test_malformed_query_body(server, body):
    with cqlwire.connect_ready(server.host, server.port) as c:
        c.send(cqlwire.QUERY, body, stream=11)
        expect_error_or_close(c, f"malformed QUERY body {body[:20]!r}",
                              codes=(cqlwire.ERR_PROTOCOL, cqlwire.ERR_SERVER, cqlwire.ERR_INVALID,
                                     cqlwire.ERR_SYNTAX))


@pytest.mark.parametrize("seed", range(8))
def test_random_bytes(server, seed):
    rnd = random.Random(seed)
    data = bytearray(rnd.randbytes(4096))
    if data[0] in (3, 4):  # keep the header invalid so that waiting for more bytes is not legal
        data[0] = 0xAB
    with cqlwire.Conn(server.host, server.port) as c:
        try:
            c.send_raw(bytes(data))
        except (BrokenPipeError, ConnectionResetError):
            return  # closed already: fine
        expect_error_or_close(c, f"random bytes seed {seed}")


@pytest.mark.parametrize("seed", range(4))
def test_random_body_after_startup(server, seed):
    rnd = random.Random(100 + seed)
    with cqlwire.connect_ready(server.host, server.port) as c:
        for stream, opcode in enumerate((cqlwire.QUERY, cqlwire.PREPARE, cqlwire.EXECUTE, 0x0D, cqlwire.REGISTER), 1):
            body = rnd.randbytes(rnd.randrange(0, 200))
            try:
                c.send(opcode, body, stream=stream)
            except (BrokenPipeError, ConnectionResetError):
                return
            kind, frame = cqlwire.wait_closed_or_frame(c, REPLY_WITHIN)
            assert kind != "silence", f"opcode {opcode:#x} with random body: no reply within {REPLY_WITHIN}s"
            if kind == "closed":
                return
            assert frame.stream == stream


def test_client_vanishes_mid_frame(server):
    for rst in (False, True):
        for _ in range(5):
            c = cqlwire.connect_ready(server.host, server.port)
            body = cqlwire.enc_long_string_bytes(b"SELECT * FROM system.local" + b" " * 2000) + struct.pack(">HB", 1, 0)
            frame = cqlwire.encode_frame(cqlwire.QUERY, body, 1)
            c.send_raw(frame[:200])
            if rst:
                close_with_rst(c.sock)
            else:
                c.close()


def test_many_abandoned_connections(server):
    socks = []
    for i in range(60):
        s = socket.create_connection((server.host, server.port), timeout=5)
        s.sendall(cqlwire.encode_frame(cqlwire.OPTIONS)[: i % 9])
        socks.append(s)
    # everyone else still gets served while those 60 sit idle
    with cqlwire.connect_ready(server.host, server.port) as c:
        assert c.query("SELECT key FROM system.local").opcode == cqlwire.RESULT
    for s in socks:
        s.close()


# ---------------------------------------------------------------- CQL text

WEIRD_TEXTS = [
    "SELECT * FROM system.local WHERE key = 'ключ'",
    "SELECT * FROM system.local WHERE key = '😀'",
    "SELECT 😀 FROM system.local",
    "CREATE KEYSPACE 😀 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
    "CREATE KEYSPACE \"😀\" WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
    "SELECT * FROM system.local\x00",
    "\x00\x00\x00\x00",
    "SELECT * FROM system.local WHERE key = 'a\x00b'",
    "",
    ";",
    "   ",
    "-- just a comment",
    "/* unterminated comment",
    "'",
    "\"",
    "SELECT * FROM system.local WHERE key = '" + "x" * 100_000 + "'",
    "SELECT " + "(" * 50_000 + "1" + ")" * 50_000 + " FROM system.local",
    "SELECT * FROM system.local WHERE key IN (" + ",".join(["'a'"] * 20_000) + ")",
    "\u202eSELECT\u202c * FROM system.local",
    "SELECT * FROM system.local WHERE key = '\ud7ff\ue000\ufffd'",
    "ＳＥＬＥＣＴ * FROM system.local",
]
INVALID_UTF8 = [b"\xff\xfeSELECT * FROM system.local", b"SELECT * FROM system.local WHERE key = '\xc3'",
                b"\xed\xa0\x80", b"\xc0\x80"]


@pytest.mark.parametrize("text", WEIRD_TEXTS + INVALID_UTF8,
                         ids=[f"text{i}" for i in range(len(WEIRD_TEXTS))] + [f"utf8_{i}" for i in range(len(INVALID_UTF8))])
def test_any_cql_text_gets_result_or_error_and_connection_stays(server, text):
    with cqlwire.connect_ready(server.host, server.port) as c:
        f = c.query(text, stream=21, timeout=REPLY_WITHIN)
        assert f.opcode in (cqlwire.RESULT, cqlwire.ERROR), f"opcode {f.opcode:#x}"
        if f.opcode == cqlwire.ERROR:
            err = cqlwire.parse_error(f.body)  # the message must decode as UTF-8
            # Cassandra answers these with Syntax/Invalid (or Protocol for undecodable UTF-8);
            # a Server_error (0x0000) means something inside failed unexpectedly
            assert err.code in (cqlwire.ERR_SYNTAX, cqlwire.ERR_INVALID, cqlwire.ERR_CONFIG,
                                cqlwire.ERR_PROTOCOL), str(err)
        # the same connection still answers
        assert c.options(stream=22).opcode == cqlwire.SUPPORTED
        f = c.query("SELECT key FROM system.local WHERE key = 'local'", stream=23)
        assert f.opcode == cqlwire.RESULT
        assert cqlwire.parse_result(f.body).rows == [[b"local"]]


# ---------------------------------------------------------------- values Cassandra rejects

DEEP = 20_000
REJECTED_DDL = [
    "CREATE TABLE {ks}.t (k int PRIMARY KEY, v " + "frozen<list<" * DEEP + "int" + ">>" * DEEP + ")",
    "CREATE TABLE {ks}.t (k int PRIMARY KEY, v tuple<" + "tuple<" * DEEP + "int" + ">" * DEEP + ">)",
    "CREATE KEYSPACE deep WITH replication = " + "{'a': " * DEEP + "1" + "}" * DEEP,
    "CREATE TABLE {ks}." + "t" * 100_000 + " (k int PRIMARY KEY)",
    "CREATE TABLE {ks}.t (k int PRIMARY KEY) WITH default_time_to_live = 99999999999999999999999",
    "CREATE TABLE {ks}.t (k int PRIMARY KEY) WITH default_time_to_live = -1",
    "CREATE TABLE {ks}.t (k int PRIMARY KEY) WITH default_time_to_live = 630720001",
    "CREATE TABLE {ks}.t (k int PRIMARY KEY) WITH gc_grace_seconds = -5",
    "CREATE TABLE {ks}.t (k int PRIMARY KEY) WITH gc_grace_seconds = 1e400",
    "CREATE TABLE {ks}.t (k int PRIMARY KEY) WITH bloom_filter_fp_chance = 2",
    "CREATE TABLE {ks}.t (k int PRIMARY KEY) WITH comment = 5 AND comment = 'twice'",
    "CREATE KEYSPACE bad_rf WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 'abc'}",
    "CREATE KEYSPACE bad_rf WITH replication = {'class': 'SimpleStrategy', 'replication_factor': -1}",
    "CREATE KEYSPACE bad_rf WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 'x'}",
    "CREATE KEYSPACE bad_rf WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 99999999999999999999}",
    "CREATE TABLE {ks}.t (k int PRIMARY KEY, v map<int>)",
    "CREATE TABLE {ks}.t (k int PRIMARY KEY, v list<int, int>)",
    "CREATE TABLE {ks}.t (k int PRIMARY KEY, v set<counter>)",
    "CREATE TABLE {ks}.t (k int PRIMARY KEY, v frozen<int>)",
    "CREATE TABLE {ks}.t (k duration PRIMARY KEY)",
    "CREATE TABLE {ks}.t (k int, c duration, PRIMARY KEY (k, c))",
    "CREATE TYPE {ks}.rec (a int, b frozen<rec>)",
    "CREATE TYPE {ks}.dupfield (a int, a text)",
    "ALTER TABLE {ks}.existing RENAME k TO k",
    "ALTER TABLE {ks}.existing ADD v counter",
]


@pytest.fixture(scope="module")
def bad_ks(session):
    session.execute("CREATE KEYSPACE IF NOT EXISTS bad_input WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.execute("CREATE TABLE IF NOT EXISTS bad_input.existing (k int PRIMARY KEY, v2 text)")
    return "bad_input"


@pytest.mark.parametrize("stmt", REJECTED_DDL, ids=[f"ddl{i}" for i in range(len(REJECTED_DDL))])
def test_rejected_ddl_gets_an_error(session, bad_ks, stmt):
    from cassandra import AlreadyExists, InvalidRequest
    from cassandra.protocol import ConfigurationException, SyntaxException
    try:
        with pytest.raises((InvalidRequest, ConfigurationException, SyntaxException)) as ei:
            session.execute(stmt.replace("{ks}", bad_ks), timeout=30)
        assert not isinstance(ei.value, AlreadyExists)
        ks_meta = session.cluster.metadata.keyspaces
        assert "deep" not in ks_meta and "bad_rf" not in ks_meta
        assert set(ks_meta[bad_ks].tables) == {"existing"}
    finally:
        # whatever was wrongly accepted must not leak into the next case
        session.execute(f"DROP TABLE IF EXISTS {bad_ks}.t")
        session.execute("DROP KEYSPACE IF EXISTS bad_rf")
        session.execute("DROP KEYSPACE IF EXISTS deep")
        session.execute(f"DROP TYPE IF EXISTS {bad_ks}.rec")
        session.execute(f"DROP TYPE IF EXISTS {bad_ks}.dupfield")


# ---------------------------------------------------------------- load shapes (bounded)

def _query_frame(stream: int, q: bytes = b"SELECT * FROM system_schema.columns") -> bytes:
    return cqlwire.encode_frame(cqlwire.QUERY, cqlwire.enc_long_string_bytes(q) + struct.pack(">HB", 1, 0), stream)


def test_client_that_never_reads(server):
    """A client pipelining big responses without reading them must not starve others or eat memory."""
    before = rss_mib(server)
    hog = cqlwire.connect_ready(server.host, server.port)
    try:
        hog.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        payload = b"".join(_query_frame(1 + (i % 30000)) for i in range(2000))
        hog.sock.settimeout(10)
        sent = 0
        try:
            while sent < len(payload):
                sent += hog.sock.send(payload[sent:sent + 65536])
        except socket.timeout:
            pass  # the server stopped reading from us: that is backpressure working
        time.sleep(1.0)
        t0 = time.monotonic()
        with cqlwire.connect_ready(server.host, server.port) as other:
            f = other.query("SELECT key FROM system.local")
            assert f.opcode == cqlwire.RESULT
        assert time.monotonic() - t0 < 5, "another connection was starved"
        grown = rss_mib(server) - before
        assert grown < 400, f"RSS grew by {grown:.0f} MiB while a client did not read"
    finally:
        close_with_rst(hog.sock)


def test_many_connections_pipelining(server):
    conns = [cqlwire.connect_ready(server.host, server.port) for _ in range(20)]
    try:
        for c in conns:
            c.send_raw(b"".join(_query_frame(s, b"SELECT key FROM system.local") for s in range(1, 51)))
        for c in conns:
            seen = set()
            while len(seen) < 50:
                f = c.recv_frame(10)
                assert f.opcode == cqlwire.RESULT
                seen.add(f.stream)
            assert seen == set(range(1, 51))
    finally:
        for c in conns:
            c.close()
