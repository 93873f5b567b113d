"""What a CI system reads: ``summary.md`` (a pull-request comment or ``$GITHUB_STEP_SUMMARY``: the answer
and the rows that are not ``same``, under 64 KB) and ``junit.xml`` (slower and failed rows as failures,
inconclusive and missing ones as skipped)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.report.analysis import stats
from harness.report.analysis.model import Analysis, View
from harness.report.sections import answer, family_sections, next_steps
from harness.report.writers import markdown

SUMMARY_LIMIT = 64 * 1024  # GitHub's step summary takes up to 1 MiB; a PR comment is best far smaller
ROOM = 200  # bytes kept free under SUMMARY_LIMIT
STEP_LINES = 12  # of "What to do next", each at most markdown.MAX_LINE characters
ORDER = {"slower": 0, "failed": 1, "missing": 2, "inconclusive": 3, "faster": 4}
# XML 1.0 allows only these characters (its section 2.2): one other (a NUL, an ESC, U+FFFE, a lone
# surrogate) anywhere in a result's text and a CI system refuses the whole file
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def summary(view: View, analysis: Analysis, sources: Sequence[Path] = ()) -> str:
    """The answer and every changed row, largest change first, under SUMMARY_LIMIT bytes whatever the
    results hold: a line of prose at most ``markdown.MAX_LINE`` characters (the environment one line), and
    the scorecard and the changed rows cut to the rows that fit."""
    line = markdown.MAX_LINE
    baseline = view.labels.get(view.baseline, view.baseline)
    parts = [
        "### " + markdown.inline(f"{view.name}: against {baseline}", line - 4),
        "",
        markdown.inline(answer.environment_line(view, analysis), line),
        "",
        answer.outcome_line(analysis),
        *(f"- {markdown.inline(sentence, line - 2)}" for sentence in answer.validity(view, analysis)),
    ]
    steps = next_steps.section(view, analysis, list(sources), view.matrix)
    if steps is not None:  # the answer ends with what to do next, as the report's does
        lines = markdown.wrap(steps.intro.split("\n\n")[0]).split("\n")  # the list, not its commands
        shown = [ln for ln in lines if len(ln) <= line][:STEP_LINES]
        cut = f"- ... {len(lines) - len(shown)} more lines in report.md" if len(shown) < len(lines) else ""
        parts += ["", f"**{steps.title}:**", *shown, *([cut] if cut else [])]
    card = answer.scorecard(view, analysis)
    rows = _changed(view, analysis)
    room = SUMMARY_LIMIT - ROOM - _size(parts)
    if card is not None:
        shown = _rows([list(r) for r in card.rows], list(card.headers), room // 2 if rows else room)
        parts += ["", *shown]
    families = [
        f"- {markdown.inline(sentence, line - 2)}" for sentence in family_sections.sentences(analysis)
    ]
    if families and _size(families) < (SUMMARY_LIMIT - ROOM - _size(parts)) // 2:
        parts += [
            "",
            "**By family** (model rows first; a family's count, never one row, is the release's):",
            *families,
        ]
    if rows:
        head = ["workload", "mode", "vs", "verdict", "ratio", "interval", "what ran"]
        parts += ["", f"**{len(rows)} rows are not `same`** (largest change first):", ""]
        parts += _rows(rows, head, SUMMARY_LIMIT - ROOM - _size(parts))
    return "\n".join(parts) + "\n"


def _rows(rows: list[list[Any]], head: list[str], room: int) -> list[str]:
    """A table of as many of ``rows`` as fit in ``room`` bytes, then how many more report.md lists."""
    lines = markdown.table([], head).split("\n")
    used = _size([*lines, "", f"... and {len(rows)} more in report.md"])
    for row in rows:
        line = markdown.table([row], head).split("\n")[-1]
        used += _size([line])
        if used > room:
            break
        lines.append(line)
    shown = len(lines) - 2
    if not shown:
        return [f"{len(rows)} rows: see report.md"]
    return lines + (["", f"... and {len(rows) - shown} more in report.md"] if shown < len(rows) else [])


def _size(lines: list[str]) -> int:
    return sum(len(line.encode(errors="backslashreplace")) + 1 for line in lines)


def _changed(view: View, analysis: Analysis) -> list[list[Any]]:
    timing = analysis.timing
    if timing.empty:
        return []
    rows = [r for r in timing.to_dict("records") if r.get("verdict") in ORDER]
    rows.sort(key=lambda r: (ORDER[r["verdict"]], -stats.change_size(r.get("ratio"))))
    return [
        [
            r["workload"],
            r["mode"],
            view.letters.get(str(r["group"]), str(r["group"])),
            r["verdict"],
            f"{r['ratio']:.3f}" if stats.finite(r.get("ratio")) else "",
            stats.interval_text(r.get("ci_low"), r.get("ci_high")),
            r.get("ran_change") or r.get("what_ran") or "",
        ]
        for r in rows
    ]


def junit(view: View, analysis: Analysis) -> str:
    """One test suite per candidate group, one test case per row: slower and failed rows fail, inconclusive
    and missing ones are skipped (not evidence either way), same and faster ones pass."""
    suites = ET.Element("testsuites", name=view.name)
    timing = analysis.timing
    judged = timing[timing["verdict"].notna()].to_dict("records") if not timing.empty else []
    for group in view.groups:
        if group == view.baseline:
            continue
        mine = [r for r in judged if r["group"] == group]
        failures = sum(r["verdict"] in ("slower", "failed") for r in mine)
        skipped = sum(r["verdict"] in ("inconclusive", "missing") for r in mine)
        suite = ET.SubElement(
            suites,
            "testsuite",
            name=f"{view.labels.get(group, group)} vs {view.labels.get(view.baseline, view.baseline)}",
            tests=str(len(mine)),
            failures=str(failures),
            skipped=str(skipped),
            errors="0",
        )
        for r in mine:
            case = ET.SubElement(
                suite, "testcase", classname=group, name=f"{r['workload']} {r['mode']} [{r['knobs']}]"
            )
            reason = str(r.get("reason") or r["verdict"])
            if r["verdict"] in ("slower", "failed"):
                ET.SubElement(case, "failure", message=reason, type=r["verdict"])
            elif r["verdict"] in ("inconclusive", "missing"):
                ET.SubElement(case, "skipped", message=reason)
    for run in analysis.gate.failed_runs:
        suite = ET.SubElement(suites, "testsuite", name="runs", tests="1", failures="0", errors="1")
        case = ET.SubElement(suite, "testcase", classname="runs", name=run.split(":")[0])
        ET.SubElement(case, "error", message=run)
    ET.indent(suites)
    text: str = ET.tostring(suites, encoding="unicode", xml_declaration=True)
    # markup is ASCII: a character XML forbids can only be in a value, written as its Python escape
    return _NOT_XML.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text) + "\n"
