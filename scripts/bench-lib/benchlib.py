#!/usr/bin/env python3
"""Helpers for scripts/bench: /proc sampling, per-run records and the final report.

Subcommands (standard library only):
  freeport                      print a free TCP port on 127.0.0.1
  cpu-ticks PID                 utime+stime of PID in clock ticks (/proc/PID/stat)
  machine-ticks                 steal and total CPU ticks of the machine (/proc/stat)
  hwm-kb PID                    peak RSS (VmHWM) of PID in KiB (/proc/PID/status)
  reset-hwm PID                 reset PID's VmHWM to its current RSS (/proc/PID/clear_refs = 5)
  settle PID                    wait until PID is idle (background flushes and compactions done),
                                print the seconds waited
  record --runs FILE ...        turn one latte JSON report plus server samples into a JSON line
  summarize --runs FILE ...     print the per-workload tables and the BENCH lines
"""

import argparse
import json
import math
import os
import socket
import sys
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")
PERCENTILES = {"p50": 50.0, "p99": 99.0, "p999": 99.9}

# Targets of issue 6, printed beside the ratios: reported, never asserted.
RATIO_TARGETS = {"write": 0.6, "read": 0.7, "mixed": 0.6, "slice": 0.5, "partition": 0.5}
# partition: server CPU per returned row (issue #48)
CPU_PER_ROW_TARGET_US = 1.0
# write-half-rate: ringdb's p99 over the ceiling's at the same rate (issue #48)
HALF_RATE_P99_TARGET_X = 1.2
SCAN_TARGET_ROWS_PER_S = 500_000
BULK_RSS_TARGET_MB = 1024
DISK_TARGET_X_RAW = 1.5
# Runs whose machine lost at least this share of its CPU time to steal get a note in the summary.
STEAL_NOTE_PCT = 2.0


def freeport():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        print(s.getsockname()[1])


def ticks(pid):
    """utime + stime of `pid` in clock ticks."""
    with open(f"/proc/{pid}/stat") as f:
        stat = f.read()
    # the command name may contain spaces and parentheses: split after the last ')'
    fields = stat[stat.rindex(")") + 2 :].split()
    return int(fields[11]) + int(fields[12])  # fields 14 and 15 of proc(5)


def cpu_ticks(pid):
    print(ticks(pid))


