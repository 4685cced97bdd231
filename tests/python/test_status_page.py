"""The status page at the metrics address (`/`), checked in headless Chromium: the page draws
the token ring with a ring of arcs per table (one arc per physical partition) and lists each
table; its data (`/status.json`) covers the ring exactly. The screenshot is kept as a test
artifact in target/test-artifacts/status-page.png.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest

from conftest import REPO, make_cluster, new_keyspace

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--hide-scrollbars"]


@pytest.fixture(scope="module")
def served(metrics_served):
    """The module's server and its metrics address's base URL."""
    return metrics_served


@pytest.fixture(scope="module")
def known_table(served):
    srv, _ = served
    cluster = make_cluster(srv)
    try:
        s = cluster.connect()
        ks = new_keyspace(s, "status")
        s.execute(f"CREATE TABLE {ks}.orders (k int PRIMARY KEY, v text)")
        insert = s.prepare(f"INSERT INTO {ks}.orders (k, v) VALUES (?, ?)")
        for k in range(200):
            s.execute(insert, (k, "x" * 200))
        yield ks, "orders"
    finally:
        cluster.shutdown()


def get(url: str) -> tuple[str, str]:
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.headers["Content-Type"], r.read().decode()


def test_status_json_covers_the_ring(served, known_table):
    _, base = served
    ks, table = known_table
    kind, body = get(base + "/status.json")
    assert kind == "application/json"
    status = json.loads(body)
    mine = [t for t in status["tables"] if (t["keyspace"], t["table"]) == (ks, table)]
    assert len(mine) == 1
    parts = mine[0]["partitions"]
    assert parts and parts[0]["from"] == 0.0 and parts[-1]["to"] == 1.0
    for a, b in zip(parts, parts[1:]):
        assert a["end"] == b["start"] and a["to"] == b["from"]
    assert mine[0]["bytes"] == sum(p["bytes"] for p in parts) > 200 * 200
    assert status["requests"]["write"] >= 200


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    assert found, "chromium is not installed (scripts/setup-clients installs Debian's package)"
    return found


def test_the_page_draws_the_ring_in_headless_chromium(served, known_table, tmp_path):
    _, base = served
    ks, table = known_table
    kind, page = get(base + "/")
    assert kind.startswith("text/html") and '<svg id="ring"' in page
    browser = chromium()
    profile = tmp_path / "profile"
    dom = subprocess.run([browser, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                          "--virtual-time-budget=5000", "--dump-dom", base + "/"],
                         capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    assert 'data-loaded="true"' in html, html[-3000:]
    ring = re.search(rf'<g data-table="{ks}\.{table}">(.*?)</g>', html, re.S)
    assert ring, html[-3000:]
    status = json.loads(get(base + "/status.json")[1])
    parts = next(t["partitions"] for t in status["tables"] if t["table"] == table and t["keyspace"] == ks)
    assert ring.group(1).count('class="partition"') == len(parts)
    assert f"{ks}.{table}</td>" in html
    # The screenshot, kept for the record.
    artifacts = REPO / "target" / "test-artifacts"
    artifacts.mkdir(parents=True, exist_ok=True)
    shot = artifacts / "status-page.png"
    shot.unlink(missing_ok=True)
    taken = subprocess.run([browser, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                            "--virtual-time-budget=5000", "--window-size=1100,700",
                            f"--screenshot={shot}", base + "/"],
                           capture_output=True, text=True, timeout=120)
    assert taken.returncode == 0, taken.stderr[-2000:]
    assert shot.exists() and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 10_000
