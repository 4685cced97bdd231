"""The benchmark's report (scripts/bench-lib/benchlib.py summarize) from recorded runs.

No server: these feed `summarize` run records as `benchlib.py record` writes them and check
the ratios it prints, against the ceiling (the default) and against a baseline build
(`scripts/bench --baseline BIN`, an A/B of two builds).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCHLIB = Path(__file__).resolve().parents[2] / "scripts" / "bench-lib" / "benchlib.py"


def run(server: str, rnd: int, ops: float, workload: str = "write") -> dict:
    return {
        "workload": workload, "server": server, "round": rnd, "status": "ok", "error": "",
        "unit": "ops", "ops_per_s": ops, "p50_ms": 1.0, "p99_ms": 2.0, "p999_ms": 3.0,
        "mean_ms": 1.0, "cpu_us_per_op": 10.0, "rss_mb": 100.0,
    }


def alternating(a_side: str, rounds: list[tuple[float, float]]) -> list[dict]:
    """Write runs as the bench records them: per round the A side's ops/s, then ringdb's."""
    return [r for i, (a, b) in enumerate(rounds, 1) for r in (run(a_side, i, a), run("ringdb", i, b))]


def summarize(tmp_path: Path, runs: list[dict], settings: dict) -> str:
    runs_file = tmp_path / "runs.jsonl"
    runs_file.write_text("".join(json.dumps(r) + "\n" for r in runs))
    settings_file = tmp_path / "settings.json"
    settings_file.write_text(json.dumps({"mode": "full", "raw_row_bytes": 112, **settings}))
    done = subprocess.run(
        [sys.executable, str(BENCHLIB), "summarize", "--runs", str(runs_file), "--settings", str(settings_file)],
        capture_output=True, text=True, check=True,
    )
    return done.stdout


def line_with(out: str, prefix: str) -> str:
    lines = [l for l in out.splitlines() if l.strip().startswith(prefix)]
    assert len(lines) == 1, (prefix, out)
    return lines[0]


def bench_ratio(out: str, server: str) -> str:
    """The ratio field of a machine-readable BENCH line."""
    return line_with(out, f"BENCH workload=write server={server} ").split(" ratio=")[1].split()[0]


def test_ratios_against_the_ceiling_with_the_issue_targets(tmp_path):
    out = summarize(tmp_path, alternating("nullserver", [(100_000, 50_000), (200_000, 60_000)]), {})
    assert "ringdb vs the protocol ceiling (nullserver)" in out
    # averages 150 k and 55 k: 0.367, below the 0.6 target
    assert line_with(out, "write ").split() == [
        "write", "150,000", "55,000", "0.367", "1.000", "1.000", "1.000", "100.0", "-", "-",
        ">=", "0.6x:", "not", "met",
    ]
    assert "steal >=" not in out  # records without steal samples get no note
    assert line_with(out, "per round (ceiling vs ringdb ops/s)").endswith(
        "round 1: 100,000 vs 50,000 (0.500); round 2: 200,000 vs 60,000 (0.300)"
    )  # no median below three rounds
    assert (bench_ratio(out, "nullserver"), bench_ratio(out, "ringdb")) == ("1", "0.367")


def half_rate(server: str, p99_ms: float) -> dict:
    return {**run(server, 1, 50_000, "write-half-rate"), "p99_ms": p99_ms}


def test_half_rate_writes_are_held_to_the_ceilings_p99_at_that_rate(tmp_path):
    # #48: ringdb's p99 within 1.2x the ceiling's at the same rate
    for ringdb_p99, verdict in ((1.1, "met (1.100x)"), (1.3, "not met (1.300x)")):
        runs = [half_rate("nullserver", 1.0), half_rate("ringdb", ringdb_p99)]
        target = line_with(summarize(tmp_path, runs, {}), "write-half-rate ").split("   ")[-1]
        assert target.endswith(f"p99 <= 1.2x the ceiling's: {verdict}"), target
        assert target.startswith("p99 <= 1 ms at half of ringdb's peak: not met"), target


def test_ab_of_two_builds_reports_ratios_to_the_baseline_and_their_median(tmp_path):
    rounds = [(100_000, 110_000), (100_000, 90_000), (200_000, 320_000)]
    settings = {"a_side": "baseline", "baseline_bin": "/tmp/ringdb-old"}
    out = summarize(tmp_path, alternating("baseline", rounds), settings)
    assert "ringdb vs the baseline build /tmp/ringdb-old" in out
    assert "nullserver" not in out and "ceiling/s" not in out and "ceiling vs" not in out
    assert "3 baseline + 3 ringdb runs, alternating" in out
    # round ratios 1.1, 0.9 and 1.6: their median 1.1; the averages' ratio 173.3 k / 133.3 k
    # = 1.3, with no target verdict (the targets are ratios to the ceiling)
    per_round = line_with(out, "per round (baseline vs ringdb ops/s)")
    assert [p.split("(")[-1].rstrip(")") for p in per_round.split("; ")[:3]] == ["1.100", "0.900", "1.600"]
    assert per_round.endswith("median of the round ratios 1.100")
    assert line_with(out, "write ").split()[:4] == ["write", "133,333", "173,333", "1.300"]
    assert "met" not in line_with(out, "write ")
    assert (bench_ratio(out, "baseline"), bench_ratio(out, "ringdb")) == ("1", "1.3")


def latte_report(path: Path, ops: float) -> Path:
    """A minimal latte JSON report with the fields `benchlib.py record` reads."""
    pcts = [50.0, 99.0, 99.9]
    lat = {"percentiles": [{"value": 1.0}, {"value": 2.0}, {"value": 3.0}], "mean": {"value": 1.0}}
    path.write_text(json.dumps({"percentiles": pcts, "result": {
        "request_latency": lat, "cycle_count": 1000, "row_count": 1000, "request_count": 1000,
        "error_count": 0, "elapsed_time_s": 1.0, "cpu_util": 50.0, "cycle_throughput": {"value": ops},
        "row_throughput": {"value": ops}, "requests_per_cycle": 1,
    }}))
    return path


def record(tmp_path: Path, runs_file: Path, server: str, ops: float, machine: list[int]) -> None:
    report = latte_report(tmp_path / f"{server}.json", ops)
    subprocess.run(
        [sys.executable, str(BENCHLIB), "record", "--runs", str(runs_file), "--workload", "read",
         "--server", server, "--round", "1", "--report", str(report), "--cpu-ticks", "0", "100",
         "--machine-ticks", *map(str, machine)],
        check=True,
    )


def test_steal_time_is_recorded_per_run_and_flagged_in_the_summary(tmp_path):
    runs_file = tmp_path / "runs.jsonl"
    # the ceiling's run: 150 of 1,000 machine ticks stolen (15%); ringdb's: 2 of 1,000 (0.2%)
    record(tmp_path, runs_file, "nullserver", 80_000, [100, 5_000, 250, 6_000])
    record(tmp_path, runs_file, "ringdb", 100_000, [250, 6_000, 252, 7_000])
    steal = [json.loads(l)["steal_pct"] for l in runs_file.read_text().splitlines()]
    assert steal == [15.0, 0.2]
    settings_file = tmp_path / "settings.json"
    settings_file.write_text(json.dumps({"mode": "full", "raw_row_bytes": 112}))
    out = subprocess.run(
        [sys.executable, str(BENCHLIB), "summarize", "--runs", str(runs_file), "--settings", str(settings_file)],
        capture_output=True, text=True, check=True,
    ).stdout
    assert line_with(out, "machine CPU steal %").split()[-3:] == ["15.000", "0.200", "0.013"]
    # the summary's column holds the larger side's steal, and the note names the workload
    assert line_with(out, "read ").split()[9] == "15.0"
    assert line_with(out, "steal >= 2.0% in read:")
    assert "steal_pct=15" in line_with(out, "BENCH workload=read server=nullserver ")
    assert "steal_pct=0.2" in line_with(out, "BENCH workload=read server=ringdb ")
