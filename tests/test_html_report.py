"""The HTML report: its plots and layout as plots.py and html.py make them, and the page in a real browser
(Debian's headless Chromium, driven through chromedriver)."""

from __future__ import annotations

import dataclasses
import html as htmllib
import itertools
import re
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from selenium.webdriver.common.by import By

from harness.report.analysis.model import Analysis, View
from harness.report.writers import html, plots
from harness.report.writers.document import Document, Section, Value
from tests.conftest import run_cli
from tests.evidence import GPU_VERDICTS

SHARDS = sorted(GPU_VERDICTS.glob("results-shard*"))
RELEASES = [f"9.{i}.0" for i in range(10, 30)]  # 20 releases
LABELS = [f"installed / cuDNN wheel:{r}" for r in RELEASES]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("html")
    args = [a for shard in SHARDS for a in ("--results", str(shard))]
    done = run_cli("report", *args, "--out", str(out))
    assert done.returncode == 1, done.stderr  # the committed GPU run holds real regressions
    return out


@pytest.fixture(scope="module")
def page(rendered, chromium):
    chromium.get((rendered / "report.html").as_uri())
    return chromium


@pytest.fixture
def drawn(monkeypatch) -> list:
    """The figures plots.py draws, kept (and laid out) instead of written as PNG."""
    figures: list = []

    def keep(figure) -> str:
        figure.canvas.draw()
        figures.append(figure)
        return "png"

    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.setattr(plots, "_png", keep)
    return figures


def overlapping(labels) -> list[tuple[str, str]]:
    boxes = [(t.get_text(), t.get_window_extent()) for t in labels if t.get_visible() and t.get_text()]
    return [(a, b) for (a, x), (b, y) in itertools.combinations(boxes, 2) if x.overlaps(y)]


def releases_view(count: int = len(RELEASES)) -> View:
    groups = tuple(f"cell{i}" for i in range(count))
    return View("sweep", groups[0], groups, dict(zip(groups, LABELS, strict=False)), 5.0, 0.002, 3, "")


def timing_rows(view: View, rows: list[tuple[str, list[tuple[float, str]]]]) -> pd.DataFrame:
    """One verdict row per (row, candidate group): ``rows`` holds (workload, [(ratio, verdict), ...])."""
    return pd.DataFrame(
        [
            {"group": g, "workload": w, "dtype": "fp32", "knobs": "k", "ratio": r, "verdict": v}
            for w, cells in rows
            for g, (r, v) in zip(view.groups[1:], cells, strict=True)
        ]
    )


def test_the_heatmap_columns_are_the_groups_labels_under_what_they_share(drawn):
    view = releases_view(4)
    timing = timing_rows(view, [("sdpa", [(1.5, "slower"), (1.0, "same"), (1.0, "same")])])
    grid = plots.heatmap(view, timing)
    assert grid.columns == ["B\nwheel:9.11.0", "C\nwheel:9.12.0", "D\nwheel:9.13.0"]
    assert grid.shared == "installed / cuDNN"
    plots._heatmap(view, timing, view.letters)
    axes = drawn[0].axes[0]
    assert [t.get_text() for t in axes.get_xticklabels()] == grid.columns
    assert axes.get_xlabel() == "installed / cuDNN …"


def test_a_long_group_label_is_wrapped_and_cut_to_its_column():
    labels = ["a " + "x" * 70, "a short one", "a y"]
    short, shared = plots.short_labels(labels)
    assert shared == "a" and short[1:] == ["short one", "y"]
    view = View(
        "v",
        "g0",
        ("g0", "g1", "g2", "g3"),
        dict(zip(("g1", "g2", "g3"), labels, strict=True)),
        5.0,
        0.002,
        3,
        "",
    )
    grid = plots.heatmap(view, timing_rows(view, [("w", [(1.0, "same")] * 3)]))
    lines = grid.columns[0].split("\n")
    assert lines[0] == "B" and len(lines) == 4 and all(len(x) <= plots.COLUMN for x in lines)
    assert lines[-1].endswith("…")


