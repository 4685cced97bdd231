"""Data-driven CQL tests: every tests/cql/*.cql script is one test (see tests/cql/README.md).

Each script runs in a fresh keyspace `ks_<script name>` (SimpleStrategy, replication_factor 1)
through the python driver against the module's ringdb server (conftest.py `server` fixture).
Expected results are those of Apache Cassandra 4.1. A script whose first line is
`-- status: pending` (a feature not implemented yet) is an xfail (strict=False).

Run:  .venv/bin/pytest tests/python/test_cql_scripts.py            (all scripts)
      .venv/bin/pytest tests/python/test_cql_scripts.py -k lwt     (one script)
"""

from __future__ import annotations

import ast
import datetime
import decimal
import ipaddress
import math
import re
import struct
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import make_cluster

CQL_DIR = Path(__file__).resolve().parents[1] / "cql"
SCRIPTS = sorted(CQL_DIR.glob("*.cql"))

# ------------------------------------------------------------------------------------ parsing

EXPECT_ROWS = re.compile(r"^expect rows(?P<anyorder>\s*\(any order\))?\s*:\s*$", re.I)
EXPECT_ERROR = re.compile(r"^expect error\s*:\s*(?P<cls>[A-Za-z_][A-Za-z0-9_]*)\s*(?::\s*(?P<rx>.*))?$", re.I)
EXPECT_OK = re.compile(r"^expect ok\s*$", re.I)
PAGE_SIZE = re.compile(r"^page size\s*:\s*(?P<n>\d+)\s*$", re.I)
CONSISTENCY = re.compile(r"^(?P<serial>serial )?consistency\s*:\s*(?P<cl>[A-Z_]+)\s*$", re.I)
BIND = re.compile(r"^bind\s*:\s*(?P<values>.*)$", re.I)
SLEEP = re.compile(r"^sleep\s*:\s*(?P<s>[0-9.]+)\s*$", re.I)
BEGIN_BATCH = re.compile(r"^BEGIN\s+((UNLOGGED|LOGGED|COUNTER)\s+)?BATCH\b", re.I)
APPLY_BATCH = re.compile(r"\bAPPLY\s+BATCH\s*;$", re.I)
RANGE_CELL = re.compile(r"^~(?P<lo>-?[0-9.]+)\.\.(?P<hi>-?[0-9.]+)$")
HEADER = re.compile(r"^(feature|status)\s*:", re.I)
DIRECTIVE_START = re.compile(r"^(expect |page size|consistency|serial consistency|bind\s*:|sleep\s*:|feature\s*:|status\s*:)",
                             re.I)


@dataclass
class Expect:
    kind: str                       # "rows" | "error" | "ok"
    line: int
    any_order: bool = False
    columns: list[str] | None = None
    rows: list[list[str]] = field(default_factory=list)
    error_class: str | None = None
    error_regex: str | None = None


@dataclass
class Statement:
    text: str
    line: int                       # 1-based line of the statement's first line
    page_size: int | None = None
    consistency: str | None = None
    serial_consistency: str | None = None
    bind: list | None = None        # None: a simple statement; a list: prepared and bound
    sleep: float = 0.0              # seconds to wait before executing
    expect: Expect | None = None


@dataclass
class Script:
    path: Path
    feature: str = ""
    pending: str | None = None
    statements: list[Statement] = field(default_factory=list)


class ScriptError(Exception):
    pass


def split_cells(line: str) -> list[str]:
    """Split `a | 'x|y' | b` on `|` outside single-quoted strings ('' escapes a quote)."""
    cells, cur, in_str, i = [], [], False, 0
    while i < len(line):
        ch = line[i]
        if in_str:
            cur.append(ch)
            if ch == "'":
                if i + 1 < len(line) and line[i + 1] == "'":
                    cur.append("'")
                    i += 1
                else:
                    in_str = False
        elif ch == "'":
            in_str = True
            cur.append(ch)
        elif ch == "|":
            cells.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
        i += 1
    cells.append("".join(cur).strip())
    return cells


