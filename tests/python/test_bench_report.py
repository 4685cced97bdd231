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


def test_ratios_against_the_ceiling_with_the_issue_targets(tmp_path):
    out = summarize(tmp_path, [
        run("nullserver", 1, 100_000), run("ringdb", 1, 50_000),
        run("nullserver", 2, 200_000), run("ringdb", 2, 60_000),
    ], {})
    assert "ringdb vs the protocol ceiling (nullserver)" in out
    # averages 150 k and 55 k: 0.367, below the 0.6 target
    summary = line_with(out, "write ")
    assert "150,000" in summary and "55,000" in summary and "0.367" in summary
    assert summary.endswith(">= 0.6x: not met")
    per_round = line_with(out, "per round (ceiling vs ringdb ops/s)")
    assert "round 1: 100,000 vs 50,000 (0.500)" in per_round
    assert "round 2: 200,000 vs 60,000 (0.300)" in per_round
    assert "median" not in per_round  # only from three rounds on
    assert "BENCH workload=write server=nullserver " in out
    assert line_with(out, "BENCH workload=write server=ringdb").split(" ratio=")[1].startswith("0.367")


def test_ab_of_two_builds_reports_ratios_to_the_baseline_and_their_median(tmp_path):
    out = summarize(tmp_path, [
        run("baseline", 1, 100_000), run("ringdb", 1, 110_000),
        run("baseline", 2, 100_000), run("ringdb", 2, 90_000),
        run("baseline", 3, 200_000), run("ringdb", 3, 320_000),
    ], {"a_side": "baseline", "baseline_bin": "/tmp/ringdb-old"})
    assert "ringdb vs the baseline build /tmp/ringdb-old" in out
    assert "nullserver" not in out and "ceiling/s" not in out and "ceiling vs" not in out
    assert "3 baseline + 3 ringdb runs, alternating" in out
    per_round = line_with(out, "per round (baseline vs ringdb ops/s)")
    assert "(1.100)" in per_round and "(0.900)" in per_round and "(1.600)" in per_round
    assert per_round.endswith("median of the round ratios 1.100")
    # the ratio of the averages (173.3 k / 133.3 k), with no target verdict
    summary = line_with(out, "write ")
    assert "1.300" in summary
    assert "met" not in summary
    assert line_with(out, "BENCH workload=write server=baseline").split(" ratio=")[1].startswith("1 ")
    assert line_with(out, "BENCH workload=write server=ringdb").split(" ratio=")[1].startswith("1.3 ")