def test_an_inconclusive_cell_is_grey_whatever_its_ratio_and_the_scale_says_so(drawn):
    view = releases_view(4)
    timing = timing_rows(
        view,
        [
            ("conv", [(1.3, "slower"), (1.3, "inconclusive"), (1.01, "same")]),
            ("sdpa", [(0.8, "faster"), (0.8, "inconclusive"), (float("nan"), "failed")]),
        ],
    )
    grid = plots.heatmap(view, timing)
    colors = grid.colors
    assert tuple(colors[0, 1]) == tuple(colors[1, 1]) == plots.UNDECIDED  # 1.3 and 0.8: no change shown
    assert tuple(colors[0, 2]) == plots.SAME
    slower, faster = colors[0, 0], colors[1, 0]
    assert slower[0] > slower[2] and faster[2] > faster[0]  # orange and purple, as the scale draws them
    assert tuple(slower) != plots.UNDECIDED and tuple(faster) != plots.UNDECIDED
    plots._heatmap(view, timing, view.letters)
    axes, bar = drawn[0].axes
    assert "slower and ▲ faster cells only" in bar.get_ylabel()
    legend = [t.get_text() for t in axes.get_legend().get_texts()]
    assert any(text.startswith("? inconclusive: grey") for text in legend)
    image = axes.get_images()[0].get_array()
    assert tuple(image[0, 1]) == plots.UNDECIDED  # what is drawn is that array


def test_the_distribution_plot_names_its_threshold_band(drawn):
    view = releases_view(3)
    timing = timing_rows(view, [("sdpa", [(1.5, "slower"), (1.0, "same")])])
    frame = pd.DataFrame(
        [
            {"group": g, "workload": "sdpa", "dtype": "fp32", "knobs": "k", "status": "ok", "median_s": m}
            for g, base in zip(view.groups, (1e-4, 1.5e-4, 1e-4), strict=True)
            for m in (base, base * 1.01, base * 0.99)
        ]
    )
    analysis = Analysis(frame, timing, pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), None, {}, {})
    assert len(plots._distributions(view, analysis, view.letters)) == 1
    axes = drawn[0].axes[0]
    legend = [t.get_text() for t in axes.get_legend().get_texts()]
    assert "threshold: baseline median ±5%" in legend and "baseline median" in legend
    assert axes.get_yticklabels()[0].get_text() == "A: wheel:9.10.0 (3 rounds)"


@pytest.mark.slow
def test_no_two_tick_labels_meet_with_many_rows_groups_or_releases(drawn):
    view = releases_view(13)  # 12 candidate groups
    rows = [(f"workload_{i:03d}_with_a_long_name", [(1 + i / 1000, "same")] * 12) for i in range(200)]
    timing = timing_rows(view, rows)
    caption, _ = plots._heatmap(view, timing, view.letters)
    axes = drawn[0].axes[0]
    assert len(axes.get_yticklabels()) == plots.MAX_HEATMAP_ROWS and "largest changes of 200" in caption
    assert overlapping(axes.get_yticklabels()) == overlapping(axes.get_xticklabels()) == []
    # the series across 20 releases, and round medians from 2 µs to 2 s (six decades)
    ratios = pd.DataFrame(
        [
            {"workload": "sdpa", "dtype": d, "knobs": "k"} | {r: 1 + i / 100 for i, r in enumerate(RELEASES)}
            for d in ("fp32", "bf16")
        ]
    )
    series = SimpleNamespace(labels=RELEASES, changes=(), ratios=ratios, baseline_label=RELEASES[0])
    frame = pd.DataFrame(
        [
            {"group": g, "workload": "sdpa", "dtype": "fp32", "knobs": "k", "status": "ok", "median_s": m}
            for g, m in zip(view.groups[:3], (2e-6, 2.0, 3e-3), strict=True)
        ]
    )
    wide = timing_rows(releases_view(3), [("sdpa", [(1e6, "slower"), (1500, "slower")])])
    analysis = Analysis(frame, wide, pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), None, {}, {})
    plots._series(dataclasses.replace(analysis, series=series))
    plots._distributions(releases_view(3), analysis, view.letters)
    for figure in drawn[1:]:
        axes = figure.axes[0]
        assert overlapping(axes.get_xticklabels()) == overlapping(axes.get_yticklabels()) == []
        shown = [t for t in axes.get_xticklabels() if t.get_text()]
        assert len(shown) >= 3, [t.get_text() for t in shown]