def parse_bind(text: str, where: str) -> list:
    """`1, 'a', null, unset, [1, 2]`: python literals plus null / unset."""
    from cassandra.query import UNSET_VALUE
    src = re.sub(r"\bnull\b", "None", text)
    src = re.sub(r"\bunset\b", "__UNSET__", src)
    src = re.sub(r"\btrue\b", "True", src)
    src = re.sub(r"\bfalse\b", "False", src)
    try:
        node = ast.parse(f"[{src}]", mode="eval")
    except SyntaxError as e:
        raise ScriptError(f"{where}: bad bind list {text!r}: {e}")

    def conv(n):
        if isinstance(n, ast.Name) and n.id == "__UNSET__":
            return UNSET_VALUE
        if isinstance(n, ast.List):
            return [conv(x) for x in n.elts]
        if isinstance(n, ast.Tuple):
            return tuple(conv(x) for x in n.elts)
        if isinstance(n, ast.Set):
            return {conv(x) for x in n.elts}
        if isinstance(n, ast.Dict):
            return {conv(k): conv(v) for k, v in zip(n.keys, n.values)}
        return ast.literal_eval(n)

    return [conv(x) for x in node.body.elts]


def parse_script(path: Path) -> Script:
    script = Script(path)
    lines = path.read_text().splitlines()
    buf: list[str] = []
    buf_line = 0
    in_batch = False
    pending_opts: dict = {}
    last: Statement | None = None
    i = 0
    if lines and re.match(r"^--\s*status\s*:\s*pending", lines[0], re.I):
        script.pending = lines[0].split(":", 1)[1].strip()
    while i < len(lines):
        raw = lines[i]
        s = raw.strip()
        where = f"{path.name}:{i + 1}"
        if buf:
            # inside a statement: everything (comments too) belongs to it until `;` ends a line
            # (for BEGIN ... BATCH: until `APPLY BATCH;`)
            buf.append(raw)
            if s.endswith(";") and (not in_batch or APPLY_BATCH.search(s)):
                text = "\n".join(buf).rstrip()
                st = Statement(text[:-1].rstrip(), buf_line, **pending_opts)
                script.statements.append(st)
                last, buf, pending_opts = st, [], {}
            i += 1
            continue
        if not s:
            i += 1
            continue
        if s.startswith("--"):
            body = s[2:].strip()
            if m := HEADER.match(body):
                key, val = body.split(":", 1)
                if key.strip().lower() == "feature":
                    script.feature = val.strip()
            elif m := EXPECT_ROWS.match(body):
                if last is None or last.expect is not None:
                    raise ScriptError(f"{where}: expectation without a statement before it")
                ex = Expect("rows", i + 1, any_order=bool(m.group("anyorder")))
                i += 1
                if i >= len(lines) or not lines[i].strip().startswith("--"):
                    raise ScriptError(f"{where}: `expect rows:` needs a header line `-- col | col`")
                ex.columns = split_cells(lines[i].strip()[2:].strip())
                i += 1
                while i < len(lines):
                    t = lines[i].strip()
                    if not t.startswith("--"):
                        break
                    b = t[2:].strip()
                    if not b or DIRECTIVE_START.match(b):
                        break
                    ex.rows.append(split_cells(b))
                    i += 1
                last.expect = ex
                continue
            elif m := EXPECT_ERROR.match(body):
                if last is None or last.expect is not None:
                    raise ScriptError(f"{where}: expectation without a statement before it")
                last.expect = Expect("error", i + 1, error_class=m.group("cls"),
                                     error_regex=(m.group("rx") or "").strip() or None)
            elif EXPECT_OK.match(body):
                if last is None or last.expect is not None:
                    raise ScriptError(f"{where}: expectation without a statement before it")
                last.expect = Expect("ok", i + 1)
            elif m := PAGE_SIZE.match(body):
                pending_opts["page_size"] = int(m.group("n"))
            elif m := CONSISTENCY.match(body):
                key = "serial_consistency" if m.group("serial") else "consistency"
                pending_opts[key] = m.group("cl").upper()
            elif m := SLEEP.match(body):
                pending_opts["sleep"] = float(m.group("s"))
            elif m := BIND.match(body):
                pending_opts["bind"] = parse_bind(m.group("values"), where)
            elif body.lower().startswith("expect"):
                raise ScriptError(f"{where}: unknown expectation {body!r}")
            # anything else: a plain comment
            i += 1
            continue
        # a statement starts
        buf, buf_line = [raw], i + 1
        in_batch = bool(BEGIN_BATCH.match(s))
        if s.endswith(";") and (not in_batch or APPLY_BATCH.search(s)):
            st = Statement(raw.strip()[:-1].rstrip(), buf_line, **pending_opts)
            script.statements.append(st)
            last, buf, pending_opts = st, [], {}
        i += 1
    if buf:
        raise ScriptError(f"{path.name}:{buf_line}: statement without a terminating `;` at end of line")
    return script


