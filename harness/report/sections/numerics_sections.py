"""The numerics sections: each group's error against fp64 beside the baseline's, the rows flagged, and
every measurement beyond its precision's tolerance."""

from __future__ import annotations

from harness.report.analysis.model import Analysis
from harness.report.sections import table_values
from harness.report.sections.context import SectionContext, listed
from harness.report.writers.document import Section


def numerics(ctx: SectionContext) -> list[Section]:
    analysis, letters = ctx.analysis, ctx.letters
    num = analysis.numerics
    if num.empty:
        return []
    summary = []
    for key, rows in num.groupby("group", sort=False):
        group = str(key)
        summary.append(
            (
                letters.get(group, group),
                group,
                len(rows),
                int((rows["numerics"] == "worse").sum()),
                int((rows["numerics"] == "unchecked").sum()),
                f"{int(rows['same_digest'].sum())}/{len(rows)}",
                int((~rows["repeatable_baseline"]).sum()),
                int((~rows["repeatable_candidate"]).sum()),
            )
        )
    out = [
        Section(
            "Numerics against the baseline",
            "Per measurement, the error against the same workload in fp64 (relative RMSE, worst round) in "
            "the candidate "
            "may grow to m x the baseline's + tol/10 (m = 2 for the fp32 modes, 3 for bf16/fp16; tol 1e-4 "
            "fp32 (TF32 off), 1e-3 fp32 (torch defaults), fp32 (TF32 on) and fp16, 1e-2 bf16: TorchDynamo's "
            "rule); more NaNs than the baseline "
            "also fail. "
            "Output digests are compared bit for bit; 'not repeatable' counts measurements whose two calls "
            "differed.",
            (
                "",
                "group",
                "compared",
                "worse",
                "unchecked",
                "same digest as baseline",
                "not repeatable (baseline)",
                "not repeatable (candidate)",
            ),
            tuple(summary),
        )
    ]
    flagged = num[num["numerics"] != "ok"]
    if not flagged.empty:
        flagged_rows = tuple(
            (
                letters.get(r.group, r.group),
                r.workload,
                r.mode,
                r.knobs,
                r.numerics,
                table_values.number(r.rel_rmse_baseline, ".2e"),
                table_values.number(r.rel_rmse_candidate, ".2e"),
                r.reason,
            )
            for r in flagged.itertuples()
        )
        out.append(
            Section(
                "Numerics: flagged",
                "",
                (
                    "group",
                    "workload",
                    "mode",
                    "knobs",
                    "numerics",
                    "rel. RMSE baseline",
                    "rel. RMSE candidate",
                    "why",
                ),
                flagged_rows,
                level=3,
            )
        )
    return out


def beyond_tolerance(ctx: SectionContext) -> list[Section]:
    return listed(_beyond_tolerance(ctx.analysis, ctx.letters))


def _beyond_tolerance(analysis: Analysis, letters: dict[str, str]) -> Section | None:
    beyond = analysis.beyond_tolerance
    if beyond.empty:
        return None
    rows = tuple(
        (
            letters.get(str(r["group"]), str(r["group"])),
            str(r["workload"]),
            str(r["mode"]),
            str(r["knobs"]),
            f"{r['rounds_beyond']}/{r['rounds']}",
            table_values.number(r["rel_rmse"], ".2e"),
            table_values.number(r["tolerance"], ".0e"),
            f"{r['nan']} NaN, {r['inf']} Inf" if r["nan"] or r["inf"] else "",
        )
        for r in beyond.to_dict("records")
    )
    return Section(
        "Numerics beyond tolerance",
        "Measurements whose error against fp64 (relative RMSE) is beyond the tolerance the suite holds "
        "their precision to (fp32 (TF32 off) 1e-5; 5e-3 for fp32 math that TF32 was allowed in: fp32 (TF32 "
        "on), and fp32 (torch defaults) where its flags allowed it; bf16 1.6e-2, fp16 1e-3), or that gave "
        "NaN or Inf outputs, in any group, the baseline's included. The "
        "gate fails a candidate row beyond its tolerance only where every baseline round is within it "
        "(the switch put it there); beyond it on both sides is listed here and not gated, since the "
        "switch did not change it: the workload's error or its tolerance needs a look.",
        ("group", "workload", "mode", "knobs", "rounds beyond", "worst rel. RMSE", "tolerance", "NaN/Inf"),
        rows,
    )