def test_the_charts_across_releases_come_largest_change_first(drawn):
    ratios = pd.DataFrame(
        [
            {"workload": w, "dtype": "fp32", "knobs": "k"} | dict.fromkeys(RELEASES[:3], r)
            for w, r in (("small", 1.01), ("large", 1.5), ("faster", 0.8))
        ]
    )
    series = SimpleNamespace(labels=RELEASES[:3], changes=(), ratios=ratios, baseline_label=RELEASES[0])
    analysis = Analysis(
        pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), None, {}, {}
    )
    charts = plots._series(dataclasses.replace(analysis, series=series))
    assert [c for c, _ in charts] == [f"across releases: {w}" for w in ("large", "faster", "small")]


@pytest.mark.parametrize(
    "low,high,expected",
    [
        (2.0, 2e6, [1e1, 1e3, 1e5]),
        (30.0, 1000.0, [50.0, 100.0, 200.0, 500.0, 1000.0]),
        (84.0, 140.0, [100.0, 120.0, 140.0]),
    ],
)
def test_log_ticks_are_round_few_and_inside_the_axis(low, high, expected):
    ticks = plots.log_ticks(low, high)
    assert ticks == expected
    narrow = plots.log_ticks(100.0, 100.5)
    assert len(narrow) >= 2 and all(100 <= t <= 100.5 for t in narrow)


@pytest.mark.slow
def test_the_heatmap_comes_right_after_the_answer_and_is_in_the_contents(rendered):
    # the answer: which cuDNN for this host (issue 58), the scorecard, then each candidate summed up by
    # family (issue 40), then the heatmap
    page = (rendered / "report.html").read_text()
    headings = re.findall(r"<h2 id='([^']*)'>", page)
    answer = ["which-cudnn-for-this-host", "scorecard", "by-family", "time-ratio-heatmap", "read-this-first"]
    assert headings[:5] == answer, headings
    section = page[page.index("<h2 id='time-ratio-heatmap'>") : page.index("<h2 id='read-this-first'>")]
    captions = re.findall(r"<figcaption>([^<]*)</figcaption>", section)
    assert len(captions) == 1 and htmllib.unescape(captions[0]).startswith("time ratio heatmap")
    nav = page[page.index("<nav>") : page.index("</nav>")]
    assert re.findall(r"href='#([^']*)'", nav)[:4] == answer[:4]
    # Markdown has no plots: no empty heading, no dead link
    assert "heatmap" not in (rendered / "report.md").read_text().lower()


def test_a_plot_section_without_its_plot_is_left_out_with_its_contents_link():
    document = Document("t", "", (Section("Scorecard"), Section("Time ratio heatmap", figure="heatmap")))
    assert "heatmap" not in html.page(document, []).lower()
    shown = html.page(document, [plots.Plot("heatmap", "time ratio heatmap", "AAAA")])
    assert "<a href='#time-ratio-heatmap'>" in shown and "<figure class='whole'>" in shown


def test_prose_bullets_are_a_list_and_paragraphs_stay_apart():
    # issue 41: "What to do next" showed a literal "- " inside one paragraph, its two bullets run together
    intro = "Lead.\n- first **step**\n- second `code`\n  continued\n\nAfter.\n\n```\nrepro \\\n  --x\n```"
    page = html.page(Document("t", "- a header bullet", (Section("What to do next", intro),)), [])
    assert "<ul><li>a header bullet</li></ul>" in page
    assert (
        "<p>Lead.</p><ul><li>first <b>step</b></li><li>second <code>code</code>\n  continued</li></ul>"
        "<p>After.</p><pre>repro \\\n  --x</pre>"
    ) in page
    assert "- first" not in page and "- second" not in page


def test_a_table_of_only_same_rows_shows_them_from_the_start():
    same = (Value("same", kind="verdict", verdict="same"),)
    slower = (Value("slower", kind="verdict", verdict="slower"),)
    all_same = html.page(
        Document("t", "", (Section("V", "", ("verdict",), (same, same), filterable=True),)), []
    )
    assert "class='show-same' checked>" in all_same  # not an empty table with only its header
    mixed = html.page(
        Document("t", "", (Section("V", "", ("verdict",), (same, slower), filterable=True),)), []
    )
    assert "class='show-same'>" in mixed