# ------------------------------------------------------------------------------------ values

def fmt_float32(v: float) -> str:
    if math.isnan(v) or math.isinf(v):
        return fmt_double(v)
    target = struct.unpack("f", struct.pack("f", v))[0]
    for digits in range(1, 10):
        s = f"{v:.{digits}g}"
        if struct.unpack("f", struct.pack("f", float(s)))[0] == target:
            return fmt_double(float(s))
    return fmt_double(v)


def fmt_double(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return repr(v)


def fmt_duration(d) -> str:
    """Cassandra's Duration.toString(): 1y2mo3d4h5m6s7ms8us9ns, `-` first if negative."""
    months, days, nanos = d.months, d.days, d.nanoseconds
    out = "-" if (months < 0 or days < 0 or nanos < 0) else ""
    months, days, nanos = abs(months), abs(days), abs(nanos)
    if months // 12:
        out += f"{months // 12}y"
    if months % 12:
        out += f"{months % 12}mo"
    if days:
        out += f"{days}d"
    for unit, size in (("h", 3600 * 10**9), ("m", 60 * 10**9), ("s", 10**9), ("ms", 10**6), ("us", 10**3),
                       ("ns", 1)):
        if nanos // size:
            out += f"{nanos // size}{unit}"
        nanos %= size
    return out if out not in ("", "-") else "0s"


def quote(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def fmt_value(v, ctype=None) -> str:
    """A canonical CQL-literal rendering of a value returned by the python driver."""
    from cassandra.util import Date, Duration, Time, OrderedMapSerializedKey
    tname = getattr(ctype, "typename", None) if ctype is not None else None
    subtypes = getattr(ctype, "subtypes", ()) if ctype is not None else ()
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return fmt_float32(v) if tname == "float" else fmt_double(v)
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, str):
        return quote(v)
    if isinstance(v, (bytes, bytearray)):
        return "0x" + bytes(v).hex()
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, datetime.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return quote(v.strftime("%Y-%m-%dT%H:%M:%S.") + f"{v.microsecond // 1000:03d}Z")
    if isinstance(v, Date):
        return quote(str(v))
    if isinstance(v, datetime.date):
        return quote(v.isoformat())
    if isinstance(v, Time):
        return quote(str(v))
    if isinstance(v, Duration):
        return fmt_duration(v)
    if isinstance(v, (ipaddress.IPv4Address, ipaddress.IPv6Address)):
        return quote(str(v))
    if isinstance(v, (dict, OrderedMapSerializedKey)):
        kt = subtypes[0] if len(subtypes) == 2 else None
        vt = subtypes[1] if len(subtypes) == 2 else None
        return "{" + ", ".join(f"{fmt_value(k, kt)}: {fmt_value(x, vt)}" for k, x in v.items()) + "}"
    if hasattr(v, "_fields"):  # a UDT (namedtuple-like)
        fts = list(subtypes) if subtypes else [None] * len(v._fields)
        return "{" + ", ".join(f"{f}: {fmt_value(getattr(v, f), t)}"
                               for f, t in zip(v._fields, fts)) + "}"
    if isinstance(v, tuple):
        fts = list(subtypes) if subtypes else [None] * len(v)
        return "(" + ", ".join(fmt_value(x, t) for x, t in zip(v, fts)) + ")"
    if isinstance(v, list):
        et = subtypes[0] if subtypes else None
        return "[" + ", ".join(fmt_value(x, et) for x in v) + "]"
    if isinstance(v, (set, frozenset)) or type(v).__name__ in ("SortedSet", "sortedset"):
        et = subtypes[0] if subtypes else None
        return "{" + ", ".join(fmt_value(x, et) for x in v) + "}"
    return repr(v)


# ------------------------------------------------------------------------------------ running

def fmt_table(columns, rows) -> str:
    out = ["    " + " | ".join(columns or [])]
    out += ["    " + " | ".join(r) for r in rows]
    if not rows:
        out.append("    (no rows)")
    return "\n".join(out)


def cell_matches(expected: str, actual: str) -> bool:
    """`<any>` matches any value, `<notnull>` any non-null one, `~lo..hi` a number in [lo, hi]."""
    if expected == "<any>":
        return True
    if expected == "<notnull>":
        return actual != "null"
    if m := RANGE_CELL.match(expected):
        try:
            return float(m.group("lo")) <= float(actual) <= float(m.group("hi"))
        except ValueError:
            return False
    return expected == actual


def rows_match(expected: list[list[str]], actual: list[list[str]]) -> bool:
    return len(expected) == len(actual) and all(
        len(e) == len(a) and all(cell_matches(x, y) for x, y in zip(e, a)) for e, a in zip(expected, actual))


def error_class_name(e: Exception) -> str:
    return type(e).__name__


def error_message(e: Exception) -> str:
    msg = str(e)
    m = re.search(r'message="(.*)"', msg, re.S)
    return m.group(1) if m else msg


class Runner:
    def __init__(self, session, script: Script):
        self.session = session
        self.script = script
        self.failures: list[str] = []

    def execute(self, st: Statement):
        from cassandra import ConsistencyLevel
        from cassandra.query import UNSET_VALUE, SimpleStatement
        kwargs = {}
        if st.consistency:
            kwargs["consistency_level"] = getattr(ConsistencyLevel, st.consistency)
        if st.serial_consistency:
            kwargs["serial_consistency_level"] = getattr(ConsistencyLevel, st.serial_consistency)
        if st.bind is not None:
            prepared = self.session.prepare(st.text)
            # the driver refuses to bind an unset value into the routing key; routing is irrelevant
            # here (one node), and the server must be the one rejecting the unset key part
            has_unset = any(v is UNSET_VALUE for v in st.bind)
            if has_unset:
                prepared.routing_key_indexes = None
            bound = prepared.bind(st.bind)
            if has_unset:
                bound._routing_key = b"\x00"
            for k, v in kwargs.items():
                setattr(bound, k, v)
            if st.page_size:
                bound.fetch_size = st.page_size
            stmt = bound
        else:
            stmt = SimpleStatement(st.text, fetch_size=st.page_size or 5000, **kwargs)
        rs = self.session.execute(stmt)
        columns = list(rs.column_names or [])
        ctypes = list(rs.column_types or [None] * len(columns))
        rows = []
        pages = 0
        while True:
            page = list(rs.current_rows)
            pages += 1
            if st.page_size and len(page) > st.page_size:
                raise AssertionError(f"page {pages} holds {len(page)} rows, more than the page size "
                                     f"{st.page_size}")
            rows.extend(page)
            if not rs.has_more_pages:
                break
            rs.fetch_next_page()
        out = []
        for r in rows:
            vals = list(r) if isinstance(r, tuple) else [r]
            out.append([fmt_value(v, t) for v, t in zip(vals, ctypes)])
        return columns, out

    def fail(self, st: Statement, expected: str, actual: str) -> None:
        self.failures.append(
            f"{self.script.path.name}:{st.line}: {st.text}\n  expected:\n{expected}\n  actual:\n{actual}")

    def run_statement(self, st: Statement) -> None:
        ex = st.expect or Expect("ok", st.line)
        if st.sleep:
            time.sleep(st.sleep)
        try:
            columns, rows = self.execute(st)
        except Exception as e:  # noqa: BLE001 - any driver error is a result here
            cls, msg = error_class_name(e), error_message(e)
            actual = f"    error {cls}: {msg}"
            if ex.kind != "error":
                self.fail(st, "    success" if ex.kind == "ok" else fmt_table(ex.columns, ex.rows), actual)
            elif cls.lower() != ex.error_class.lower():
                self.fail(st, f"    error {ex.error_class}: {ex.error_regex or '.*'}", actual)
            elif ex.error_regex and not re.search(ex.error_regex, msg, re.S):
                self.fail(st, f"    error {ex.error_class}: /{ex.error_regex}/", actual)
            return
        if ex.kind == "ok":
            return
        if ex.kind == "error":
            self.fail(st, f"    error {ex.error_class}: {ex.error_regex or '.*'}", fmt_table(columns, rows))
            return
        exp_rows = ex.rows
        act_rows = rows
        if ex.any_order:
            # matchers (<any>, ~lo..hi) are only reliable in ordered comparisons
            exp_rows, act_rows = sorted(exp_rows), sorted(act_rows)
        if columns != ex.columns or not rows_match(exp_rows, act_rows):
            self.fail(st, fmt_table(ex.columns, ex.rows), fmt_table(columns, rows))

    def run(self) -> None:
        for st in self.script.statements:
            self.run_statement(st)


def script_params():
    params = []
    for p in SCRIPTS:
        first = p.read_text().splitlines()[:1]
        marks = []
        if first and re.match(r"^--\s*status\s*:\s*pending", first[0], re.I):
            reason = first[0].split(":", 1)[1].strip()
            marks.append(pytest.mark.xfail(strict=False, reason=f"status: {reason}"))
        params.append(pytest.param(p, id=p.stem, marks=marks))
    return params


@pytest.fixture(scope="module")
def script_cluster(server):
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, ExecutionProfile
    from cassandra.policies import FallthroughRetryPolicy
    from cassandra.policies import RoundRobinPolicy
    profile = ExecutionProfile(retry_policy=FallthroughRetryPolicy(), request_timeout=30,
                               load_balancing_policy=RoundRobinPolicy())
    # errors must reach the script as the server sent them: no retries (FallthroughRetryPolicy)
    c = make_cluster(server, protocol_version=4, execution_profiles={EXEC_PROFILE_DEFAULT: profile})
    try:
        yield c
    finally:
        c.shutdown()


def test_scripts_parse():
    """Every script is well-formed (runs without a server)."""
    assert SCRIPTS, f"no scripts in {CQL_DIR}"
    for p in SCRIPTS:
        s = parse_script(p)
        assert s.statements, f"{p.name}: no statements"
        assert s.feature, f"{p.name}: no `-- feature:` line"


@pytest.mark.parametrize("path", script_params())
def test_cql_script(script_cluster, path: Path):
    script = parse_script(path)
    ks = f"ks_{re.sub(r'[^a-z0-9_]', '_', path.stem.lower())}"
    admin = script_cluster.connect()
    try:
        admin.execute(f"DROP KEYSPACE IF EXISTS {ks}")
        admin.execute(f"CREATE KEYSPACE {ks} WITH replication = "
                      "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    finally:
        admin.shutdown()
    session = script_cluster.connect(ks)
    try:
        runner = Runner(session, script)
        runner.run()
    finally:
        session.shutdown()
    if runner.failures:
        pytest.fail(f"{len(runner.failures)} of {len(script.statements)} statements of {path.name} "
                    f"({script.feature}) differ from Cassandra 4.1:\n\n" + "\n\n".join(runner.failures),
                    pytrace=False)
