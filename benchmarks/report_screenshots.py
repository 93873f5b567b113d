"""Screenshots of a report (or of any page, a site's) as a reader meets it, how far down the answer is,
whether the page is wider than the window, and how wide its plots are.

    python -m benchmarks.report_screenshots REPORT_DIR [--out DIR] [--shots top markdown heatmap series]
                                           [--width PX] [--height PX]
    python -m benchmarks.report_screenshots PAGE.html[#anchor] [--out DIR] [--name NAME] [--width PX]

The HTML page at 1400 px (or --width: 390 is a phone's, laid out as a phone lays it out) in Debian's
headless Chromium (chromedriver), and report.md rendered the way
GitHub shows a file (python-markdown with tables, in GitHub's 946-px content column, GitHub's font
stack and table borders), each cut to the first screen (900 px, or --height). Prints, for each, the page
height and the distance from the top to the outcome line and to the scorecard table: what a reader
scrolls before the answer. For the HTML page it prints ``document.body.scrollWidth`` beside
``window.innerWidth`` (a body wider than the window scrolls sideways) and the width of its widest plot (an
``svg.chart`` of the site, a report's figure). A page named by itself (a site's index or row page; an
``#anchor`` scrolls to it) gets its first screen alone, ``screenshot-NAME-WIDTHpx.png``. ``heatmap`` and
``series`` are the
screen that starts at the time ratio heatmap and at the first chart across releases, cut to the figure
(the window's full width). Every PNG is written with a 256-color palette (a screenshot is flat color and
text: a third of the bytes, the same to read). Needs selenium and Pillow, and markdown for the
``markdown`` shot (pip install selenium markdown pillow).
"""

from __future__ import annotations

import argparse
import io
import shutil
import tempfile
from pathlib import Path
from typing import Any

GITHUB_CSS = """
body{font:16px/1.5 -apple-system,BlinkMacSystemFont,"Segoe UI","Noto Sans",Helvetica,Arial,sans-serif;
     color:#1f2328;margin:0;background:#fff}
article{max-width:946px;margin:24px auto;padding:32px;border:1px solid #d1d9e0;border-radius:6px}
table{border-collapse:collapse;display:block;overflow:auto;width:max-content;max-width:100%}
th,td{border:1px solid #d1d9e0;padding:6px 13px} tr:nth-child(2n){background:#f6f8fa}
code,pre{font:85% ui-monospace,SFMono-Regular,Menlo,monospace;background:#f6f8fa}
pre{padding:16px;overflow:auto} h1,h2{border-bottom:1px solid #d1d9e0;padding-bottom:.3em}
"""
SCREEN = (1400, 900)
PHONE = 600  # a window narrower than this is laid out as a phone's (Chromium's mobile emulation)
SHOTS = ("top", "markdown", "heatmap", "series")
# the page's width against the window's, and the widest plot (a site's chart, a report's figure image)
WIDTHS = """
var plots = Array.from(document.querySelectorAll('svg.chart, figure img'))
  .map(p => Math.round(p.getBoundingClientRect().width));
return [document.body.scrollWidth, window.innerWidth, plots.length ? Math.max(...plots) : null];
"""
COLORS = 256  # the palette of a written screenshot (64 bands the color scale into false greys)
# the figure whose caption starts so, scrolled to the top of the screen with the heading before it, if any;
# returns the box of the two on the screen (left, top, right, bottom), or null
FIGURE = """
var figure = Array.from(document.querySelectorAll('figure'))
  .find(f => f.querySelector('figcaption').textContent.startsWith(arguments[0]));
if (!figure) return null;
var before = figure.previousElementSibling, top = figure;
if (before && /^H[23]$/.test(before.tagName)) top = before;
window.scrollTo(0, top.getBoundingClientRect().top + window.scrollY - 8);
var a = top.getBoundingClientRect(), b = figure.getBoundingClientRect();
return [0, Math.max(0, a.top - 8), window.innerWidth, Math.min(window.innerHeight, b.bottom + 8)]
  .map(Math.round);
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "report", help="a report folder (report.html, report.md), or a page (PAGE.html[#anchor])"
    )
    parser.add_argument("--out", type=Path, help="where the PNGs go (default: the report folder)")
    parser.add_argument("--shots", nargs="+", choices=SHOTS, default=list(SHOTS), help="which screenshots")
    parser.add_argument("--width", type=int, default=SCREEN[0], help="the window's width (px; 390: a phone)")
    parser.add_argument("--height", type=int, default=SCREEN[1], help="the window's height (px)")
    parser.add_argument("--name", help="a page's screenshot: screenshot-NAME-WIDTHpx.png (default: its name)")
    args = parser.parse_args()
    where, _, anchor = args.report.partition("#")
    page = Path(where)
    out = args.out or (page if page.is_dir() else page.parent)
    out.mkdir(parents=True, exist_ok=True)
    driver = _driver(args.width, args.height)
    try:
        if not page.is_dir():
            url = page.resolve().as_uri() + (f"#{anchor}" if anchor else "")
            _page(driver, url, out / f"screenshot-{args.name or page.stem}-{args.width}px.png", args)
            return
        suffix = f"{args.width}px"
        driver.get((page / "report.html").resolve().as_uri())
        _widths(driver, args.width)
        if "top" in args.shots:
            _shot(driver, out / f"screenshot-html-{suffix}.png", f"HTML at {args.width} px", args.height)
        for shot, caption in (("heatmap", "time ratio heatmap"), ("series", "across releases")):
            if shot not in args.shots:
                continue
            box = driver.execute_script(FIGURE, caption)
            if box:
                _save(driver, out / f"screenshot-html-{suffix}-{shot}.png", f"the screen at '{caption}'", box)
            else:
                print(f"no figure captioned '{caption}...' in this report")
        if "markdown" in args.shots:
            _markdown(driver, page, out, args.height)
    finally:
        driver.quit()


def _driver(width: int, height: int) -> Any:
    """Headless Chromium whose window's inner size is exactly ``width`` x ``height`` (headless Chromium's
    window keeps some height for itself); narrower than PHONE, laid out as a phone's."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    options.add_argument(f"--window-size={max(width, 500)},{height}")
    driver = webdriver.Chrome(
        service=Service(shutil.which("chromedriver") or "chromedriver"), options=options
    )
    metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < PHONE}
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    return driver


