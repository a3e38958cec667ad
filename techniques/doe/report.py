"""The transparent report of a DLMT run: ``dlmt.md`` and one SVG per step.

Section III of Bruel et al. (CCGRID'19) makes each step explainable: which
factors mattered (the ANOVA table), which levels were fixed and why (the
fitted model and its prediction).  :func:`report_files` renders what
:class:`techniques.doe.dlmt.DLMT` recorded per step as text files; the
technique hands them out through ``state_dict()["report_files"]`` so the
core's report writer can store them without knowing this package.  The plot
of predicted against measured values is plain SVG (no plotting library
needed).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

__all__ = ["render_markdown", "render_svg", "report_files", "write_report"]


def _num(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        if not math.isfinite(v):
            return "failed" if v > 0 else str(v)
        return f"{v:.4g}"
    return str(v)


def _cfg(c: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in c.items())


def _all_fixed(tech: Any) -> dict[str, Any]:
    """Every level fixed so far, the last step's included even before the iteration resumes."""
    out: dict[str, Any] = {}
    for s in tech.steps:
        out.update(s.get("fixed") or {})
    return out


def _measured(tech: Any, step: dict[str, Any]) -> float | None:
    if "predicted_measured" in step:
        return step["predicted_measured"]
    return tech.value_of(step["predicted_config"])  # measured, the iteration not resumed yet


def render_markdown(tech: Any) -> str:
    """Per step: sub-space, model, design, ANOVA table, significant factors, fixed levels."""
    lines = ["# DLMT report", "",
             (f"Technique options: steps={tech.n_steps}, design_size={tech.design_size or 'p + ' + str(tech.extra_runs)}, "
              f"significance={tech.significance}, terms={tech.terms!r}, candidates={tech.n_candidates} "
              f"({tech.sampling}), transform={getattr(tech, 'transform', 'none')}, rest={getattr(tech, 'rest', 'stop')}, "
              f"budget={tech.budget}."), "",
             f"Fixed at the end: {_cfg(_all_fixed(tech)) or 'nothing'}.",
             f"Best measured: {_num(tech.best_value)} at {_cfg(tech.best_config or {})}.", ""]
    for s in tech.steps:
        k = s["step"]
        lines += [f"## Step {k}", "",
                  f"- fixed before this step: {_cfg(s['fixed_before']) or 'nothing'}",
                  f"- free factors: {', '.join(s['free'])}"]
        if "candidates" in s:
            c = s["candidates"]
            lines.append(f"- candidate set: {c['count']} valid configurations "
                         + f"({'the whole sub-space' if c['exact'] else c['sampling'] + ' sample'})")
        if "model" in s:
            reused = (f", {s['reused']} of them earlier runs of this sub-space kept as fixed rows (reuse)"
                      if s.get("reused") else "")
            lines += [f"- model: `{s['model']}`",
                      (f"- design: {s['design_size']} runs{reused}, Fedorov exchange ({s['fedorov_iterations']} "
                       f"iterations), D-criterion {s['d_criterion']:.4g} (coded [-1, 1] columns)")]
        for key, text in (("aliased", "terms dropped as aliased (singular under the constraints)"),
                          ("dropped_categorical", "categorical factors left out for the budget")):
            if s.get(key):
                lines.append(f"- {text}: {', '.join(s[key])}")
        if s.get("failed"):
            lines.append(f"- failed runs (left out of the fit): {s['failed']}")
        if "design" in s:
            names = list(s["design"][0]["config"]) if s["design"] else []
            lines += ["", "Design and measurements:", "",
                      "| # | " + " | ".join(names) + " | value |", "|---" * (len(names) + 2) + "|"]
            for i, row in enumerate(s["design"], 1):
                lines.append(f"| {i} | " + " | ".join(str(row["config"][n]) for n in names)
                             + f" | {_num(row['value'])} |")
        if s.get("transform"):
            ncv = f" (score test for non-constant variance: Pr = {_num(s['ncv_p'])})" if "ncv_p" in s else ""
            lines.append(f"- response transform for the ANOVA and the model: {s['transform']}{ncv}")
        if "anova" in s:
            lines += ["", f"ANOVA (F test of each term, the others kept) of `{s['analysed_model']}`, R^2 = {_num(s.get('r2'))}:", "",
                      "| term | Df | Sum Sq | F value | Pr(>F) | |", "|---|---|---|---|---|---|"]
            for r in s["anova"]:
                star = "" if r["p"] is None else ("***" if r["p"] < 0.001 else "**" if r["p"] < 0.01
                                                  else "*" if r["p"] < 0.05 else "." if r["p"] < 0.1 else "")
                lines.append(f"| {r['term']} | {r['df']:.0f} | {_num(r['sum_sq'])} | {_num(r['F'])} | "
                             f"{_num(r['p'])} | {star} |")
            lines += ["", (f"Significant at Pr(>F) < {tech.significance}: "
                           f"{', '.join(s['significant_terms']) or 'none'}")]
        if "prediction_model" in s:
            coef = ", ".join(f"{k} = {_num(v)}" for k, v in s["coefficients"].items())
            lines += ["", f"Prediction model `{s['prediction_model']}`: {coef}.",
                      (f"Minimum predicted over {s['prediction_pool']} valid configurations: "
                       f"{_num(s['predicted_value'])} at {_cfg(s['predicted_config'])}; "
                       f"measured {_num(_measured(tech, s))}."),
                      f"**Fixed**: {_cfg(s['fixed'])}"
                      + (f" (levels of {s['levels_from']}, levels=\"checked\")." if s.get("levels_from") else "."),
                      "", f"![predicted vs measured](dlmt_step{k}.svg)"]
        if s.get("note"):
            lines += ["", f"Note: {s['note']}"]
        lines.append("")
    rest = getattr(tech, "rest_log", None)
    if rest:
        how = {"neighbourhood": "neighbours (one level away) of the best measured point, else uniform samples,",
               "model": "the highest expected improvement of a Gaussian process fitted to every measured point,"
               }.get(rest.get("mode"), "uniform samples")
        released = rest.get("released_steps", 0)
        where = (f"the last sub-space, then, once it was exhausted, the levels of the last {released} fixing "
                 f"step(s) released (still fixed at the end: {_cfg(rest['fixed']) or 'nothing'})" if released
                 else f"the last sub-space ({_cfg(rest['fixed']) or 'nothing fixed'})")
        lines += ["## After the steps", "",
                  (f"The budget left ({rest['measured']} evaluations) went to {how} in {where}; "
                   f"best of them: {_num(rest['best'])}."), ""]
    return "\n".join(lines)


