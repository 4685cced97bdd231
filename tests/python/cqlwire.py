"""A tiny, independent CQL native-protocol (v3/v4) client used by the raw-socket tests.

Only what the tests need: frame encode/decode, OPTIONS / STARTUP / QUERY / REGISTER, and the
decoding of ERROR, SUPPORTED, RESULT (kinds + rows of text-ish columns) and EVENT bodies.
It is written from the protocol spec, not from ringdb's code, so it can catch disagreements.
"""

from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass, field

# opcodes
ERROR = 0x00
STARTUP = 0x01
READY = 0x02
AUTHENTICATE = 0x03
OPTIONS = 0x05
SUPPORTED = 0x06
QUERY = 0x07
RESULT = 0x08
PREPARE = 0x09
EXECUTE = 0x0A
REGISTER = 0x0B
EVENT = 0x0C

FLAG_COMPRESSED = 0x01

CONSISTENCY_ONE = 0x0001

# error codes
ERR_SERVER = 0x0000
ERR_PROTOCOL = 0x000A
ERR_SYNTAX = 0x2000
ERR_INVALID = 0x2200
ERR_CONFIG = 0x2300
ERR_ALREADY_EXISTS = 0x2400


class ConnectionClosed(Exception):
    """The server closed the TCP connection (EOF or reset)."""


@dataclass
class Frame:
    version: int
    flags: int
    stream: int
    opcode: int
    body: bytes

    @property
    def is_response(self) -> bool:
        return bool(self.version & 0x80)


@dataclass
class ErrorBody:
    code: int
    message: str
    rest: bytes = b""

    def __str__(self) -> str:  # pragma: no cover - used in assertion messages
        return f"ERROR 0x{self.code:04X}: {self.message!r}"


@dataclass
class Result:
    kind: int
    body: bytes
    columns: list = field(default_factory=list)  # [(name, type_id)]
    rows: list = field(default_factory=list)  # [[bytes|None]]
    keyspace: str | None = None
    schema_change: tuple | None = None


# ---------------------------------------------------------------- primitive encoders

def enc_string(s: str) -> bytes:
    b = s.encode("utf-8")
    return struct.pack(">H", len(b)) + b


def enc_long_string_bytes(b: bytes) -> bytes:
    return struct.pack(">i", len(b)) + b


def enc_string_map(m: dict) -> bytes:
    out = struct.pack(">H", len(m))
    for k, v in m.items():
        out += enc_string(k) + enc_string(v)
    return out


def enc_string_list(items) -> bytes:
    out = struct.pack(">H", len(items))
    for s in items:
        out += enc_string(s)
    return out


# ---------------------------------------------------------------- primitive decoders

class Reader:
    def __init__(self, data: bytes):
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError(f"body too short: need {n} at {self.pos}, have {len(self.data)}")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def int(self) -> int:
        return struct.unpack(">i", self.take(4))[0]

    def short(self) -> int:
        return struct.unpack(">H", self.take(2))[0]

    def byte(self) -> int:
        return self.take(1)[0]

    def string(self) -> str:
        return self.take(self.short()).decode("utf-8")

    def long_string(self) -> str:
        return self.take(self.int()).decode("utf-8")

    def bytes_(self):
        n = self.int()
        if n < 0:
            return None
        return self.take(n)

    def short_bytes(self) -> bytes:
        return self.take(self.short())

    def string_list(self) -> list:
        return [self.string() for _ in range(self.short())]

    def string_multimap(self) -> dict:
        out = {}
        for _ in range(self.short()):
            k = self.string()
            out[k] = self.string_list()
        return out

    def option(self):
        tid = self.short()
        if tid == 0x0000:
            return (tid, self.string())
        if tid in (0x0020, 0x0022):
            return (tid, self.option())
        if tid == 0x0021:
            return (tid, self.option(), self.option())
        if tid == 0x0030:
            ks = self.string()
            name = self.string()
            fields = [(self.string(), self.option()) for _ in range(self.short())]
            return (tid, ks, name, fields)
        if tid == 0x0031:
            return (tid, [self.option() for _ in range(self.short())])
        return (tid,)


# ---------------------------------------------------------------- frames

def encode_frame(opcode: int, body: bytes = b"", stream: int = 0, version: int = 4, flags: int = 0) -> bytes:
    return struct.pack(">BBhBi", version, flags, stream, opcode, len(body)) + body


def parse_error(body: bytes) -> ErrorBody:
    r = Reader(body)
    code = r.int()
    msg = r.string()
    return ErrorBody(code, msg, body[r.pos:])


def parse_result(body: bytes) -> Result:
    r = Reader(body)
    kind = r.int()
    res = Result(kind=kind, body=body)
    if kind == 0x0003:
        res.keyspace = r.string()
    elif kind == 0x0005:
        change = r.string()
        target = r.string()
        ks = r.string()
        name = r.string() if target in ("TABLE", "TYPE", "FUNCTION", "AGGREGATE") else None
        res.schema_change = (change, target, ks, name)
    elif kind == 0x0002:
        flags = r.int()
        ncols = r.int()
        if flags & 0x0002:
            r.bytes_()
        if flags & 0x0004:
            pass
        else:
            global_spec = bool(flags & 0x0001)
            if global_spec:
                r.string()
                r.string()
            for _ in range(ncols):
                if not global_spec:
                    r.string()
                    r.string()
                name = r.string()
                opt = r.option()
                res.columns.append((name, opt))
        nrows = r.int()
        for _ in range(nrows):
            res.rows.append([r.bytes_() for _ in range(ncols)])
    return res


