"""harness site (issue 44, items 2 and 3): every page, the feed and the JSON well-formed whatever results
hold; only what a new run touches rebuilt; and the site in a real browser (Debian's headless Chromium)."""

from __future__ import annotations

import io
import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness.cli.commands import site as site_command
from harness.cli.console import Console
from harness.cli.output import Output
from harness.history import add
from harness.site import build, folder
from tests.conftest import run_cli, untouched
from tests.evidence import SITE_CPU
from tests.history_docs import make, write

pytestmark = pytest.mark.slow  # the real CLI, on real documents: each test takes 2 s or more

HOSTILE = "<script>alert(1)</script>&amp;\x01\ud800]]>'\""
MB = 1024 * 1024
SVG = "{http://www.w3.org/2000/svg}"


def _results(folder: Path) -> None:
    """Two GPUs; on each, two torch builds across three cuDNN releases, 3 rounds each; the row slows by
    30% at 9.28.0 on torch 2.11 (a regression still open at the newest release)."""
    minute = 0
    for gpu in ("NVIDIA H200", f"H100 {HOSTILE}"):
        for torch in ("2.10.0+cu128", "2.11.0+cu130"):
            for cudnn in ("9.19.0", "9.20.1", "9.28.0"):
                slower = torch == "2.11.0+cu130" and cudnn == "9.28.0"
                for r in range(3):
                    kernel = f"cudnn_kernel_{HOSTILE}" if slower else None
                    document = make(
                        minute,
                        cudnn=cudnn,
                        torch=torch,
                        gpu=gpu,
                        round_=r + 1,
                        kernel=kernel,
                        scale=(1.3 if slower else 1.0) * (1 + 0.001 * r),
                    )
                    write(folder, document)
                    minute += 1


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("history")
    _results(root / "results")
    add.add(root / "history", [root / "results"])
    return root / "history"


