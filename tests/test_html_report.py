"""The HTML report in a real browser: Debian's headless Chromium, driven through chromedriver."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import REPO, run_cli

CHROMEDRIVER = shutil.which("chromedriver")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SHARDS = sorted((REPO / "reports" / "gpu-verdicts").glob("results-shard*"))

if not (CHROMEDRIVER and CHROMIUM):
    if os.environ.get("CI") == "true":
        pytest.fail(
            "CI needs chromium and chromedriver (apt-get install chromium chromium-driver)", pytrace=False
        )
    pytest.skip(
        "no chromium/chromedriver here (apt-get install chromium chromium-driver)", allow_module_level=True
    )

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    out = tmp_path_factory.mktemp("html")
    args = [a for shard in SHARDS for a in ("--results", str(shard))]
    done = run_cli("report", *args, "--out", str(out))
    assert done.returncode == 1, done.stderr  # the committed GPU run holds real regressions
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        driver.get((out / "report.html").as_uri())
        yield driver
    finally:
        driver.quit()


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
    return heading.find_element(By.XPATH, "following-sibling::table[1]")


def show_same_rows(page, shown: bool = True) -> None:
    box = page.find_element(By.CSS_SELECTOR, ".show-same")
    if box.is_selected() != shown:
        box.click()


def column(table, name: str) -> list[str]:
    headers = [th.text.rstrip(" ▲▼") for th in table.find_elements(By.CSS_SELECTOR, "thead th")]
    index = headers.index(name) + 1
    return [td.text for td in table.find_elements(By.CSS_SELECTOR, f"tbody tr td:nth-child({index})")]


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


def test_numbers_link_to_their_measurements(page):
    links = [a.get_attribute("href") for a in verdict_table(page).find_elements(By.TAG_NAME, "a")]
    assert links and all(href.startswith("file://") and href.endswith(".measurement.json") for href in links)
    assert all(Path(href.removeprefix("file://")).is_file() for href in links[:20])


def test_the_answer_comes_first_and_the_method_is_folded_away(page):
    headings = [h.text for h in page.find_elements(By.TAG_NAME, "h2")]
    assert headings.index("Scorecard") < headings.index("Verdicts against the baseline")
    assert headings[:2] == ["Scorecard", "Read this first"], headings
    body = page.find_element(By.TAG_NAME, "body").text
    assert body.index("NVIDIA H100 80GB HBM3") < body.index("Scorecard")  # the GPU in the first lines
    scorecard = page.find_elements(By.CSS_SELECTOR, "table.sortable")[0].text
    assert "conv2d_r50_3x3 bf16: 6.74x slower" in scorecard and "sdpa bf16: 1.54x slower" in scorecard
    method = page.find_element(By.TAG_NAME, "details")
    assert "Method" in method.text and method.get_attribute("open") is None
    paragraph = method.find_elements(By.TAG_NAME, "p")[0]
    assert not paragraph.is_displayed()  # folded until the reader opens it
    method.find_element(By.TAG_NAME, "summary").click()
    assert paragraph.is_displayed() and "Mann-Whitney" in paragraph.text


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
    assert links[:2] == ["Scorecard", "Read this first"] and "Verdicts against the baseline" in links
    target = page.find_element(By.CSS_SELECTOR, "nav a[href='#verdicts-against-the-baseline']")
    assert page.find_element(By.ID, "verdicts-against-the-baseline").text == "Verdicts against the baseline"
    assert target.is_displayed()