@pytest.mark.parametrize(
    ("verdicts", "shown"),
    [(("inconclusive", "inconclusive"), False), (("same", "same"), False), (("same", "slower"), True)],
)
def test_no_heatmap_without_a_decided_change(drawn, monkeypatch, verdicts, shown):
    # issue 41: a busy report's heatmap was a screen of grey "1.00?" cells
    monkeypatch.setattr(plots, "_series", lambda analysis: [])
    monkeypatch.setattr(plots, "_distributions", lambda view, analysis, letters: [])
    view = releases_view(3)
    timing = timing_rows(view, [("w", [(1.0, verdicts[0]), (1.07, verdicts[1])])])
    kinds = [p.kind for p in plots.plots(view, SimpleNamespace(timing=timing))]  # type: ignore[arg-type]
    assert ("heatmap" in kinds) is shown, kinds


def test_every_table_scrolls_in_its_own_box_and_images_fit_the_page():
    rows = (tuple(f"cell {i} " + "x" * 200 for i in range(12)),)
    document = Document("t", "", (Section("Wide", "", tuple(f"h{i}" for i in range(12)), rows),))
    page = html.page(document, [])
    assert re.search(r"<div class='scroll'><table[^>]*>.*</table></div>", page)
    style = html.STYLE.replace("\n", "")
    assert re.search(r"\.scroll\{[^}]*overflow:auto", style)
    assert re.search(r"img\{[^}]*max-width:100%", style) and re.search(r"figure\{[^}]*max-width", style)


@pytest.mark.slow
def test_the_page_loads_with_its_sections(page):
    assert page.title.startswith("gpu-verdicts")
    headings = [h.text for h in page.find_elements(By.TAG_NAME, "h2")]
    assert "Verdicts against the baseline" in headings and "Environment of every run" in headings
    assert "Outcome: regression" in page.find_element(By.TAG_NAME, "body").text
    assert (
        page.execute_script("return document.querySelectorAll('script[src], link[rel=stylesheet]').length")
        == 0
    )


def verdict_table(page):
    heading = next(
        h for h in page.find_elements(By.TAG_NAME, "h2") if h.text == "Verdicts against the baseline"
    )
    return heading.find_element(By.XPATH, "following-sibling::div[@class='scroll'][1]/table")


def show_same_rows(page, shown: bool = True) -> None:
    box = page.find_element(By.CSS_SELECTOR, ".show-same")
    if box.is_selected() != shown:
        box.click()


def column(table, name: str) -> list[str]:
    headers = [th.text.rstrip(" ▲▼") for th in table.find_elements(By.CSS_SELECTOR, "thead th")]
    index = headers.index(name) + 1
    return [td.text for td in table.find_elements(By.CSS_SELECTOR, f"tbody tr td:nth-child({index})")]


@pytest.mark.slow
def test_a_click_sorts_a_table_by_number_both_ways(page):
    show_same_rows(page)
    table = verdict_table(page)
    header = next(th for th in table.find_elements(By.CSS_SELECTOR, "thead th") if th.text == "time ratio")
    before = column(table, "time ratio")
    header.click()
    ascending = [float(x) for x in column(table, "time ratio")]
    assert ascending == sorted(ascending) and len(ascending) == len(before) >= 30
    assert "sorted-asc" in header.get_attribute("class")
    header.click()
    descending = [float(x) for x in column(table, "time ratio")]
    assert descending == sorted(ascending, reverse=True)
    assert descending[0] > 6.5  # cuDNN disabled against enabled on a bf16 3x3 conv


@pytest.mark.slow
def test_durations_sort_by_value_not_by_text(page):
    show_same_rows(page)
    table = verdict_table(page)
    headers = table.find_elements(By.CSS_SELECTOR, "thead th")
    index = next(i for i, th in enumerate(headers) if th.text.startswith("candidate"))
    headers[index].click()
    keys = page.execute_script(
        "return Array.from(arguments[0].tBodies[0].rows).map(r => "
        "Number(r.cells[arguments[1]].dataset.sort))",
        table,
        index,
    )
    assert keys == sorted(keys) and keys[0] < 1e-4 < keys[-1]  # µs rows before ms rows


@pytest.mark.slow
def test_the_plots_show(page):
    images = page.find_elements(By.TAG_NAME, "img")
    assert len(images) >= 2  # the heatmap and sample distributions
    for image in images:
        assert page.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 100", image)
        assert image.get_attribute("src").startswith("data:image/png;base64,")
    captions = [c.text for c in page.find_elements(By.TAG_NAME, "figcaption")]
    assert captions[0].startswith("time ratio heatmap") and any(
        c.startswith("round medians: sdpa") for c in captions
    )
    widths = [page.execute_script("return arguments[0].naturalWidth", image) for image in images]
    assert min(widths) >= 600  # 150 dpi: text stays readable when the page scales the image down