@pytest.fixture(scope="module")
def site(history, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site") / "site"
    done = run_cli("site", "--history", str(history), "--out", str(out))
    assert done.returncode == 0, done.stderr
    return out


def test_every_page_and_the_feed_are_well_formed_and_small(site):
    pages = sorted(site.rglob("*.html"))
    assert {p.parent.name for p in pages} == {site.name, "rows", "releases", "runs"}
    for path in [*pages, site / "regressions.xml"]:
        text = path.read_text()
        ET.fromstring(text.split("\n", 1)[1] if text.startswith("<!DOCTYPE") else text.encode())
        assert "<script>alert" not in text and "\x01" not in text, path
    for path in site.rglob("*.json"):
        json.loads(path.read_text())
    assert max(p.stat().st_size for p in site.rglob("*") if p.is_file()) < MB


def test_the_feed_and_index_name_the_open_regression(site):
    feed = ET.fromstring((site / "regressions.xml").read_bytes())
    atom = "{http://www.w3.org/2005/Atom}"
    titles = [e.findtext(f"{atom}title") for e in feed.iter(f"{atom}entry")]
    assert titles and all("9.20.1 → 9.28.0" in t and "torch 2.11.0+cu130" in t for t in titles)
    index = json.loads((site / "index.json").read_text())
    assert len(index["contexts"]) == 2 and index["runs"] == 36
    assert {r["verdict"] for r in index["regressions"]} == {"slower"}
    assert all((site / r["page"]).is_file() and (site / r["shard"]).is_file() for r in index["rows"])
    # suite 0.19's rows: fp32 is TF32 off, and every page and entry names the mode, its id kept beside it
    named = {"fp32": "fp32 (TF32 off)", "bf16": "bf16"}
    assert {(r["dtype"], r["mode"]) for r in index["rows"]} == set(named.items())
    assert sorted(t.split(" [")[0] for t in titles) == sorted(
        f"{r['workload']} {r['mode']}" for r in index["regressions"]
    )
    assert not [t for t in titles if " fp32 [" in t]
    assert "<th>mode</th>" in (site / "index.html").read_text()
    row = next(r for r in index["rows"] if r["dtype"] == "fp32")
    assert f"<title>{row['workload']} fp32 (TF32 off) [" in (site / row["page"]).read_text()


def test_a_release_page_says_what_changed_moving_to_it(site):
    index = json.loads((site / "index.json").read_text())
    page = next(
        r["page"] for r in index["releases"] if r["cudnn"] == "9.28.0" and r["torch"] == "2.11.0+cu130"
    )
    text = (site / page).read_text()
    assert "Moving from cuDNN 9.20.1" in text and "slower" in text and "cudnn_kernel_" in text


def test_adding_a_run_rebuilds_only_the_pages_it_touches(history, site, tmp_path):
    copy = tmp_path / "history"
    shutil.copytree(history, copy)
    out = tmp_path / "site"
    shutil.copytree(site, out)
    again = build.build(copy, out)
    assert again.written == 0 and again.rows_rebuilt == 0
    extra = make(1000, cudnn="9.28.0", torch="2.11.0+cu130", round_=4, scale=1.3)
    extra["measurements"] = extra["measurements"][:2]
    write(tmp_path / "more", extra)
    add.add(copy, [tmp_path / "more"])
    after = build.build(copy, out)
    assert after.rows_rebuilt == 2 and after.runs == 37
    full = build.build(copy, tmp_path / "full", full=True)
    assert full.rows_rebuilt == full.rows
    for path in full.out.rglob("*"):
        if path.is_file() and path.name != build.MANIFEST:
            assert (out / path.relative_to(full.out)).read_bytes() == path.read_bytes(), path


def test_the_output_folder_is_never_written_through_a_link(history, tmp_path, outside):
    out = tmp_path / "site"
    (out / "rows").mkdir(parents=True)
    (out / folder.MARKER).write_text('{"format": "harness-site", "version": 1}')  # a site of ours
    (out / "runs").symlink_to(outside, target_is_directory=True)
    done = run_cli("site", "--history", str(history), "--out", str(out))
    assert done.returncode == 2 and "link" in done.stderr
    untouched(outside)


def _site_of(folders: list[Path], root: Path) -> Path:
    add.add(root / "history", folders)
    return build.build(root / "history", root / "site").out


def _page(path: Path) -> ET.Element:
    return ET.fromstring(path.read_text().split("\n", 1)[1])


def test_a_busy_hosts_rounds_are_hollow_and_called_spoiled_never_points_of_the_line(tmp_path):
    # the committed CPU run: 6 rounds on a quiet host, 6 on a busy one (load 2.6 on 2 cores)
    site = _site_of([SITE_CPU / "quiet", SITE_CPU / "busy"], tmp_path)
    page = site / "rows" / "gelu.fp32.b0d0t0.html"
    circles = list(_page(page).iter(f"{SVG}circle"))
    spoiled = [c for c in circles if "spoiled" in (c.get("class") or "")]
    assert len(circles) == 12 and len(spoiled) == 6
    assert all(c.get("fill") == "#fff" and "busy" in (c.findtext(f"{SVG}title") or "") for c in spoiled)
    text = page.read_text()
    assert "spoiled: timed on a busy host" in text and "3 spoiled (busy host)" in text
    assert "<th>cuDNN bundled</th>" in text and "<th>cuDNN disabled</th>" in text and "unknown" not in text
    shard = json.loads((site / "rows" / "gelu.fp32.b0d0t0.json").read_text())
    assert sum(1 for why in shard["points"]["spoiled"] if why and "busy" in why) == 6
    (step,) = [s for s in shard["steps"] if s["axis"] == "cudnn"]
    assert (step["cudnn_before"], step["cudnn_after"], step["rounds"]) == ("bundled", "disabled", [3, 3])
    index = json.loads((site / "index.json").read_text())
    assert {r["cudnn"] for r in index["releases"]} == {"bundled", "disabled"}


def test_a_step_between_rounds_a_busy_host_spoiled_is_no_verdict(tmp_path):
    site = _site_of([SITE_CPU / "busy"], tmp_path)
    for shard in (site / "rows").glob("*.json"):
        for step in json.loads(shard.read_text())["steps"]:
            assert step["verdict"] == "inconclusive" and step["reason"].startswith("busy host: "), step


def test_a_line_across_a_release_not_measured_is_dashed_and_says_which(tmp_path):
    folder = tmp_path / "results"
    for i, (gpu, cudnn) in enumerate(
        [("NVIDIA H200", "9.19.0"), ("NVIDIA H200", "9.28.0"), ("NVIDIA H100 80GB HBM3", "9.20.1")] * 3
    ):
        write(folder, make(i, cudnn=cudnn, gpu=gpu, round_=i // 3 + 1))
    site = _site_of([folder], tmp_path)
    row = json.loads((site / "index.json").read_text())["rows"][0]
    page = _page(site / row["page"])
    lines = [e for e in page.iter(f"{SVG}line") if e.get("stroke", "").startswith("#")]
    (gap,) = lines  # the H200's line, 9.19.0 to 9.28.0, across 9.20.1 (measured on the H100 only)
    assert gap.get("class") == "gap" and gap.get("stroke-dasharray")
    assert "between cuDNN 9.19.0 and 9.28.0, at 9.20.1" in (gap.findtext(f"{SVG}title") or "")
    assert "releases between not measured here" in (site / row["page"]).read_text()


# --- the site in a real browser ---------------------------------------------------------------------


def _visit(driver, url: str) -> None:
    driver.get(url)
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors


def _links(driver) -> list[str]:
    from selenium.webdriver.common.by import By

    found = [a.get_attribute("href") for a in driver.find_elements(By.CSS_SELECTOR, "a[href]")]
    found += [
        driver.execute_script("return new URL(arguments[0].getAttribute('data-href'), location.href).href", p)
        for p in driver.find_elements(By.CSS_SELECTOR, "svg .pt")
    ]
    return [h for h in found if h and h.startswith("file:")]


def _resolves(href: str) -> bool:
    from urllib.parse import unquote, urlparse

    return Path(unquote(urlparse(href).path)).is_file()


def test_index_to_row_to_release_to_run_in_chromium(site, chromium):
    from selenium.webdriver.common.by import By

    _visit(chromium, (site / "index.html").as_uri())
    assert all(_resolves(h) for h in _links(chromium))
    search = chromium.find_element(By.CSS_SELECTOR, "input.filter")
    assert search.is_displayed()  # the script shows it; without the script the table is whole
    row_link = chromium.find_element(By.CSS_SELECTOR, "#rows tbody tr a")
    name = row_link.text
    search.send_keys(name)
    shown = [tr for tr in chromium.find_elements(By.CSS_SELECTOR, "#rows tbody tr") if tr.is_displayed()]
    assert shown and all(name in tr.text for tr in shown)
    row_link.click()
    assert "/rows/" in chromium.current_url
    _visit(chromium, chromium.current_url)
    shard = json.loads(
        Path(chromium.current_url.removeprefix("file://").replace(".html", ".json")).read_text()
    )
    charts = chromium.find_elements(By.CSS_SELECTOR, "svg.chart")
    assert len(charts) == len(shard["contexts"]) == 2
    for i, chart in enumerate(charts):
        expected = shard["points"]["context"].count(i)
        assert len(chart.find_elements(By.CSS_SELECTOR, ".pt")) == expected
    assert all(_resolves(h) for h in _links(chromium))
    point = chromium.find_element(By.CSS_SELECTOR, "svg .pt")
    from selenium.webdriver import ActionChains

    ActionChains(chromium).move_to_element(point).perform()
    tip = chromium.find_element(By.ID, "tip")
    assert tip.is_displayed() and "torch" in tip.text and "round" in tip.text
    chromium.find_element(By.PARTIAL_LINK_TEXT, "cuDNN 9.28.0").click()
    assert "/releases/" in chromium.current_url
    _visit(chromium, chromium.current_url)
    assert all(_resolves(h) for h in _links(chromium))
    chromium.find_element(By.CSS_SELECTOR, "a[href*='/runs/']").click()
    assert "/runs/" in chromium.current_url
    _visit(chromium, chromium.current_url)
    assert all(_resolves(h) for h in _links(chromium))


WIDE, PHONE = 1400, 390
BROKEN_HEADERS = """return Array.from(document.querySelectorAll('th')).filter(function(th){
  var r = document.createRange(); r.selectNodeContents(th); return r.getClientRects().length > 1;
}).map(function(th){ return th.textContent; });"""


def test_at_1400_and_390_px_plots_take_the_page_headers_never_break_and_nothing_scrolls_it_sideways(
    site, chromium
):
    index = json.loads((site / "index.json").read_text())
    pages = [site / "index.html", site / index["rows"][0]["page"], site / index["newest"][0]["page"]]
    try:
        for width in (WIDE, PHONE):
            metrics = {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width == PHONE}
            chromium.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
            for path in pages:
                _visit(chromium, path.as_uri())
                body, window = chromium.execute_script("return [document.body.scrollWidth, innerWidth]")
                assert body <= window, (width, path)
                assert chromium.execute_script(BROKEN_HEADERS) == [], (width, path)
            _visit(chromium, pages[1].as_uri())
            charts = chromium.execute_script(
                "return Array.from(document.querySelectorAll('svg.chart'))"
                ".map(function(s){ return s.getBoundingClientRect().width; })"
            )
            if width == WIDE:  # the page's width less the y axis' labels and the margins: not 760 px
                assert charts and min(charts) > WIDE - 150, charts
    finally:
        chromium.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_a_build_says_how_far_it_is_row_by_row_and_a_site_of_many_rows_says_so(history, tmp_path):
    heard: list[tuple[int, int]] = []
    done = build.build(history, tmp_path / "site", progress=lambda k, n: heard.append((k, n)))
    assert heard == [(k, done.rows) for k in range(done.rows + 1)]  # from 0, as history's long work says

    def printed(total: int) -> list[str]:  # what the command prints of a build of ``total`` rows
        stream = io.StringIO()
        said = site_command._progress(Output(Console(stream=stream)))
        for k in range(total + 1):  # from 0, as build calls it
            said(k, total)
        return [line.split("] ", 1)[-1] for line in stream.getvalue().splitlines()]

    assert printed(250) == [
        "site: 250 rows, each kept where unchanged or rebuilt",
        "site: 100 of 250 rows",
        "site: 200 of 250 rows",
        "site: 250 of 250 rows",
    ]
    assert printed(5) == []
