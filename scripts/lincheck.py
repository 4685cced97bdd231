#!/usr/bin/env python3
"""Linearizability checker for register histories (standard library only).

The chaos tests have clients read, write and compare-and-set a few keys of a ringdb cluster at
QUORUM and record every operation, one JSON object a line:

  {"client": 3, "key": "k1", "op": "write"|"read"|"cas", "value": 5, "expected": 4,
   "start": 12.5, "end": 12.6, "ok": true, "applied": true}

  start, end  monotonic times (s) of invocation and completion as the client saw them
  ok: true    completed; a read's `value` is what it returned (null: no value), a cas's
              `applied` says whether it applied (cas(expected, value) applies iff the current
              value equals `expected`)
  ok: false   definitely failed (e.g. Unavailable before anything was sent): no effect, dropped
  ok: null    indeterminate (timeout, connection lost): a write or cas may take effect at any
              time after `start`, so it is modelled as completing at +infinity with an unknown
              result; a read with an unknown result says nothing and is dropped

Each key is an independent register whose initial value is null. Linearizability is
compositional, so every key is checked on its own (P-compositionality).

The search is Wing & Gong's with Lowe's memoisation, as in porcupine (Athalye): the call and
return events of the key's operations sorted by time (a call before a return at equal times, so
operations that touch are concurrent) in a doubly linked list; the search linearizes the first
call it can, lifting the call and its return out of the list, and backtracks when it reaches the
return of an operation it has not linearized; a set of (linearized-operations bitmask, register
value) pairs it has already explored prunes repeats. An indeterminate operation has no return
event: it may stay unordered, which is taking effect after everything else.

Indeterminate operations are what makes the plain search slow: each one is a candidate at every
point after its start (a history of 2000 operations, 6 clients, with 30 of them and some cas
that did not apply: no verdict after 30 s). So, by default (simplify=False or --no-simplify
turns all of it off, leaving the plain search the tests compare against):
  - two exact rewrites of the history (they keep the verdict):
    - an indeterminate write or cas whose value no read returns and no cas expects (and the key
      has no cas that did not apply) is dropped: wherever it took effect, taking it out of the
      order leaves every other operation's result unchanged, and "never" is allowed for it;
    - a write or cas whose non-null value no other operation writes must take effect before
      every operation that observes that value (a read returning it, a cas that applied
      expecting it), so it gets that operation's completion time as its end (an indeterminate
      one then has a finite end);
  - the search tries indeterminate operations after the others, skips steps that cannot matter
    and prunes configurations dominated by ones that already failed (see _wgl).

On a violation the report names the key and the first point in time at which the history was
already not linearizable: the completion of an operation such that the operations completed by
then (those still running count as indeterminate) admit no linearization. That prefix is found
by bisection over completion times, which is sound because a prefix cut this way of a
linearizable history is linearizable. The report then shows the deepest partial linearization of
that prefix: how many operations it ordered, the register's value, the operation whose
completion it could not get past and the operations that could have come next.

Usage: lincheck.py HISTORY.jsonl [--timeout S] [--no-simplify]
  exit 0: linearizable; 1: not linearizable; 2: unknown (time budget exhausted) or bad input.
As a module: check_history(ops, timeout_s=None) -> Result; load_history(path) -> list of ops.
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Iterable

INF = math.inf

# Operation kinds after normalisation. A cas splits by what is known of its result.
READ, WRITE, CAS_APPLIED, CAS_NOT_APPLIED, CAS_UNKNOWN = range(5)
WRITERS = (WRITE, CAS_APPLIED, CAS_UNKNOWN)  # kinds that may set the register

# Kinds of search steps (stack frames): a candidate of the main list, an indeterminate
# operation, a main-list candidate ordered with no alternatives (see _wgl).
MAIN, INDET, FORCED = range(3)
# How often (in search steps) the deadline is checked.
DEADLINE_EVERY = 1024
# How much of a partial linearization an explanation shows.
SHOW_LAST = 5
SHOW_PENDING = 12


class HistoryError(ValueError):
    """The history is malformed (missing or mistyped fields, end before start, bad JSON)."""


@dataclass
class KeyReport:
    key: str
    ok: bool | None  # None: not decided within the time budget
    ops: int  # operations on the key in the history
    checked: int  # operations left to order (without failed ones, unknown reads, dropped ones)
    failed: int  # ok false: dropped
    indeterminate: int  # ok null writes and cas (reads with ok null are dropped)
    max_concurrency: int  # most completed operations running at once
    elapsed_s: float = 0.0
    steps: int = 0  # search steps of the main check
    explanation: str = ""


@dataclass
class Result:
    ok: bool | None  # True: linearizable; False: not; None: unknown (time budget exhausted)
    key: str | None = None  # the key that is not linearizable (or the first undecided one)
    explanation: str = ""
    keys: list[KeyReport] = field(default_factory=list)


class _Op:
    """One operation of a key, normalised: end is INF for an indeterminate one."""

    __slots__ = ("idx", "kind", "value", "expected", "start", "end", "raw")

    def __init__(self, idx, kind, value, expected, start, end, raw):
        self.idx, self.kind, self.value, self.expected = idx, kind, value, expected
        self.start, self.end, self.raw = start, end, raw

    def replace(self, **changes) -> "_Op":
        fields = {s: getattr(self, s) for s in self.__slots__}
        fields.update(changes)
        return _Op(**fields)


# ---------------------------------------------------------------- input

_MISSING = object()


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _is_scalar(x) -> bool:
    return x is None or isinstance(x, str) or (isinstance(x, int) and not isinstance(x, bool))


def _where(i: int, raw: Any) -> str:
    line = raw.get("_line") if isinstance(raw, dict) else None
    return f"operation #{i}" + (f" (line {line})" if line is not None else "")


def _normalize(i: int, raw: Any) -> tuple[str, _Op | None, str]:
    """(key, op or None when dropped, status) with status one of ok/failed/indeterminate/dropped."""
    if not isinstance(raw, dict):
        raise HistoryError(f"{_where(i, raw)}: not a JSON object")

    def bad(msg: str) -> HistoryError:
        return HistoryError(f"{_where(i, raw)}: {msg}: {json.dumps(raw, default=str)[:200]}")

    key = raw.get("key", _MISSING)
    if not isinstance(key, str):
        raise bad("'key' must be a string")
    op = raw.get("op")
    if op not in ("read", "write", "cas"):
        raise bad("'op' must be read, write or cas")
    ok = raw.get("ok", _MISSING)
    if not (ok is True or ok is False or ok is None):
        raise bad("'ok' must be true, false or null")
    start = raw.get("start")
    if not _is_number(start):
        raise bad("'start' must be a finite number")
    if ok is False:
        return key, None, "failed"
    if ok is None and op == "read":
        return key, None, "dropped"
    value = raw.get("value", _MISSING)
    if value is _MISSING or not _is_scalar(value):
        raise bad("'value' must be an integer, a string or null")
    expected = None
    if op == "cas":
        expected = raw.get("expected", _MISSING)
        if expected is _MISSING or not _is_scalar(expected):
            raise bad("a cas needs 'expected' (an integer, a string or null)")
    if ok is None:
        kind = WRITE if op == "write" else CAS_UNKNOWN
        return key, _Op(i, kind, value, expected, float(start), INF, raw), "indeterminate"
    end = raw.get("end")
    if not _is_number(end) or end < start:
        raise bad("a completed operation needs a finite 'end' >= 'start'")
    if op == "read":
        kind = READ
    elif op == "write":
        kind = WRITE
    else:
        applied = raw.get("applied")
        if not isinstance(applied, bool):
            raise bad("a completed cas needs 'applied' (true or false)")
        kind = CAS_APPLIED if applied else CAS_NOT_APPLIED
    return key, _Op(i, kind, value, expected, float(start), float(end), raw), "ok"


def load_history(path: str) -> list[dict]:
    """The operations of a JSON-lines file (blank lines skipped); each gets its line as '_line'."""
    ops = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
            except json.JSONDecodeError as e:
                raise HistoryError(f"line {n}: not JSON: {e}") from None
            if not isinstance(raw, dict):
                raise HistoryError(f"line {n}: not a JSON object")
            raw["_line"] = n
            ops.append(raw)
    return ops


# ---------------------------------------------------------------- description

def _fmt_value(v) -> str:
    if v is UNREAD:
        return "a value nothing reads"
    return "null" if v is None else json.dumps(v)


def describe(op: _Op) -> str:
    raw = op.raw
    if op.kind == READ:
        what = f"read -> {_fmt_value(op.value)}"
    elif op.kind == WRITE:
        what = f"write {_fmt_value(op.value)}"
    else:
        result = {CAS_APPLIED: "applied", CAS_NOT_APPLIED: "not applied"}.get(op.kind, "result unknown")
        what = f"cas {_fmt_value(op.expected)} -> {_fmt_value(op.value)} ({result})"
    original_end = raw.get("end")
    if raw.get("ok") is None:
        end = "indeterminate"
        if op.end != INF:
            end += f", must take effect by {op.end:.6f}"
    elif op.end == INF:
        end = f"{original_end:.6f}, still running at the cut: result ignored"
    else:
        end = f"{original_end:.6f}"
        if op.end != original_end:
            end += f", must take effect by {op.end:.6f}"
    line = f" line {raw['_line']}" if "_line" in raw else ""
    return f"#{op.idx}{line} client {raw.get('client')}: {what} [{op.start:.6f}, {end}]"


# ---------------------------------------------------------------- rewrites

def _simplify(ops: list[_Op]) -> list[_Op]:
    """The two exact rewrites of the module docstring."""
    any_cas_not_applied = any(o.kind == CAS_NOT_APPLIED for o in ops)
    read_values = {o.value for o in ops if o.kind == READ}
    expected_values = {o.expected for o in ops if o.kind in (CAS_APPLIED, CAS_NOT_APPLIED, CAS_UNKNOWN)}
    if not any_cas_not_applied:
        ops = [
            o for o in ops
            if not (o.end == INF and o.value not in read_values and o.value not in expected_values)
        ]
    writers: dict[Any, int] = {}
    for o in ops:
        if o.kind in WRITERS:
            writers[o.value] = writers.get(o.value, 0) + 1
    first_seen: dict[Any, float] = {}  # value -> earliest completion of an operation observing it
    for o in ops:
        seen = o.value if o.kind == READ else o.expected if o.kind == CAS_APPLIED else _MISSING
        if seen is not _MISSING and seen is not None and o.end < first_seen.get(seen, INF):
            first_seen[seen] = o.end
    out = []
    for o in ops:
        if o.kind in WRITERS and o.value is not None and writers[o.value] == 1:
            by = first_seen.get(o.value, INF)
            # by < start: the value is observed before it can have been written; leave the
            # operation alone and let the search report the violation.
            if o.start <= by < o.end:
                o = o.replace(end=by)
        out.append(o)
    return out


def _truncate(ops: list[_Op], t: float) -> list[_Op]:
    """The history as it stood at time t: operations completed by t keep their results, those
    still running become indeterminate (reads dropped), later ones are left out."""
    out = []
    for o in ops:
        if o.start > t:
            continue
        if o.end <= t:
            out.append(o)
        elif o.kind != READ:
            kind = WRITE if o.kind == WRITE else CAS_UNKNOWN
            out.append(o.replace(kind=kind, end=INF))
    return out


# ---------------------------------------------------------------- search

@dataclass
class _Stuck:
    """The deepest point the search reached: it had ordered `depth` operations (the last ones
    `last`), the register held `state`, and it could not get past the completion of `op`;
    `pending` are the operations it could have ordered next."""

    depth: int
    state: Any
    op: _Op
    last: list[_Op]
    pending: list[_Op]


class _Unread:
    """A register value that no read returns and no cas expects (see _wgl)."""

    def __repr__(self) -> str:
        return "<unread>"


UNREAD = _Unread()


def _wgl(
    ops: list[_Op], deadline: float | None, reduce: bool = True
) -> tuple[bool | None, _Stuck | None, int]:
    """(verdict, deepest point if not linearizable, steps); verdict None when out of time.

    Operations with a finite end are call and return events in the doubly linked list.
    Indeterminate ones (end INF) have no return event: they may also stay unordered, i.e. take
    effect after everything else. They sit in further lists, each sorted by start, and are
    tried after the calls of the first list, before the search gives up at the first return
    event R of that list (only those that started before R are candidates).

    The memo is keyed by (finite operations ordered, register value) and holds the sets of
    indeterminate operations ordered with them. With `reduce`, a configuration is also pruned
    when a finished (hence failed) one with the same key had ordered a subset of its
    indeterminate operations: an unordered indeterminate operation only adds options. (Only
    finished ones: one still on the stack may be an ancestor.) Trying the indeterminate
    operations last makes the first configuration seen for a key the one with fewest.

    With `reduce`, a value that no read returns and no cas expects is never told apart from
    another such value: writes of one are taken to write UNREAD.

    Also with `reduce`, a candidate that never changes the value and is legal now (a read of
    the current value, a cas that did not apply and expects another value, a cas that applied
    writing the value it expected) is ordered first and alone (FORCED): any linearization from
    there can be changed into one that orders it right away (everything that must precede it
    is ordered already, and wherever it stands it changes nothing), so when that fails the
    configuration has failed. This removes the interleavings of concurrent reads.
    And of the writes of UNREAD among the candidates only the one that must complete first is
    tried: in a linearization starting with another one, the two can trade places.

    And steps that cannot matter are not tried:
      - an indeterminate operation that would leave the value unchanged (leaving it for later
        keeps every option open), in particular a cas whose expected value is not the current
        one: the indeterminate cas are listed by expected value and only the current value's
        list is tried;
      - an indeterminate write right after another indeterminate operation (which it would
        overwrite at once: the order without that one is tried as well);
      - "free" operations: indeterminate writes and cas of UNREAD. Free operations of one kind
        (writes; cas with the same expected value) are interchangeable once started, so only
        the earliest unordered one is tried, and a free write is not tried while the value is
        already unread.
    Without `reduce` the search is the plain WGL one (the reference for the tests)."""
    n = len(ops)
    fin = [i for i in range(n) if ops[i].end != INF]
    inf = sorted((i for i in range(n) if ops[i].end == INF), key=lambda i: (ops[i].start, i))
    bit = [0] * n
    for k, i in enumerate(fin):
        bit[i] = 1 << k
    for k, i in enumerate(inf):
        bit[i] = 1 << k
    kinds = [o.kind for o in ops]
    values = [o.value for o in ops]
    expecteds = [o.expected for o in ops]
    observed = {o.value for o in ops if o.kind == READ} | {o.expected for o in ops if o.kind >= CAS_APPLIED}
    if reduce:
        for i in range(n):
            if kinds[i] in WRITERS and values[i] not in observed:
                values[i] = UNREAD

    # List of the finite operations' events: node 0 is the head, node k is events[k - 1],
    # -1 is nil.
    events = sorted([(ops[i].start, 0, i) for i in fin] + [(ops[i].end, 1, i) for i in fin])
    n_events = len(events)
    nxt = list(range(1, n_events + 1)) + [-1]
    prv = list(range(-1, n_events))
    node_op = [-1] + [e[2] for e in events]
    node_key = [None] + events
    is_call = [False] + [e[1] == 0 for e in events]
    ret_node = [-1] * n
    for k, e in enumerate(events, 1):
        if e[1] == 1:
            ret_node[e[2]] = k

    # Lists of the indeterminate operations: node k < m is inf[k]; the heads come after them.
    # With `reduce` one list per (free, kind, expected value of a cas), else one list.
    m = len(inf)
    heads: dict[Any, int] = {}
    inxt = [-1] * m
    iprv = [-1] * m
    tails: dict[int, int] = {}
    for k, i in enumerate(inf):
        name: Any = "all"
        if reduce:
            free = values[i] is UNREAD
            name = (free, kinds[i], expecteds[i] if kinds[i] == CAS_UNKNOWN else None)
        h = heads.get(name)
        if h is None:
            h = heads[name] = len(inxt)
            inxt.append(-1)
            iprv.append(-1)
            tails[h] = h
        inxt[tails[h]], iprv[k], tails[h] = k, tails[h], k
    inode_key = [(ops[i].start, 0, i) for i in inf]
    first_only = [False] * len(inxt)  # by head: only the list's first operation is tried
    if reduce:
        for name, h in heads.items():
            first_only[h] = name[0]
    empty: list[int] = []
    plain_lists = [heads["all"]] if not reduce and heads else empty
    writes = [h for h in (heads.get((False, WRITE, None)), heads.get((True, WRITE, None))) if h is not None]

    def lists_for(value) -> list[int]:
        if not reduce:
            return plain_lists
        cas = [h for h in (heads.get((False, CAS_UNKNOWN, value)), heads.get((True, CAS_UNKNOWN, value)))
               if h is not None]
        return writes + cas if cas else writes

    def window_edf() -> int:
        """The call of the write of UNREAD with the earliest end among the candidates."""
        found, found_key = -1, None
        k = nxt[0]
        while is_call[k]:
            i = node_op[k]
            if values[i] is UNREAD and kinds[i] == WRITE:
                key = node_key[ret_node[i]]
                if found_key is None or key < found_key:
                    found, found_key = k, key
            k = nxt[k]
        return found

    state: Any = None
    fmask = imask = 0
    remaining = len(fin)
    edf = -1
    seen: dict[tuple[int, Any], list[list]] = {}  # key -> [[imask, finished], ...]
    # frames: (MAIN/INDET/FORCED, node, value before, memo entry, R, lists, list index)
    stack: list[tuple] = []
    best: _Stuck | None = None
    entry, in_main, first_ret, scan = nxt[0], True, -1, reduce
    lists, li, ientry = empty, 0, -1
    steps = 0
    while remaining:
        steps += 1
        if deadline is not None and steps % DEADLINE_EVERY == 0 and time.monotonic() > deadline:
            return None, None, steps
        if in_main and scan:
            # A new configuration: a candidate that never changes the value and is legal now is
            # ordered first, with no alternatives (FORCED); else note the first write of UNREAD.
            scan = False
            k = nxt[0]
            while is_call[k]:
                i = node_op[k]
                kind = kinds[i]
                if kind == READ:
                    if state == values[i]:
                        break
                elif kind == CAS_NOT_APPLIED:
                    if state != expecteds[i]:
                        break
                elif kind == CAS_APPLIED and state == expecteds[i] and state == values[i]:
                    break
                k = nxt[k]
            if not is_call[k]:
                edf = window_edf()
                continue
            how, node = FORCED, k
            while is_call[k]:
                k = nxt[k]
            first_ret = k
        elif in_main:
            if not is_call[entry]:
                # first return event: now the indeterminate operations that started before it
                in_main, first_ret = False, entry
                lists, li = lists_for(state), 0
                ientry = inxt[lists[0]] if lists else -1
                continue
            how, i, node = MAIN, node_op[entry], entry
            entry = nxt[entry]
            if reduce and values[i] is UNREAD and kinds[i] == WRITE and node != edf:
                continue  # another write of UNREAD comes first
        elif li < len(lists):
            if ientry == -1 or inode_key[ientry] >= node_key[first_ret]:
                li += 1
                ientry = inxt[lists[li]] if li < len(lists) else -1
                continue
            how, i, node, cur_li = INDET, inf[ientry], ientry, li
            if first_only[lists[li]]:
                li += 1
                ientry = inxt[lists[li]] if li < len(lists) else -1
            else:
                ientry = inxt[ientry]
        else:
            # Dead end: the operation returning at first_ret cannot be ordered from here.
            if best is None or len(stack) > best.depth:
                pending = []
                k = nxt[0]
                while k != first_ret and len(pending) < SHOW_PENDING:
                    if is_call[k]:
                        pending.append(ops[node_op[k]])
                    k = nxt[k]
                pending.extend(ops[inf[k]] for k in range(m) if inode_key[k] < node_key[first_ret]
                               and not imask & bit[inf[k]])
                last = [ops[inf[f[1]] if f[0] == INDET else node_op[f[1]]] for f in stack[-SHOW_LAST:]]
                best = _Stuck(len(stack), state, ops[node_op[first_ret]], last, pending[:SHOW_PENDING])
            if not stack:
                return False, best, steps
            how, node, state, memo_entry, first_ret, lists, li = stack.pop()
            memo_entry[1] = True
            scan = False
            if how == INDET:
                imask ^= bit[inf[node]]
                p, q = iprv[node], inxt[node]
                inxt[p] = node
                if q != -1:
                    iprv[q] = node
                if first_only[lists[li]]:
                    li += 1
                    ientry = inxt[lists[li]] if li < len(lists) else -1
                else:
                    ientry = inxt[node]
            else:
                i = node_op[node]
                fmask ^= bit[i]
                remaining += 1
                # put the return back, then the call (the reverse of lifting)
                r = ret_node[i]
                p, q = prv[r], nxt[r]
                nxt[p] = r
                if q != -1:
                    prv[q] = r
                p, q = prv[node], nxt[node]
                nxt[p] = node
                if q != -1:
                    prv[q] = node
                if how == MAIN:
                    entry, in_main = nxt[node], True
                    edf = window_edf() if reduce else -1
                else:
                    # FORCED: without it this configuration is a dead end as well
                    in_main, lists, li = False, empty, 0
            continue

        # Try ordering operation i (call node `node`) next.
        kind = kinds[i]
        if kind == READ:
            legal, new_state = state == values[i], state
        elif kind == WRITE:
            legal, new_state = True, values[i]
        elif kind == CAS_APPLIED:
            legal, new_state = state == expecteds[i], values[i]
        elif kind == CAS_NOT_APPLIED:
            legal, new_state = state != expecteds[i], state
        else:
            legal, new_state = True, (values[i] if state == expecteds[i] else state)
        if not legal:
            continue
        if how != INDET:
            new_fmask, new_imask = fmask | bit[i], imask
        else:
            if reduce:
                if new_state == state:
                    continue  # changes nothing: leave it for later
                if kind == WRITE and (stack and stack[-1][0] == INDET
                                      or (new_state is UNREAD and state not in observed)):
                    continue  # overwrites the one just ordered / the value is unread already
            new_fmask, new_imask = fmask, imask | bit[i]
        memo = (new_fmask, new_state)
        entries = seen.get(memo)
        if entries is None:
            entries = seen[memo] = []
        elif any(e[0] == new_imask or (reduce and e[1] and e[0] & ~new_imask == 0) for e in entries):
            if how == FORCED:
                in_main, lists, li = False, empty, 0  # so this configuration is a dead end
            continue
        memo_entry = [new_imask, False]
        entries.append(memo_entry)
        if how != INDET:
            stack.append((how, node, state, memo_entry, first_ret, empty, 0))
            fmask = new_fmask
            remaining -= 1
            # lift the call and its return out of the list
            p, q = prv[node], nxt[node]
            nxt[p] = q
            if q != -1:
                prv[q] = p
            r = ret_node[i]
            p, q = prv[r], nxt[r]
            nxt[p] = q
            if q != -1:
                prv[q] = p
        else:
            stack.append((INDET, node, state, memo_entry, first_ret, lists, cur_li))
            imask = new_imask
            p, q = iprv[node], inxt[node]
            inxt[p] = q
            if q != -1:
                iprv[q] = p
        state = new_state
        entry, in_main, scan = nxt[0], True, reduce
    return True, None, steps


# ---------------------------------------------------------------- per key

def _max_concurrency(ops: list[_Op]) -> int:
    """The most completed operations running at once (indeterminate ones are counted apart)."""
    events = sorted([(o.start, 0) for o in ops if o.end != INF] + [(o.end, 1) for o in ops if o.end != INF])
    level = top = 0
    for _, kind in events:
        level += 1 if kind == 0 else -1
        top = max(top, level)
    return top


def _explain(stuck: _Stuck, n_ordered: int, all_ops: list[_Op]) -> list[str]:
    op = stuck.op
    lines = [
        f"  deepest partial linearization of those: {stuck.depth} of {n_ordered} operations ordered, "
        f"register value then {_fmt_value(stuck.state)}; it cannot get past the completion of",
        f"    {describe(op)}",
    ]
    if op.kind == READ and op.value is not None \
            and not any(o.kind in WRITERS and o.value == op.value for o in all_ops):
        lines.append(f"    (no write or cas that may have taken effect writes {_fmt_value(op.value)})")
    if stuck.last:
        lines.append("  last operations it ordered:")
        lines.extend(f"    {describe(o)}" for o in stuck.last)
    lines.append("  operations that could have come next (none leads to a linearization):")
    lines.extend(f"    {describe(o)}" for o in stuck.pending)
    return lines


def _check_key(key: str, ops: list[_Op], report: KeyReport, deadline: float | None, simplify: bool) -> None:
    t0 = time.monotonic()
    prepared = _simplify(ops) if simplify else ops
    report.checked = len(prepared)
    if deadline is not None and t0 >= deadline:
        report.ok, report.explanation = None, "not checked: time budget exhausted"
        return
    verdict, stuck, report.steps = _wgl(prepared, deadline, simplify)
    report.elapsed_s = time.monotonic() - t0
    report.ok = verdict
    if verdict is None:
        report.explanation = f"undecided after {report.steps} search steps: time budget exhausted"
    if verdict is not False:
        return

    # Search the completion times for the first point at which the history was already not
    # linearizable: first the completion of the operation the search got stuck at and the one
    # before it (usually the answer), then bisection. Budget: 4 times the main check's (at least
    # 2 s), within the deadline.
    budget_end = time.monotonic() + max(2.0, 4 * report.elapsed_s)
    if deadline is not None:
        budget_end = min(budget_end, deadline)
    ends = sorted({o.end for o in ops if o.end != INF})
    lo, hi = 0, len(ends) - 1  # the first violation is at ends[lo..hi]; ends[hi] is one
    found = (stuck, len(prepared), prepared)

    def probe(k: int) -> bool:
        nonlocal lo, hi, found
        sub = _truncate(ops, ends[k])
        sub = _simplify(sub) if simplify else sub
        v, st, _ = _wgl(sub, budget_end, simplify)
        if v is None:
            return False
        if v:
            lo = k + 1
        else:
            hi, found = k, (st, len(sub), sub)
        return True

    guess = bisect.bisect_left(ends, stuck.op.end)
    exact = True
    for k in (guess, guess - 1):
        if lo <= k < hi and not probe(k):
            exact = False
            break
    while exact and lo < hi:
        if not probe((lo + hi) // 2):
            exact = False
    t = ends[hi]
    completing = [o for o in ops if o.end == t]
    lines = [
        f"key {key!r} is not linearizable. "
        + ("First violation" if exact
           else "Earliest violation found (time budget too short to bisect further)")
        + f": the operations completed by {t:.6f} (those still running counted as indeterminate) "
        "admit no linearization; the last of them to complete:",
        *(f"    {describe(o)}" for o in completing),
    ]
    st, n_ordered, sub = found
    lines.extend(_explain(st, n_ordered, sub))
    report.explanation = "\n".join(lines)
    report.elapsed_s = time.monotonic() - t0


def check_history(ops: Iterable[dict], timeout_s: float | None = None, *, simplify: bool = True) -> Result:
    """Check a history (a list of operation dicts, see the module docstring) for linearizability,
    key by key. With timeout_s the whole check gets that budget; a key not decided within it
    makes the result unknown (ok None) unless another key is not linearizable.
    simplify=False turns off the exact rewrites (for cross-checking them).
    Raises HistoryError on malformed input."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    per_key: dict[str, list[_Op]] = {}
    reports: dict[str, KeyReport] = {}
    for i, raw in enumerate(ops):
        key, op, status = _normalize(i, raw)
        rep = reports.get(key)
        if rep is None:
            rep = reports[key] = KeyReport(key, None, 0, 0, 0, 0, 0)
            per_key[key] = []
        rep.ops += 1
        if status == "failed":
            rep.failed += 1
        elif status == "indeterminate":
            rep.indeterminate += 1
        if op is not None:
            per_key[key].append(op)
    for key in sorted(per_key):
        rep = reports[key]
        rep.max_concurrency = _max_concurrency(per_key[key])
        _check_key(key, per_key[key], rep, deadline, simplify)
    result = Result(True, keys=[reports[k] for k in sorted(reports)])
    bad = [r for r in result.keys if r.ok is False]
    unknown = [r for r in result.keys if r.ok is None]
    if bad:
        result.ok, result.key = False, bad[0].key
        result.explanation = "\n".join(r.explanation for r in bad)
    elif unknown:
        result.ok, result.key = None, unknown[0].key
        result.explanation = f"key {unknown[0].key!r}: {unknown[0].explanation}"
    return result