@pytest.mark.slow
def test_numbers_link_to_their_measurements(page):
    links = [a.get_attribute("href") for a in verdict_table(page).find_elements(By.TAG_NAME, "a")]
    assert links and all(href.startswith("file://") and href.endswith(".measurement.json") for href in links)
    assert all(Path(href.removeprefix("file://")).is_file() for href in links[:20])


@pytest.mark.slow
def test_the_answer_comes_first_and_the_method_is_folded_away(page):
    headings = [h.text for h in page.find_elements(By.TAG_NAME, "h2")]
    assert headings.index("Scorecard") < headings.index("Verdicts against the baseline")
    # which cuDNN for this host first (issue 58), then the scorecard; the family summary belongs to the
    # answer: right after the scorecard
    first = ["Which cuDNN for this host", "Scorecard", "By family", "Time ratio heatmap", "Read this first"]
    assert headings[:5] == first, headings
    body = page.find_element(By.TAG_NAME, "body").text
    assert body.index("NVIDIA H100 80GB HBM3") < body.index("Scorecard")  # the GPU in the first lines
    scorecard = page.find_elements(By.CSS_SELECTOR, "table.sortable")[0].text
    assert "conv2d_r50_3x3 bf16: 6.74x slower" in scorecard and "sdpa bf16: 1.54x slower" in scorecard
    method = page.find_element(By.TAG_NAME, "details")
    assert "Method" in method.text and method.get_attribute("open") is None
    paragraph = method.find_elements(By.TAG_NAME, "p")[0]
    assert not paragraph.is_displayed()  # folded until the reader opens it
    method.find_element(By.TAG_NAME, "summary").click()
    assert paragraph.is_displayed() and "Mann-Whitney" in method.text  # its paragraphs, each a <p>


@pytest.mark.slow
def test_a_big_table_shows_the_changes_first_and_can_be_searched(page):
    table = verdict_table(page)
    visible = lambda: [r for r in table.find_elements(By.CSS_SELECTOR, "tbody tr") if r.is_displayed()]  # noqa: E731
    show_same_rows(page, False)
    rows = table.find_elements(By.CSS_SELECTOR, "tbody tr")
    assert len(rows) == 30 and len(visible()) == 9  # 21 'same' rows wait behind the checkbox
    show_same_rows(page)
    assert len(visible()) == 30
    show_same_rows(page, False)
    search = page.find_element(By.CSS_SELECTOR, ".filter .search")
    search.send_keys("sdpa bf16")
    shown = visible()
    assert shown and all("sdpa" in r.text and "bf16" in r.text for r in shown)
    assert any("same" in r.text for r in shown)  # a search looks at every row
    search.clear()
    search.send_keys(" ")
    links = [a.text for a in page.find_elements(By.CSS_SELECTOR, "nav a")]
    assert links[:5] == [
        "Which cuDNN for this host",
        "Scorecard",
        "By family",
        "Time ratio heatmap",
        "Read this first",
    ]
    assert "Verdicts against the baseline" in links
    target = page.find_element(By.CSS_SELECTOR, "nav a[href='#verdicts-against-the-baseline']")
    assert page.find_element(By.ID, "verdicts-against-the-baseline").text == "Verdicts against the baseline"
    assert target.is_displayed()


@pytest.mark.slow
@pytest.mark.parametrize("width", [1400, 1000])
def test_the_page_never_scrolls_sideways(page, width):
    page.set_window_size(width, 900)
    try:
        body, inner = page.execute_script("return [document.body.scrollWidth, window.innerWidth]")
        assert body <= inner, (body, inner)
        heatmap = page.find_element(By.CSS_SELECTOR, "#time-ratio-heatmap + figure img")
        assert page.execute_script("return arguments[0].getBoundingClientRect().right", heatmap) <= inner
    finally:
        page.set_window_size(800, 600)


@pytest.mark.slow
def test_a_phone_lays_the_page_out_at_its_own_width_and_it_never_scrolls_sideways(page):
    # without a viewport, a phone lays the page out 980 px wide and shrinks it: 5-px text at 390 px
    metrics = {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True}
    page.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    try:
        body, inner = page.execute_script("return [document.body.scrollWidth, window.innerWidth]")
        assert inner == 390 and body <= inner, (body, inner)
    finally:
        page.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