def steal_and_total():
    """The machine's steal ticks and all its CPU ticks so far (the `cpu` line of /proc/stat):
    steal is time a vCPU had work but the hypervisor ran another guest."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal guest guest_nice; guest time is already
    # counted in user and nice
    steal = fields[7] if len(fields) > 7 else 0
    return steal, sum(fields[:8])


def machine_ticks():
    print(*steal_and_total())


def peak_rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def hwm_kb(pid):
    print(peak_rss_kb(pid))


# A server counts as settled once it used less than SETTLE_BUSY of a core over the last
# SETTLE_QUIET_S seconds (longer than ringdb's idle-compaction delay, so a compaction about to
# start is not missed); the bench waits at most SETTLE_MAX_S.
SETTLE_QUIET_S = 2.5
SETTLE_BUSY = 0.03
SETTLE_MAX_S = 120.0
SETTLE_POLL_S = 0.25


def wait_settled(pids):
    """Waits until every process of `pids` is idle (or gone); returns the seconds waited."""
    start = time.monotonic()
    history = {}  # pid -> [(time, ticks)] over the last SETTLE_QUIET_S
    for pid in pids:
        try:
            history[pid] = [(start, ticks(pid))]
        except OSError:
            pass  # the server is gone: the measured run reports it
    while history:
        time.sleep(SETTLE_POLL_S)
        now = time.monotonic()
        busy_pids = 0
        for pid in list(history):
            samples = history[pid]
            try:
                samples.append((now, ticks(pid)))
            except OSError:
                del history[pid]  # the server is gone: the measured run reports it
                continue
            while len(samples) > 1 and now - samples[1][0] >= SETTLE_QUIET_S:
                samples.pop(0)
            span = now - samples[0][0]
            busy = (samples[-1][1] - samples[0][1]) / CLK_TCK
            if span < SETTLE_QUIET_S or busy >= SETTLE_BUSY * span:
                busy_pids += 1
        if busy_pids == 0:
            break
        if now - start >= SETTLE_MAX_S:
            print(f"bench: server {' '.join(map(str, pids))} still busy after {SETTLE_MAX_S:.0f} s; "
                  "measuring anyway", file=sys.stderr)
            break
    return time.monotonic() - start


def settle(pid):
    print(f"{wait_settled([pid]):.1f}")


def reset_hwm(pid):
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
    except OSError as e:
        print(f"bench: cannot reset the peak RSS of {pid} ({e}); RSS is the lifetime peak", file=sys.stderr)
        sys.exit(1)


def rate(report, factor):
    with open(report) as f:
        res = json.load(f)["result"]
    ops = mean_value(res["cycle_throughput"])
    if not ops:
        sys.exit(1)
    print(f"{ops * factor:.0f}")


def mean_value(m):
    if isinstance(m, dict):
        return m.get("value")
    return m


def make_record(a):
    """One run's record (a dict) from its latte JSON report and the server samples in `a`."""
    rec = {
        "workload": a.workload,
        "server": a.server,
        "round": a.round,
        "status": a.status,
        "error": a.error,
        "load_s": a.load_seconds,
        "settle_s": a.settle_seconds,
        "stop_s": a.stop_seconds,
        "rss_mb": a.hwm_kb / 1024.0 if a.hwm_kb else None,
        "disk_bytes": a.disk_bytes or None,
        "journal_bytes": a.journal_bytes if a.disk_bytes else None,
        "raw_row_bytes": a.raw_row_bytes,
        "report": a.report,
    }
    rep = None
    if os.path.exists(a.report):
        try:
            with open(a.report) as f:
                rep = json.load(f)
        except (OSError, ValueError) as e:
            rec["status"] = "failed"
            rec["error"] = (rec["error"] + "; " if rec["error"] else "") + f"unreadable latte report: {e}"
    elif rec["status"] == "ok":
        rec["status"] = "failed"
        rec["error"] = "latte wrote no report"
    if rep is not None:
        res = rep["result"]
        pcts = rep["percentiles"]
        lat = res.get("request_latency") or res["cycle_latency"]
        for name, p in PERCENTILES.items():
            rec[name + "_ms"] = mean_value(lat["percentiles"][pcts.index(p)])
        rec["mean_ms"] = mean_value(lat["mean"])
        cycles = res["cycle_count"]
        rows = res["row_count"]
        rec["cycles"] = cycles
        rec["requests"] = res["request_count"]
        rec["rows"] = rows
        rec["errors"] = res["error_count"]
        rec["elapsed_s"] = res["elapsed_time_s"]
        rec["client_cpu_util"] = res["cpu_util"]
        rec["cycles_per_s"] = mean_value(res["cycle_throughput"])
        rec["rows_per_s"] = mean_value(res["row_throughput"])
        if res["error_count"] and rec["status"] == "ok":
            rec["status"] = "failed"
            rec["error"] = "; ".join(res.get("errors", [])[:3])
        scan = a.workload == "scan"
        # The unit of work: a statement, except for the scan where it is a row.
        rec["unit"] = "rows" if scan else "ops"
        rec["ops_per_s"] = rec["rows_per_s"] if scan else rec["cycles_per_s"]
        # Server CPU is sampled around `latte run`, which includes its warmup cycles.
        if scan:
            per_cycle_rows = rows / cycles if cycles else 0
            work = rows + a.warmup_cycles * per_cycle_rows
        else:
            work = (cycles + a.warmup_cycles) * res["requests_per_cycle"]
        ticks = a.cpu_ticks[1] - a.cpu_ticks[0]
        steal0, total0, steal1, total1 = a.machine_ticks
        rec["steal_pct"] = 100.0 * (steal1 - steal0) / (total1 - total0) if total1 > total0 else None
        rec["server_cpu_s"] = ticks / CLK_TCK
        rec["cpu_us_per_op"] = ticks / CLK_TCK * 1e6 / work if work else None
        # Distinct rows the table holds when the server stops.
        if a.workload == "partition":
            rec["table_rows"] = None  # its write phase added rows no run counted
        elif a.workload in ("write", "bulk") or a.rows_loaded == 0:
            rec["table_rows"] = max(cycles, a.warmup_cycles)
        else:
            rec["table_rows"] = a.rows_loaded
        if rec["disk_bytes"] and rec["table_rows"]:
            rec["disk_bytes_per_row"] = rec["disk_bytes"] / rec["table_rows"]
    return rec