# ---------------------------------------------------------------- CLI

def format_result(result: Result) -> str:
    verdict = {True: "linearizable", False: "NOT linearizable", None: "UNKNOWN"}
    lines = []
    for r in result.keys:
        lines.append(
            f"key {r.key!r}: {r.ops} ops ({r.failed} failed, {r.indeterminate} indeterminate, "
            f"{r.checked} to order, max concurrency {r.max_concurrency}): {verdict[r.ok]} "
            f"({r.elapsed_s:.2f} s, {r.steps} steps)"
        )
    if result.explanation:
        lines.append(result.explanation)
    total = sum(r.ops for r in result.keys)
    lines.append(f"result: {verdict[result.ok]} ({total} ops, {len(result.keys)} keys)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("history", help="JSON lines, one operation a line")
    ap.add_argument("--timeout", type=float, default=None, metavar="S", help="time budget in seconds")
    ap.add_argument("--no-simplify", action="store_true", help="turn off the exact rewrites")
    args = ap.parse_args(argv)
    try:
        ops = load_history(args.history)
        result = check_history(ops, args.timeout, simplify=not args.no_simplify)
    except (HistoryError, OSError) as e:
        print(f"lincheck: bad input: {e}", file=sys.stderr)
        return 2
    print(format_result(result))
    return {True: 0, False: 1, None: 2}[result.ok]


if __name__ == "__main__":
    sys.exit(main())