def render_svg(step: dict[str, Any], size: int = 320) -> str:
    """Scatter of the prediction model's fitted values against the measured ones, with y = x."""
    pts = [(p, m) for p, m in step.get("fitted", []) if math.isfinite(p) and math.isfinite(m)]
    pad = 40
    vals = [v for pt in pts for v in pt] or [0.0, 1.0]
    lo, hi = min(vals), max(vals)
    hi = hi if hi > lo else lo + 1.0

    def xy(p: float, m: float) -> tuple[float, float]:
        s = (size - 2 * pad) / (hi - lo)
        return pad + (m - lo) * s, size - pad - (p - lo) * s

    (x0, y0), (x1, y1) = xy(lo, lo), xy(hi, hi)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{size}" height="{size}">',
           f'<rect x="{pad}" y="{pad}" width="{size - 2 * pad}" height="{size - 2 * pad}" fill="none" stroke="#888"/>',
           f'<line x1="{x0:.1f}" y1="{y0:.1f}" x2="{x1:.1f}" y2="{y1:.1f}" stroke="#aaa" stroke-dasharray="4"/>',
           f'<text x="{size / 2}" y="{size - 8}" text-anchor="middle" font-size="12">measured</text>',
           (f'<text x="12" y="{size / 2}" font-size="12" transform="rotate(-90 12 {size / 2})" '
            f'text-anchor="middle">predicted</text>'),
           f'<text x="{size / 2}" y="20" text-anchor="middle" font-size="13">DLMT step {step["step"]}</text>',
           f'<text x="{pad}" y="{size - pad + 14}" font-size="10">{lo:.3g}</text>',
           f'<text x="{size - pad}" y="{size - pad + 14}" font-size="10" text-anchor="end">{hi:.3g}</text>']
    for p, m in pts:
        x, y = xy(p, m)
        out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="#1f77b4"/>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def report_files(tech: Any) -> dict[str, str]:
    """File name -> text: ``dlmt.md`` and ``dlmt_stepK.svg`` for every step that fixed factors."""
    files = {"dlmt.md": render_markdown(tech)}
    for s in tech.steps:
        if "fitted" in s:
            files[f"dlmt_step{s['step']}.svg"] = render_svg(s)
    return files


def write_report(tech: Any, directory: str | Path) -> list[str]:
    """Write the report files of ``tech`` into ``directory`` (for ask/tell and script users)."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in report_files(tech).items():
        (d / name).write_text(text, encoding="utf-8")
        paths.append(str(d / name))
    return paths
