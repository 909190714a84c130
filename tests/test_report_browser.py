"""The HTML report opens cleanly in a real browser: headless Chromium loads it, every figure decodes
(complete, naturalWidth > 0) and every table is in the rendered DOM with its rows."""
from __future__ import annotations

import re
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from analysis.report import build_report
from analysis.synthetic import write_random_cache, write_run, write_setting

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="headless Chromium is not installed at /usr/bin/chromium "
                                "(Debian package 'chromium'; .ci/run installs it)")

# Counted after the load event, written where --dump-dom shows it.
PROBE = """<script>
window.addEventListener('load', function () {
  var imgs = Array.from(document.images);
  var ok = imgs.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length;
  var tables = Array.from(document.querySelectorAll('table'));
  document.body.setAttribute('data-images-total', imgs.length);
  document.body.setAttribute('data-images-loaded', ok);
  document.body.setAttribute('data-tables', tables.length);
  document.body.setAttribute('data-table-rows', tables.map(function (t) { return t.id + ':' + t.tBodies[0].rows.length; }).join(','));
  document.body.setAttribute('data-probe', 'done');
});
</script>"""


class _Tables(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tables: list[tuple[str, int]] = []

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            a = dict(attrs)
            self.tables.append((a.get("id", ""), int(a.get("data-rows", -1))))


def _dump_dom(page: Path, profile: Path) -> str:
    cmd = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
           "--virtual-time-budget=5000", "--dump-dom", page.as_uri()]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_report_renders_in_headless_chromium(tmp_path):
    results = tmp_path / "results"
    for label, offset, seed in (("ppo_clip", 0.0, 1), ("ppo_clip+clip_eps=0.1", -40.0, 2), ("trpo", 30.0, 3)):
        write_setting(results, label, {"Hopper-v5": 300.0 + offset, "Swimmer-v5": 40.0 + offset / 10}, seeds=2,
                      rng_seed=seed)
    write_run(results, "Hopper-v5", "reinforce", 0, [1.0], status="failed")      # listed, left out
    write_random_cache(results, {"Hopper-v5": 10.0, "Swimmer-v5": 0.0})
    report = build_report(results, "mujoco", reps=200)
    assert not report.failures
    source = report.path.read_text()
    parser = _Tables()
    parser.feed(source)
    expected = parser.tables
    assert {"table1", "scores", "aggregates", "poi", "runs-table", "settings", "versions"} <= {t for t, _ in expected}

    probed = tmp_path / "probed" / "index.html"      # the report stays script-free; the probe goes in a copy
    probed.parent.mkdir()
    probed.write_text(source.replace("</body>", PROBE + "</body>"))
    dom = _dump_dom(probed, tmp_path / "chromium-profile")
    body = re.search(r"<body([^>]*)>", dom)
    assert body and 'data-probe="done"' in body.group(1), "the page did not finish loading"
    attrs = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', body.group(1)))
    assert int(attrs["images-total"]) == source.count("<img ") >= 4
    assert attrs["images-loaded"] == attrs["images-total"], "a figure did not load"
    assert int(attrs["tables"]) == len(expected)
    rows = dict(part.split(":") for part in attrs["table-rows"].split(","))
    for table_id, n in expected:
        assert int(rows[table_id]) == n > 0, f"table {table_id} lost rows"
    assert "Table 1" in dom and "Probability of improvement" in dom