def _widths(driver: Any, width: int) -> None:
    body, window, plot = driver.execute_script(WIDTHS)
    verdict = "fits" if body <= window else f"scrolls sideways by {body - window} px"
    plots = f"; the widest plot {plot} px" if plot else ""
    print(
        f"at {width} px: document.body.scrollWidth {body} px, window.innerWidth {window} px: {verdict}{plots}"
    )


def _page(driver: Any, url: str, path: Path, args: argparse.Namespace) -> None:
    """A page's first screen (from its anchor, if the URL names one)."""
    driver.get(url)
    _widths(driver, args.width)
    height = driver.execute_script("return document.body.scrollHeight")
    print(f"{url}: page {height} px tall")
    _save(driver, path, f"{path.stem} at {args.width} px")


def _markdown(driver: object, report: Path, out: Path, height: int) -> None:
    import markdown

    body = markdown.markdown((report / "report.md").read_text(), extensions=["tables", "fenced_code"])
    with tempfile.TemporaryDirectory() as scratch:
        page = Path(scratch) / "github.html"
        page.write_text(
            f"<!DOCTYPE html><meta charset='utf-8'><style>{GITHUB_CSS}</style><article>{body}</article>"
        )
        driver.get(page.as_uri())  # type: ignore[attr-defined]
        _shot(driver, out / "screenshot-markdown-github-width.png", "Markdown at GitHub's 946 px", height)


def _shot(driver: object, path: Path, what: str, screen: int) -> None:
    height = driver.execute_script("return document.body.scrollHeight")  # type: ignore[attr-defined]
    outcome = driver.execute_script(  # type: ignore[attr-defined]
        "var b = Array.from(document.querySelectorAll('b,strong'))"
        ".find(e => e.textContent.startsWith('Outcome'));"
        "return b ? Math.round(b.getBoundingClientRect().top + window.scrollY) : null"
    )
    scorecard = driver.execute_script(  # type: ignore[attr-defined]
        "var h = Array.from(document.querySelectorAll('h2'))"
        ".find(e => e.textContent.startsWith('Scorecard'));"
        "var n = h ? h.nextElementSibling : null;"
        "while (n && n.tagName !== 'TABLE' && !n.querySelector('table')) n = n.nextElementSibling;"
        "return n ? Math.round(n.getBoundingClientRect().bottom + window.scrollY) : null"
    )
    driver.execute_script("window.scrollTo(0, 0)")  # type: ignore[attr-defined]
    print(
        f"{what}: page {height} px tall; the outcome line at {outcome} px, the scorecard table ends at "
        f"{scorecard} px (the first screen shows {screen} px)"
    )
    _save(driver, path, what)


def _save(driver: object, path: Path, what: str, box: list[int] | None = None) -> None:
    """The screen (or ``box`` of it: the page's full width, the figure's height) as an 8-bit palette PNG."""
    from PIL import Image

    screen = Image.open(io.BytesIO(driver.get_screenshot_as_png()))  # type: ignore[attr-defined]
    if box:
        screen = screen.crop(tuple(box))
    flat = screen.convert("RGB").quantize(COLORS, method=Image.Quantize.MAXCOVERAGE, dither=Image.Dither.NONE)
    flat.save(path, optimize=True)
    print(f"  {what}: {screen.width}x{screen.height} px, {path.stat().st_size // 1024} KB -> {path}")


if __name__ == "__main__":
    main()
