"""Screenshots of the top of a report as a reader first meets it, and how far down the answer is.

    python -m benchmarks.report_screenshots REPORT_DIR [--out DIR]

The HTML page at 1400 px in Debian's headless Chromium (chromedriver), and report.md rendered the way
GitHub shows a file (python-markdown with tables, in GitHub's 946-px content column, GitHub's font
stack and table borders), each cut to the first screen (900 px). Prints, for each, the page height and
the distance from the top to the outcome line and to the scorecard table: what a reader scrolls before
the answer. Needs selenium and markdown (pip install selenium markdown).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, help="a report folder (report.html, report.md)")
    parser.add_argument("--out", type=Path, help="where the PNGs go (default: the report folder)")
    args = parser.parse_args()
    out = args.out or args.report
    import markdown
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    options.add_argument(f"--window-size={SCREEN[0]},{SCREEN[1]}")
    driver = webdriver.Chrome(
        service=Service(shutil.which("chromedriver") or "chromedriver"), options=options
    )
    try:
        driver.get((args.report / "report.html").resolve().as_uri())
        _shot(driver, out / "screenshot-html-1400px.png", "HTML at 1400 px")
        body = markdown.markdown(
            (args.report / "report.md").read_text(), extensions=["tables", "fenced_code"]
        )
        with tempfile.TemporaryDirectory() as scratch:
            page = Path(scratch) / "github.html"
            page.write_text(
                f"<!DOCTYPE html><meta charset='utf-8'><style>{GITHUB_CSS}</style><article>{body}</article>"
            )
            driver.get(page.as_uri())
            _shot(driver, out / "screenshot-markdown-github-width.png", "Markdown at GitHub's 946 px")
    finally:
        driver.quit()


def _shot(driver: object, path: Path, what: str) -> None:
    height = driver.execute_script("return document.body.scrollHeight")  # type: ignore[attr-defined]
    outcome = driver.execute_script(  # type: ignore[attr-defined]
        "var b = Array.from(document.querySelectorAll('b,strong'))"
        ".find(e => e.textContent.startsWith('Outcome'));"
        "return b ? Math.round(b.getBoundingClientRect().top + window.scrollY) : null"
    )
    scorecard = driver.execute_script(  # type: ignore[attr-defined]
        "var h = Array.from(document.querySelectorAll('h2'))"
        ".find(e => e.textContent.startsWith('Scorecard'));"
        "var n = h; while (n && n.tagName !== 'TABLE') n = n.nextElementSibling;"
        "return n ? Math.round(n.getBoundingClientRect().bottom + window.scrollY) : null"
    )
    driver.save_screenshot(str(path))  # type: ignore[attr-defined]
    print(
        f"{what}: page {height} px tall; the outcome line at {outcome} px, the scorecard table ends at "
        f"{scorecard} px (the first screen shows {SCREEN[1]} px) -> {path}"
    )


if __name__ == "__main__":
    main()