def parse_event(body: bytes) -> tuple:
    r = Reader(body)
    etype = r.string()
    if etype == "SCHEMA_CHANGE":
        change = r.string()
        target = r.string()
        ks = r.string()
        name = r.string() if target in ("TABLE", "TYPE", "FUNCTION", "AGGREGATE") else None
        return (etype, change, target, ks, name)
    return (etype, body[r.pos:])


class Conn:
    """One raw TCP connection speaking the native protocol (no compression unless set)."""

    def __init__(self, host: str, port: int, timeout: float = 5.0, version: int = 4):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.timeout = timeout
        self.version = version
        self.buf = b""
        self.compressor = None  # callable(bytes) -> bytes
        self.decompressor = None
        self.events: list = []  # EVENT frames received while waiting for something else

    # -- io
    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, opcode: int, body: bytes = b"", stream: int = 0, version: int | None = None,
             compress: bool | None = None) -> None:
        flags = 0
        use_compression = self.compressor is not None if compress is None else compress
        if use_compression and opcode not in (STARTUP, OPTIONS):
            body = self.compressor(body)
            flags |= FLAG_COMPRESSED
        self.send_raw(encode_frame(opcode, body, stream, self.version if version is None else version, flags))

    def _fill(self, n: int, deadline: float) -> None:
        while len(self.buf) < n:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise socket.timeout("timed out waiting for a frame")
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(65536)
            except (ConnectionResetError, BrokenPipeError) as e:
                raise ConnectionClosed(str(e)) from e
            if not chunk:
                raise ConnectionClosed("EOF")
            self.buf += chunk

    def recv_frame(self, timeout: float | None = None) -> Frame:
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        self._fill(9, deadline)
        version, flags, stream, opcode, length = struct.unpack(">BBhBi", self.buf[:9])
        if length < 0 or length > 256 * 1024 * 1024:
            raise ValueError(f"bad response length {length}")
        self._fill(9 + length, deadline)
        body = self.buf[9:9 + length]
        self.buf = self.buf[9 + length:]
        if flags & FLAG_COMPRESSED:
            if self.decompressor is None:
                raise ValueError("server sent a compressed frame on an uncompressed connection")
            body = self.decompressor(body)
        # strip optional tracing id / warnings / custom payload from responses
        if flags & 0x02 and opcode == RESULT:
            body = body[16:]
        if flags & 0x08:
            r = Reader(body)
            r.string_list()
            body = body[r.pos:]
        if flags & 0x04:
            r = Reader(body)
            for _ in range(r.short()):
                r.string()
                r.bytes_()
            body = body[r.pos:]
        return Frame(version, flags, stream, opcode, body)

    def recv_for_stream(self, stream: int, timeout: float | None = None) -> Frame:
        """Read frames until one for `stream` arrives (events are kept in self.events)."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            f = self.recv_frame(max(0.001, deadline - time.monotonic()))
            if f.stream == stream:
                return f
            if f.opcode == EVENT:
                self.events.append(f)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- requests
    def options(self, stream: int = 0) -> Frame:
        self.send(OPTIONS, b"", stream)
        return self.recv_for_stream(stream)

    def startup(self, options: dict | None = None, stream: int = 0) -> Frame:
        opts = {"CQL_VERSION": "3.0.0"}
        if options:
            opts.update(options)
        self.send(STARTUP, enc_string_map(opts), stream)
        return self.recv_for_stream(stream)

    def query(self, cql: str | bytes, stream: int = 1, consistency: int = CONSISTENCY_ONE,
              flags: int = 0, timeout: float | None = None) -> Frame:
        raw = cql.encode("utf-8") if isinstance(cql, str) else cql
        body = enc_long_string_bytes(raw) + struct.pack(">HB", consistency, flags)
        self.send(QUERY, body, stream)
        return self.recv_for_stream(stream, timeout)

    def register(self, events, stream: int = 2) -> Frame:
        self.send(REGISTER, enc_string_list(events), stream)
        return self.recv_for_stream(stream)

    def wait_event(self, predicate, timeout: float = 5.0):
        """Return the first EVENT (parsed) matching predicate, waiting up to timeout seconds."""
        deadline = time.monotonic() + timeout
        while True:
            for i, f in enumerate(self.events):
                ev = parse_event(f.body)
                if predicate(ev):
                    del self.events[i]
                    return ev, f
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None, None
            try:
                f = self.recv_frame(remaining)
            except socket.timeout:
                return None, None
            if f.opcode == EVENT:
                self.events.append(f)


def connect_ready(host: str, port: int, timeout: float = 5.0, startup_options: dict | None = None) -> Conn:
    """OPTIONS + STARTUP; returns a Conn in the ready state (asserts READY)."""
    c = Conn(host, port, timeout)
    f = c.startup(startup_options)
    if f.opcode != READY:
        detail = parse_error(f.body) if f.opcode == ERROR else f.opcode
        c.close()
        raise AssertionError(f"STARTUP did not get READY: {detail}")
    return c


def supported(host: str, port: int, timeout: float = 5.0) -> dict:
    with Conn(host, port, timeout) as c:
        f = c.options()
        assert f.opcode == SUPPORTED, f"OPTIONS answered with opcode {f.opcode}"
        return Reader(f.body).string_multimap()


def wait_closed_or_frame(conn: Conn, timeout: float):
    """Wait up to timeout for either a frame or the connection being closed.

    Returns ("frame", Frame) / ("closed", None) / ("silence", None)."""
    try:
        return "frame", conn.recv_frame(timeout)
    except ConnectionClosed:
        return "closed", None
    except socket.timeout:
        return "silence", None
