"""The linearizability checker for the chaos tests' register histories (scripts/lincheck.py).

No server: hand-written histories with known verdicts (both ways), random histories generated
from a real sequential register execution with overlapping intervals (valid, and invalid once
one read is made stale), small random histories against a brute-force checker, the exact
rewrites against the plain search, and the CLI's exit codes.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

LINCHECK = Path(__file__).resolve().parents[2] / "scripts" / "lincheck.py"
_spec = importlib.util.spec_from_file_location("lincheck", LINCHECK)
lincheck = importlib.util.module_from_spec(_spec)
sys.modules["lincheck"] = lincheck
_spec.loader.exec_module(lincheck)


# ---------------------------------------------------------------- history builders

def w(value, start, end, *, ok=True, client=0, key="k") -> dict:
    return {"client": client, "key": key, "op": "write", "value": value, "start": start,
            "end": end if ok is not None else None, "ok": ok}


def r(value, start, end, *, ok=True, client=1, key="k") -> dict:
    return {"client": client, "key": key, "op": "read", "value": value, "start": start,
            "end": end if ok is not None else None, "ok": ok}


def cas(expected, value, start, end, *, applied=None, ok=True, client=2, key="k") -> dict:
    op = {"client": client, "key": key, "op": "cas", "expected": expected, "value": value,
          "start": start, "end": end if ok is not None else None, "ok": ok}
    if ok:
        op["applied"] = applied
    return op


def check(ops, **kw):
    result = lincheck.check_history(ops, **kw)
    # The exact rewrites must not change a verdict.
    assert lincheck.check_history(ops, simplify=False, **kw).ok == result.ok
    return result


def assert_valid(ops):
    result = check(ops)
    assert result.ok is True, result.explanation
    assert result.explanation == ""


def assert_invalid(ops, key="k"):
    result = check(ops)
    assert result.ok is False
    assert result.key == key
    assert f"key {key!r} is not linearizable" in result.explanation
    return result


# ---------------------------------------------------------------- hand-written histories

def test_empty_and_single_read_of_initial_null():
    assert check([]).ok is True
    assert_valid([r(None, 0, 1)])
    assert_invalid([r(1, 0, 1)])


def test_sequential_history_is_valid():
    assert_valid([
        r(None, 0, 1), w(1, 2, 3), r(1, 4, 5), w(2, 6, 7), r(2, 8, 9), r(2, 10, 11),
        w(None, 12, 13), r(None, 14, 15),
    ])


def test_sequential_history_with_wrong_read_is_invalid():
    assert_invalid([w(1, 0, 1), r(1, 2, 3), w(2, 4, 5), r(3, 6, 7)])


@pytest.mark.parametrize("seen", [(1, 2, 2), (2, 1, 1), (1, 1, 1), (2, 2, 2), (None, 1, 1), (None, 2, 2)])
def test_concurrent_writes_reads_may_see_either_value(seen):
    during1, during2, after = seen
    assert_valid([
        w(1, 0, 10, client=0), w(2, 1, 11, client=1),
        r(during1, 2, 3, client=2), r(during2, 4, 5, client=2), r(after, 12, 13, client=2),
    ])


def test_concurrent_writes_value_flipping_back_is_invalid():
    # 1 then 2 then 1 again needs a third write
    assert_invalid([
        w(1, 0, 10, client=0), w(2, 1, 11, client=1),
        r(1, 2, 3, client=2), r(2, 4, 5, client=2), r(1, 6, 7, client=2),
    ])


def test_stale_read_after_completed_write_is_invalid():
    result = assert_invalid([w(1, 0, 1), w(2, 2, 3), r(1, 4, 5)])
    assert "read -> 1" in result.explanation


def test_read_concurrent_with_write_may_see_old_or_new_value():
    assert_valid([w(1, 0, 1), w(2, 2, 6), r(1, 3, 4)])
    assert_valid([w(1, 0, 1), w(2, 2, 6), r(2, 3, 4)])


def test_read_of_value_never_written_is_invalid():
    result = assert_invalid([w(1, 0, 1), w(2, 2, 3), r(7, 4, 5)])
    assert "no write or cas that may have taken effect writes 7" in result.explanation


def test_read_before_the_write_started_is_invalid():
    assert_invalid([r(1, 0, 1), w(1, 2, 3)])


def test_reads_in_the_order_of_overlapping_writes_are_valid():
    # w1 completes before w2 starts; reads during w2 see 1 then 2
    assert_valid([w(1, 0, 1), w(2, 2, 10), r(1, 3, 4, client=1), r(2, 5, 6, client=2)])


def test_reads_in_an_order_impossible_with_the_writes_real_time_order_are_invalid():
    # once a read has seen 2, the earlier write of 1 cannot come back
    assert_invalid([w(1, 0, 1), w(2, 2, 10), r(2, 3, 4, client=1), r(1, 5, 6, client=2)])


def test_two_readers_disagree_on_order_of_concurrent_writes_is_invalid():
    # reader A sees 1 then 2, reader B (strictly later reads) sees 2 then 1
    assert_invalid([
        w(1, 0, 20, client=0), w(2, 0, 20, client=1),
        r(1, 1, 2, client=2), r(2, 3, 4, client=2),
        r(2, 5, 6, client=3), r(1, 7, 8, client=3),
    ])


def test_touching_intervals_count_as_concurrent():
    # the read starts exactly when the write ends: either order is allowed
    assert_valid([w(1, 0, 1), r(None, 1, 2)])
    assert_invalid([w(1, 0, 1), r(None, 1.5, 2)])


def test_unread_write_may_take_effect_late():
    # 8 and 9 are never read: the write of 9 must come first (it completes at 3), the write of 8
    # may come after the read of 5, so that the cas expecting 5 does not apply
    assert_valid([w(1, 0, 1), w(8, 2, 20, client=1), w(9, 2, 3, client=2), w(5, 4, 5), r(5, 5.5, 6),
                  cas(5, 7, 7, 8, applied=False)])
    assert_invalid([w(1, 0, 1), w(8, 2, 3.2, client=1), w(9, 2, 3, client=2), w(5, 4, 5), r(5, 5.5, 6),
                    cas(5, 7, 7, 8, applied=False)])


def test_indeterminate_write_read_later_is_valid():
    assert_valid([w(1, 0, 1), w(2, 2, None, ok=None), r(2, 10, 11)])
    # it may take effect long after the client gave up
    assert_valid([w(1, 0, 1), w(2, 2, None, ok=None), r(1, 50, 51), r(2, 100, 101)])


def test_indeterminate_write_never_observed_is_valid():
    assert_valid([w(1, 0, 1), w(2, 2, None, ok=None), r(1, 10, 11), w(3, 12, 13), r(3, 14, 15)])


def test_indeterminate_write_cannot_act_before_it_started():
    assert_invalid([w(1, 0, 1), r(2, 2, 3), w(2, 4, None, ok=None)])


def test_indeterminate_write_takes_effect_once():
    # after 2 was seen and then 3 was written and read, 2 cannot reappear
    assert_invalid([
        w(1, 0, 1), w(2, 2, None, ok=None), r(2, 5, 6), w(3, 7, 8), r(3, 9, 10), r(2, 11, 12),
    ])
    # but an unobserved indeterminate write may surface at any time
    assert_valid([w(1, 0, 1), w(2, 2, None, ok=None), w(3, 7, 8), r(3, 9, 10), r(2, 11, 12)])


def test_indeterminate_read_is_ignored():
    assert_valid([w(1, 0, 1), r(99, 2, None, ok=None), r(1, 3, 4)])


def test_definitely_failed_write_whose_value_is_read_is_invalid():
    result = assert_invalid([w(1, 0, 1), w(2, 2, 3, ok=False), r(2, 4, 5)])
    assert "no write or cas that may have taken effect writes 2" in result.explanation
    # not observed: fine
    assert_valid([w(1, 0, 1), w(2, 2, 3, ok=False), r(1, 4, 5)])


def test_cas_applied_consistent():
    assert_valid([w(1, 0, 1), cas(1, 2, 2, 3, applied=True), r(2, 4, 5)])
    assert_valid([cas(None, 5, 0, 1, applied=True), r(5, 2, 3)])


def test_cas_not_applied_consistent():
    assert_valid([w(1, 0, 1), cas(3, 2, 2, 3, applied=False), r(1, 4, 5)])


def test_cas_applied_with_wrong_expected_value_is_invalid():
    assert_invalid([w(1, 0, 1), cas(3, 2, 2, 3, applied=True), r(2, 4, 5)])


def test_cas_not_applied_although_value_matched_is_invalid():
    assert_invalid([w(1, 0, 1), cas(1, 2, 2, 3, applied=False)])


def test_cas_not_applied_explained_by_concurrent_write():
    assert_valid([w(1, 0, 1), w(3, 2, 5), cas(1, 2, 3, 4, applied=False), r(3, 6, 7)])


def test_cas_result_must_show_in_later_reads():
    assert_invalid([w(1, 0, 1), cas(1, 2, 2, 3, applied=True), r(1, 4, 5)])


def test_indeterminate_cas():
    # it may have applied ...
    assert_valid([w(1, 0, 1), cas(1, 2, 2, None, ok=None), r(2, 10, 11)])
    # ... or not
    assert_valid([w(1, 0, 1), cas(1, 2, 2, None, ok=None), r(1, 10, 11)])
    # but when it applies it needs the expected value
    assert_invalid([w(1, 0, 1), w(3, 2, 3), cas(1, 2, 4, None, ok=None), r(2, 10, 11)])


def test_cas_two_concurrent_both_applied_same_expected_is_invalid():
    assert_invalid([w(1, 0, 1), cas(1, 2, 2, 5, applied=True), cas(1, 3, 2, 5, applied=True, client=3)])
    assert_valid([w(1, 0, 1), cas(1, 2, 2, 5, applied=True), cas(1, 3, 2, 5, applied=False, client=3)])


def test_keys_are_checked_independently():
    ops = [
        w(1, 0, 1, key="a"), r(1, 2, 3, key="a"),
        # on one register this read would be stale; on its own key it sees the initial null
        r(None, 4, 5, key="b"),
        w(1, 0, 1, key="c"), w(2, 2, 3, key="c"), r(1, 4, 5, key="c"),
    ]
    result = check(ops)
    assert result.ok is False
    assert result.key == "c"
    assert "key 'c'" in result.explanation and "'a'" not in result.explanation
    by_key = {k.key: k for k in result.keys}
    assert [by_key[k].ok for k in "abc"] == [True, True, False]
    assert [by_key[k].ops for k in "abc"] == [2, 1, 3]


def test_failure_explanation_names_first_violation():
    ops = [w(1, 0, 1), r(1, 2, 3), w(2, 4, 5), r(2, 6, 7), r(1, 8, 9), w(3, 10, 11), r(3, 12, 13)]
    result = assert_invalid(ops)
    lines = result.explanation.splitlines()
    assert "First violation: the operations completed by 9.000000" in lines[0]
    assert "#4 client 1: read -> 1 [8.000000, 9.000000]" in lines[1]
    assert "register value then 2" in lines[2]


def test_bad_input_is_rejected():
    for bad in [
        {"key": "k", "op": "write", "value": 1, "start": 0, "end": 1},  # no ok
        {"key": "k", "op": "delete", "value": 1, "start": 0, "end": 1, "ok": True},
        {"key": "k", "op": "write", "value": 1, "start": 2, "end": 1, "ok": True},
        {"key": "k", "op": "write", "value": 1, "start": 0, "end": None, "ok": True},
        {"key": "k", "op": "cas", "expected": 1, "value": 2, "start": 0, "end": 1, "ok": True},
        {"key": 1, "op": "read", "value": 1, "start": 0, "end": 1, "ok": True},
        {"key": "k", "op": "read", "value": [1], "start": 0, "end": 1, "ok": True},
        {"key": "k", "op": "read", "value": 1, "start": 0, "end": 1, "ok": 1},
    ]:
        with pytest.raises(lincheck.HistoryError):
            lincheck.check_history([bad])


def test_time_budget_exhausted_is_unknown():
    # 16 fully concurrent writes read in turn, then a read of a value none of them wrote: the
    # search has to try the writes' orders (about 5 s for 14 writes without a budget).
    ops = [w(v, 0, 100, client=v) for v in range(16)]
    ops += [r(v % 16, 1 + 2 * i, 2 + 2 * i, client=20) for i, v in enumerate(range(40))]
    ops += [r(99, 90, 91, client=21)]
    t0 = time.monotonic()
    result = lincheck.check_history(ops, timeout_s=0.3)
    assert time.monotonic() - t0 < 2.0
    assert result.ok is None
    assert result.key == "k"
    assert "time budget" in result.explanation
    assert lincheck.check_history([w(1, 0, 1)], timeout_s=0).ok is None


# ---------------------------------------------------------------- random histories

def simulate(rng: random.Random, n_ops: int, *, clients: int = 5, key: str = "k", p_read: float = 0.5,
             p_cas: float = 0.15, p_indeterminate: float = 0.0, p_failed: float = 0.0) -> list[dict]:
    """A history of a real register: every client runs its operations one after another, each
    takes effect at a random instant inside its interval, and results come from applying the
    operations in the order of those instants. Written values are unique. An indeterminate
    write or cas took effect or not (half each); a failed one did not."""
    t = [rng.uniform(0, 1) for _ in range(clients)]
    planned = []
    for n in range(n_ops):
        c = n % clients
        start = t[c] + rng.uniform(0, 0.5)
        end = start + rng.uniform(0.2, 3.0)
        t[c] = end
        roll = rng.random()
        op = "read" if roll < p_read else "cas" if roll < p_read + p_cas else "write"
        planned.append((rng.uniform(start, end), c, op, start, end))
    planned.sort()
    state, next_value, history, written = None, 1, [], [None]
    for at, c, op, start, end in planned:
        fate = rng.random()
        ok = False if fate < p_failed else None if fate < p_failed + p_indeterminate else True
        rec = {"client": c, "key": key, "op": op, "start": start, "end": end if ok is not None else None,
               "ok": ok}
        if op == "read":
            rec["value"] = state
        else:
            value, next_value = next_value, next_value + 1
            rec["value"] = value
            takes_effect = ok is True or (ok is None and rng.random() < 0.5)
            if op == "cas":
                rec["expected"] = state if rng.random() < 0.6 else rng.choice(written)
                applied = rec["expected"] == state
                if ok:
                    rec["applied"] = applied
                takes_effect = takes_effect and applied
            if takes_effect:
                state = value
            written.append(value)
        history.append(rec)
    history.sort(key=lambda o: o["start"])
    return history


def make_stale(history: list[dict]) -> tuple[int, list[dict]]:
    """Copy of a history where one late read returns the first written value although a later
    write completed (strictly) between that first write and the read."""
    ops = [dict(o) for o in history]
    writes = [o for o in ops if o["op"] == "write" and o["ok"] is True]
    first = writes[0]
    second = next(o for o in writes if o["start"] > first["end"])
    candidates = [i for i, o in enumerate(ops) if o["op"] == "read" and o["ok"] is True
                  and o["start"] > second["end"] and o["value"] != first["value"]]
    i = candidates[len(candidates) // 2]
    ops[i]["value"] = first["value"]
    return i, ops


def test_random_history_from_real_execution_is_valid():
    rng = random.Random(7)
    history = simulate(rng, 3000, clients=8, p_indeterminate=0.05, p_failed=0.02)
    t0 = time.monotonic()
    result = lincheck.check_history(history, timeout_s=30)
    elapsed = time.monotonic() - t0
    assert result.ok is True, result.explanation
    report = result.keys[0]
    assert report.max_concurrency >= 6 and report.indeterminate > 50
    assert elapsed < 5, elapsed


def test_random_history_with_one_stale_read_is_invalid():
    rng = random.Random(7)
    history = simulate(rng, 3000, clients=8, p_indeterminate=0.05, p_failed=0.02)
    i, corrupted = make_stale(history)
    t0 = time.monotonic()
    result = lincheck.check_history(corrupted, timeout_s=30)
    elapsed = time.monotonic() - t0
    assert result.ok is False
    assert result.key == "k"
    lines = result.explanation.splitlines()
    assert "First violation" in lines[0]
    assert lines[1].strip().startswith(f"#{i} "), result.explanation  # the corrupted read
    assert elapsed < 5, elapsed


def test_random_histories_on_several_keys():
    rng = random.Random(11)
    history = []
    for key in ("x", "y", "z"):
        history += simulate(rng, 300, clients=4, key=key, p_indeterminate=0.05)
    history.sort(key=lambda o: o["start"])
    assert check(history).ok is True
    _, bad_y = make_stale([o for o in history if o["key"] == "y"])
    result = check([o for o in history if o["key"] != "y"] + bad_y)
    assert result.ok is False and result.key == "y"


def brute_force(history: list[dict]) -> bool:
    """Linearizable iff some order of the operations respects real time and register semantics;
    an indeterminate write or cas may be left out (it takes effect after everything else)."""
    ops = [o for o in history if o["ok"] is True or (o["ok"] is None and o["op"] != "read")]
    for order in itertools.permutations(range(len(ops))):
        pos = {j: n for n, j in enumerate(order)}
        if any(ops[a]["ok"] and ops[a]["end"] < ops[b]["start"] and pos[a] > pos[b]
               for a in range(len(ops)) for b in range(len(ops))):
            continue
        state, legal = None, True
        for j in order:
            o = ops[j]
            if o["op"] == "read":
                legal = state == o["value"]
            elif o["op"] == "write":
                state = o["value"]
            else:
                applies = state == o["expected"]
                if o["ok"] and o["applied"] != applies:
                    legal = False
                elif applies:
                    state = o["value"]
            if not legal:
                break
        if legal:
            return True
    return False


def random_small_history(rng: random.Random) -> list[dict]:
    """Up to 6 operations with random intervals on a small time grid (so some touch) and random
    results drawn from few values: valid and invalid histories in roughly equal numbers."""
    ops = []
    for n in range(rng.randint(1, 6)):
        start = rng.randint(0, 8)
        end = start + rng.randint(0, 4)
        kind = rng.choice(["read", "read", "write", "cas", "cas"])
        ok = rng.choice([True, True, None, None, False])
        value = rng.choice([None, 1, 2, 3]) if kind == "read" else rng.choice([1, 2, 3])
        op = {"client": n, "key": "k", "op": kind, "value": value, "start": start,
              "end": end if ok is not None else None, "ok": ok}
        if kind == "cas":
            op["expected"] = rng.choice([None, 1, 2])
            if ok:
                op["applied"] = rng.random() < 0.5
        ops.append(op)
    return ops


def test_small_random_histories_agree_with_brute_force():
    rng = random.Random(3)
    verdicts = {True: 0, False: 0}
    for _ in range(600):
        history = random_small_history(rng)
        expected = brute_force(history)
        for simplify in (True, False):
            assert lincheck.check_history(history, simplify=simplify).ok is expected, (simplify, history)
        verdicts[expected] += 1
    assert min(verdicts.values()) > 100, verdicts


def test_rewrites_and_reductions_keep_verdicts_on_random_histories():
    """The default check against the plain WGL search (simplify=False) on histories of a few
    dozen operations: real executions, some with values folded onto a few (so that values
    repeat), some with a read or a cas result changed or an operation made indeterminate."""
    rng = random.Random(5)
    verdicts = {True: 0, False: 0}
    for n in range(100):
        history = simulate(rng, 40, clients=rng.randint(3, 6), p_indeterminate=rng.choice([0.1, 0.25]),
                           p_failed=0.05, p_cas=rng.choice([0.1, 0.3]))
        if n % 3 == 0:
            for o in history:
                for f in ("value", "expected"):
                    if o.get(f) is not None:
                        o[f] %= 3
        if n % 2:
            o = rng.choice([o for o in history if o["ok"]])
            if o["op"] == "read":
                o["value"] = rng.choice([None, 1, 2, 3, 1000])
            elif o["op"] == "cas":
                o["applied"] = not o["applied"]
            else:
                o["ok"], o["end"] = None, None
        expected = lincheck.check_history(history, simplify=False).ok
        assert lincheck.check_history(history).ok is expected, history
        verdicts[expected] += 1
    assert min(verdicts.values()) > 20, verdicts


# ---------------------------------------------------------------- CLI

def run_cli(tmp_path: Path, ops: list[dict] | str, *args: str) -> subprocess.CompletedProcess:
    path = tmp_path / "history.jsonl"
    path.write_text(ops if isinstance(ops, str) else "".join(json.dumps(o) + "\n" for o in ops))
    return subprocess.run([sys.executable, str(LINCHECK), str(path), *args], capture_output=True, text=True)


def test_cli_exit_codes(tmp_path):
    valid = [w(1, 0, 1), r(1, 2, 3), w(2, 4, 5, key="other"), r(2, 6, 7, key="other")]
    done = run_cli(tmp_path, valid)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "key 'k': 2 ops" in done.stdout and "key 'other': 2 ops" in done.stdout
    assert "result: linearizable" in done.stdout

    done = run_cli(tmp_path, valid + [r(1, 8, 9, key="other")])
    assert done.returncode == 1, done.stdout + done.stderr
    assert "result: NOT linearizable" in done.stdout
    assert "key 'other' is not linearizable" in done.stdout
    assert "line 5" in done.stdout  # operations are named by their line in the file

    done = run_cli(tmp_path, valid, "--timeout", "0")
    assert done.returncode == 2
    assert "result: UNKNOWN" in done.stdout

    done = run_cli(tmp_path, json.dumps(valid[0]) + "\n{not json\n")
    assert done.returncode == 2
    assert "line 2" in done.stderr

    done = run_cli(tmp_path, [{"key": "k", "op": "read", "start": 0, "end": 1, "ok": True}])
    assert done.returncode == 2
    assert "bad input" in done.stderr