def record(a):
    rec = make_record(a)
    with open(a.runs, "a") as f:
        f.write(json.dumps(rec) + "\n")


# ---------------------------------------------------------------- summary


def avg(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def fmt(x, digits=3):
    if x is None:
        return "-"
    if isinstance(x, float) and math.isnan(x):
        return "-"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 100:
        return f"{x:.1f}"
    return f"{x:.{digits}f}"


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return (xs[n // 2] + xs[(n - 1) // 2]) / 2 if xs else None


def ratio(b, a):
    if a is None or b is None or a == 0:
        return None
    return b / a


def kv(x, digits=4):
    if x is None:
        return "-"
    return f"{x:.{digits}f}".rstrip("0").rstrip(".") if isinstance(x, float) else str(x)


def aggregate(runs):
    ok = [r for r in runs if r["status"] == "ok"]
    if not ok:
        return None
    agg = {"runs": len(ok), "unit": ok[0].get("unit", "ops")}
    for key in ("ops_per_s", "p50_ms", "p99_ms", "p999_ms", "mean_ms", "cpu_us_per_op", "disk_bytes_per_row",
                "load_s", "settle_s", "stop_s", "client_cpu_util", "table_rows", "disk_bytes", "journal_bytes",
                "steal_pct"):
        agg[key] = avg(r.get(key) for r in ok)
    agg["rss_mb"] = max((r["rss_mb"] for r in ok if r.get("rss_mb")), default=None)
    agg["per_round"] = [(r["round"], r.get("ops_per_s")) for r in ok]
    return agg


def rows_per_read(workload, settings):
    """Rows each read of `workload` returns (for CPU per row), or None."""
    if workload in ("partition", "update-partition"):
        return settings.get("small_partition_rows", 10)
    if workload == "slice":
        return settings.get("slice_rows", 10)
    return None


def summarize(a):
    runs = [json.loads(line) for line in open(a.runs) if line.strip()]
    settings = json.load(open(a.settings)) if a.settings else {}
    order = []
    for r in runs:
        if r["workload"] not in order:
            order.append(r["workload"])
    out = []
    bench_lines = []
    overview = []
    raw = settings.get("raw_row_bytes")
    # The A side: the protocol ceiling, or another ringdb build (--baseline: an A/B of two builds,
    # where the targets, ratios to the ceiling, do not apply).
    a_name = settings.get("a_side", "nullserver")
    ab = a_name != "nullserver"
    a_label = "baseline" if ab else "ceiling"
    against = f"the baseline build {settings.get('baseline_bin', '?')}" if ab else "the protocol ceiling (nullserver)"
    out.append(
        f"ringdb vs {against}, {settings.get('mode', '?')} mode, "
        f"latte {settings.get('latte', '?')}: {settings.get('threads')} thread, {settings.get('concurrency')} in flight "
        f"(scan {settings.get('scan_concurrency')}), {settings.get('connections')} connections, prepared statements, "
        f"runs of {settings.get('duration')}, {settings.get('nproc')} CPUs, git {settings.get('git')}"
    )
    for w in order:
        a_runs = [r for r in runs if r["workload"] == w and r["server"] == a_name]
        ring_runs = [r for r in runs if r["workload"] == w and r["server"] == "ringdb"]
        c, g = aggregate(a_runs), aggregate(ring_runs)
        unit = (c or g or {"unit": "ops"})["unit"]
        out.append("")
        if a_runs and w.endswith("-half-rate"):
            out.append(f"== {w}  (ringdb after its `{w.split('-')[0]}` run on the same server; then the {a_label}, "
                       f"loaded the same way, at the same rate)")
        elif a_runs:
            out.append(f"== {w}  ({len(a_runs)} {a_label} + {len(ring_runs)} ringdb runs, alternating)")
        else:
            out.append(f"== {w}  ({len(ring_runs)} ringdb run{'s' if len(ring_runs) > 1 else ''}, after ringdb's `{w.split('-')[0]}` run "
                       f"on the same server)")
        for r in a_runs + ring_runs:
            if r["status"] != "ok":
                out.append(f"   FAILED {r['server']} round {r['round']}: {r['error']}")
        rows = [
            (f"{unit}/s", "ops_per_s", fmt),
            ("p50 ms", "p50_ms", fmt),
            ("p99 ms", "p99_ms", fmt),
            ("p99.9 ms", "p999_ms", fmt),
            (f"server CPU us/{unit[:-1]}", "cpu_us_per_op", fmt),
            ("server peak RSS MB", "rss_mb", fmt),
            ("machine CPU steal %", "steal_pct", fmt),
        ]
        out.append(f"   {'metric':<22}{a_label:>14}{'ringdb':>14}{'ringdb/' + a_label:>16}")
        for label, key, f in rows:
            cv = c.get(key) if c else None
            gv = g.get(key) if g else None
            out.append(f"   {label:<22}{f(cv):>14}{f(gv):>14}{fmt(ratio(gv, cv)):>16}")
        per_read = rows_per_read(w, settings)
        if per_read:
            cv = c.get("cpu_us_per_op") if c else None
            gv = g.get("cpu_us_per_op") if g else None
            cr = cv / per_read if cv is not None else None
            gr = gv / per_read if gv is not None else None
            out.append(f"   {'server CPU us/row':<22}{fmt(cr):>14}{fmt(gr):>14}{fmt(ratio(gr, cr)):>16}  ({per_read} rows a read)")
        if g and g.get("disk_bytes_per_row"):
            x = g["disk_bytes_per_row"] / raw if raw else None
            mib = (g.get("disk_bytes") or 0) / 1048576
            jmib = (g.get("journal_bytes") or 0) / 1048576
            cd = c.get("disk_bytes_per_row") if c else None
            out.append(f"   {'disk bytes/row':<22}{fmt(cd):>14}{fmt(g['disk_bytes_per_row']):>14}{fmt(x):>16}  (x raw {raw} B)")
            out.append(
                f"   on disk after SIGTERM: {fmt(mib)} MiB for {fmt(g.get('table_rows'))} rows "
                f"(journal {fmt(jmib)} MiB, tables and the rest {fmt(mib - jmib)} MiB)"
            )
        if c and g and g.get("load_s"):
            out.append(
                f"   load phase: {a_label} {fmt(c.get('load_s') if c else None)} s, ringdb {fmt(g.get('load_s'))} s; "
                f"ringdb shutdown (flush) {fmt(g.get('stop_s'))} s"
            )
        elif g and g.get("disk_bytes"):
            out.append(f"   ringdb shutdown (flush) {fmt(g.get('stop_s'))} s")
        if g and g.get("settle_s") is not None:
            out.append(
                f"   idle wait before the measured run (background flushes and compactions): "
                f"{a_label} {fmt(c.get('settle_s') if c else None)} s, ringdb {fmt(g.get('settle_s'))} s"
            )
        if c and g:
            pr, ratios = [], []
            for (rnd, gv) in g["per_round"]:
                cv = next((v for (rr, v) in c["per_round"] if rr == rnd), None)
                x = ratio(gv, cv)
                pr.append(f"round {rnd}: {fmt(cv)} vs {fmt(gv)} ({fmt(x)})")
                if x is not None:
                    ratios.append(x)
            line = f"   per round ({a_label} vs ringdb {unit}/s): " + "; ".join(pr)
            if len(ratios) >= 3:
                # the median of the rounds' own ratios: one slow stretch of the machine moves
                # it less than the ratio of the averages
                line += f"; median of the round ratios {fmt(median(ratios))}"
            out.append(line)
        for name, agg, rs in ((a_name, c, a_runs), ("ringdb", g, ring_runs)):
            if not rs:
                continue
            if agg is None:
                bench_lines.append(f"BENCH workload={w} server={name} status=failed")
                continue
            rt = ratio(agg["ops_per_s"], c["ops_per_s"]) if (c and name == "ringdb") else (1.0 if name == a_name else None)
            line = (
                f"BENCH workload={w} server={name} unit={agg['unit']} ops_per_s={kv(agg['ops_per_s'], 1)} "
                f"p50_ms={kv(agg['p50_ms'])} p99_ms={kv(agg['p99_ms'])} p999_ms={kv(agg['p999_ms'])} "
                f"cpu_us_per_op={kv(agg['cpu_us_per_op'], 3)} rss_mb={kv(agg['rss_mb'], 1)} ratio={kv(rt, 3)} "
                f"steal_pct={kv(agg.get('steal_pct'), 2)}"
            )
            if name == "ringdb":
                line += f" disk_bytes_per_row={kv(agg.get('disk_bytes_per_row'), 1)}"
            line += f" runs={agg['runs']}"
            bench_lines.append(line)
        overview.append((w, unit, c, g))

    # Overview with the targets (informational).
    out.append("")
    if ab:
        out.append("== summary (ratios are ringdb/baseline; the issue's targets are ratios to the ceiling: not evaluated)")
    else:
        out.append("== summary (ratios are ringdb/ceiling; targets are reported, never asserted)")
    out.append(
        f"   {'workload':<22}{a_label + '/s':>12}{'ringdb/s':>12}{'ratio':>8}{'p50 x':>8}{'p99 x':>8}"
        f"{'cpu x':>8}{'ringdb RSS MB':>15}{'disk B/row':>12}{'steal %':>9}   target"
    )
    stolen = []
    for w, unit, c, g in overview:
        cv = c["ops_per_s"] if c else None
        gv = g["ops_per_s"] if g else None
        r = ratio(gv, cv)
        target = ""
        if ab:
            pass
        elif w in RATIO_TARGETS:
            t = RATIO_TARGETS[w]
            target = f">= {t}x: " + ("met" if r is not None and r >= t else "not met")
            if w == "partition":
                per_row = g["cpu_us_per_op"] / rows_per_read(w, settings) if g and g.get("cpu_us_per_op") is not None else None
                ok = per_row is not None and per_row <= CPU_PER_ROW_TARGET_US
                target += (f"; server CPU/row <= {CPU_PER_ROW_TARGET_US:g} us: {'met' if ok else 'not met'}"
                           f" ({fmt(per_row)} us)")
        elif w == "scan":
            target = f">= {SCAN_TARGET_ROWS_PER_S:,} rows/s: " + ("met" if gv and gv >= SCAN_TARGET_ROWS_PER_S else "not met")
        elif w.endswith("-half-rate") and g:
            target = f"p99 <= 1 ms at half of ringdb's peak: " + ("met" if g["p99_ms"] is not None and g["p99_ms"] <= 1.0 else "not met")
            if c and c.get("p99_ms") is not None:
                target += f" (the ceiling's p99 at that rate: {fmt(c['p99_ms'])} ms)"
                if w == "write-half-rate":
                    x = ratio(g["p99_ms"], c["p99_ms"])
                    ok = x is not None and x <= HALF_RATE_P99_TARGET_X
                    target += (f"; p99 <= {HALF_RATE_P99_TARGET_X:g}x the ceiling's: "
                               f"{'met' if ok else 'not met'} ({fmt(x)}x)")
        elif w in ("bulk-read", "bulk-read-fixed-rate") and g:
            fixed = w.endswith("-fixed-rate")
            small = next((gg for (ww, _, _, gg) in overview if ww == w.replace("bulk-", "", 1) and gg), None)
            if small and small.get("p50_ms") and g.get("p50_ms"):
                x = g["p50_ms"] / small["p50_ms"]
                at = f"at {settings.get('latency_rate', 0):,}/s, " if fixed else ""
                target = (f"p50 {at}{settings.get('bulk_rows', 0):,} rows / {settings.get('read_rows', 0):,} rows "
                          f"= {x:.2f} (<= 1.3: {'met' if x <= 1.3 else 'not met'})")
        elif w == "bulk" and g:
            rss_ok = g.get("rss_mb") is not None and g["rss_mb"] <= BULK_RSS_TARGET_MB
            d = g.get("disk_bytes_per_row")
            disk_ok = d is not None and raw and d <= DISK_TARGET_X_RAW * raw
            target = (f"RSS <= 1 GiB: {'met' if rss_ok else 'not met'}; "
                      f"disk <= {DISK_TARGET_X_RAW}x raw: {'met' if disk_ok else 'not met'}")
        # the larger of the two sides' steal: either one can skew the ratio
        steal = max((x["steal_pct"] for x in (c, g) if x and x.get("steal_pct") is not None), default=None)
        if steal is not None and steal >= STEAL_NOTE_PCT:
            stolen.append(w)
        out.append(
            f"   {w + ('' if unit == 'ops' else ' (rows/s)'):<22}{fmt(cv):>12}{fmt(gv):>12}{fmt(r):>8}"
            f"{fmt(ratio(g and g['p50_ms'], c and c['p50_ms'])):>8}{fmt(ratio(g and g['p99_ms'], c and c['p99_ms'])):>8}"
            f"{fmt(ratio(g and g['cpu_us_per_op'], c and c['cpu_us_per_op'])):>8}"
            f"{fmt(g and g['rss_mb']):>15}{fmt(g and g.get('disk_bytes_per_row')):>12}{fmt(steal, 1):>9}   {target}".rstrip()
        )
    if stolen:
        out.append(
            f"   steal >= {STEAL_NOTE_PCT}% in {', '.join(stolen)}: the host gave this machine's CPUs to other "
            f"guests during those runs, so their latencies and ratios are partly the host's; compare with a "
            f"quieter run"
        )
    out.append("")
    out.extend(bench_lines)
    print("\n".join(out))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("freeport")
    sub.add_parser("machine-ticks")
    for name in ("cpu-ticks", "hwm-kb", "reset-hwm", "settle"):
        sp = sub.add_parser(name)
        sp.add_argument("pid", type=int)
    r = sub.add_parser("record")
    r.add_argument("--runs", required=True)
    r.add_argument("--workload", required=True)
    r.add_argument("--server", required=True)
    r.add_argument("--round", type=int, required=True)
    r.add_argument("--status", default="ok")
    r.add_argument("--error", default="")
    r.add_argument("--report", required=True)
    r.add_argument("--cpu-ticks", type=int, nargs=2, default=[0, 0])
    r.add_argument("--machine-ticks", type=int, nargs=4, default=[0, 0, 0, 0])
    r.add_argument("--warmup-cycles", type=int, default=0)
    r.add_argument("--hwm-kb", type=int, default=0)
    r.add_argument("--disk-bytes", type=int, default=0)
    r.add_argument("--journal-bytes", type=int, default=0)
    r.add_argument("--load-seconds", type=float, default=0.0)
    r.add_argument("--settle-seconds", type=float, default=0.0)
    r.add_argument("--stop-seconds", type=float, default=0.0)
    r.add_argument("--rows-loaded", type=int, default=0)
    r.add_argument("--raw-row-bytes", type=int, default=0)
    rt = sub.add_parser("rate")
    rt.add_argument("report")
    rt.add_argument("factor", type=float)
    s = sub.add_parser("summarize")
    s.add_argument("--runs", required=True)
    s.add_argument("--settings")
    a = p.parse_args()
    if a.cmd == "freeport":
        freeport()
    elif a.cmd == "machine-ticks":
        machine_ticks()
    elif a.cmd == "cpu-ticks":
        cpu_ticks(a.pid)
    elif a.cmd == "hwm-kb":
        hwm_kb(a.pid)
    elif a.cmd == "reset-hwm":
        reset_hwm(a.pid)
    elif a.cmd == "settle":
        settle(a.pid)
    elif a.cmd == "rate":
        rate(a.report, a.factor)
    elif a.cmd == "record":
        record(a)
    elif a.cmd == "summarize":
        summarize(a)


if __name__ == "__main__":
    main()
