"""3DSRBench tables and plots: a results table per group, common against uncommon
viewpoints, and the trained-VLM study's summary over seeds (``hf-real3d demo
--srbench_model``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from hf_real3d.srbench.format import CATEGORIES, GROUPS
from hf_real3d.stats import mean_std, seed_stats
from hf_real3d.tables import markdown_table, save_png

__all__ = ["SRBENCH_VIEW_CONFIGS", "SRBENCH_METRICS", "srbench_table",
           "srbench_viewpoint_table", "srbench_study_summary", "srbench_study_table",
           "plot_srbench_gap", "study_cell"]

SRBENCH_VIEW_CONFIGS = ("synthetic_common", "synthetic_uncommon")
SRBENCH_METRICS = ("circular", "flip", "flip_circular", "vanilla")


def _sr_get(res: dict[str, Any], metric: str, key: str | None = None, sub: str | None = None
            ) -> float | None:
    m = res.get(metric)
    if not isinstance(m, dict):
        return None
    if key is None:
        return m.get("overall")
    return (m.get(key) or {}).get(sub)


def srbench_study_summary(seeds: list[dict[str, Any]]) -> dict[str, Any]:
    """Per model and viewpoint kind: each metric overall, per group and per type as
    ``[values per seed]``; and the common − uncommon gap per seed."""
    models = list(seeds[0]["results"][SRBENCH_VIEW_CONFIGS[0]])
    out: dict[str, Any] = {"models": models, "metrics": {}, "gap": {}, "n": {}}
    for m in models:
        out["metrics"][m] = {}
        for config in SRBENCH_VIEW_CONFIGS:
            per = {}
            for metric in SRBENCH_METRICS:
                per[metric] = [_sr_get(s["results"][config][m], metric) for s in seeds]
                for g in GROUPS:
                    per[f"{metric}/{g}"] = [_sr_get(s["results"][config][m], metric, "per_group",
                                                 g) for s in seeds]
                for c in CATEGORIES:
                    per[f"{metric}/{c}"] = [_sr_get(s["results"][config][m], metric,
                                                 "per_category", c) for s in seeds]
            out["metrics"][m][config] = per
            out["n"].setdefault(config, [s["results"][config][m].get("n_questions")
                                         for s in seeds])
        out["gap"][m] = {metric: [None if c is None or u is None else c - u for c, u in zip(
            out["metrics"][m][SRBENCH_VIEW_CONFIGS[0]][metric],
            out["metrics"][m][SRBENCH_VIEW_CONFIGS[1]][metric])] for metric in SRBENCH_METRICS}
    return out


def study_cell(values: Sequence[float | None]) -> str:
    """``mean ± std`` when every seed has a value, else ``-``."""
    return mean_std(list(values)) if values and all(v is not None for v in values) else "-"


def srbench_table(results: dict[str, dict[str, Any]], metric: str = "circular") -> str:
    """Rows = models and baselines; columns = overall and the 4 groups (``metric``)."""
    header = ["Model", "Overall", "Height", "Location", "Orientation", "Multi-Object"]
    rows = []
    for name, r in results.items():
        m = r.get(metric, {})
        rows.append([name, m.get("overall")] + [m.get("per_group", {}).get(g)
                                                for g in ("height", "location", "orientation",
                                                          "multi_object")])
    return markdown_table(header, rows)


def srbench_viewpoint_table(common: dict[str, dict], uncommon: dict[str, dict],
                            metric: str = "circular") -> str:
    """Common vs uncommon viewpoints per model: overall and per group, with the drop."""
    header = ["Model", "Viewpoint", "Overall", "Height", "Location", "Orientation",
              "Multi-Object"]
    rows = []
    for name in common:
        for view, res in (("common", common[name]), ("uncommon", uncommon.get(name, {}))):
            m = res.get(metric, {})
            rows.append([name, view, m.get("overall")] + [
                m.get("per_group", {}).get(g) for g in ("height", "location", "orientation",
                                                        "multi_object")])
    return markdown_table(header, rows)


def srbench_study_table(seeds: Sequence[dict[str, Any]]) -> str:
    """CircularEval, FlipEval and both on common and uncommon renders, and the common −
    uncommon gap, per model of the trained-VLM study (mean ± std over seeds)."""
    summ = srbench_study_summary(list(seeds))
    met, gap = summ["metrics"], summ["gap"]
    header = ["Model"] + [f"{title} ({view})" if view != "gap" else "gap"
                          for title in ("Circular", "Flip", "Both")
                          for view in ("common", "uncommon", "gap")]
    rows = []
    for m in summ["models"]:
        cells = [m]
        for metric in ("circular", "flip", "flip_circular"):
            cells += [study_cell(met[m][SRBENCH_VIEW_CONFIGS[0]][metric]),
                      study_cell(met[m][SRBENCH_VIEW_CONFIGS[1]][metric]),
                      study_cell(gap[m][metric])]
        rows.append(cells)
    return markdown_table(header, rows)


def plot_srbench_gap(seeds: Sequence[dict[str, Any]], path: str | os.PathLike) -> bool:
    """CircularEval on common vs uncommon renders per model (mean, seed std as error bars)."""
    summ = srbench_study_summary(list(seeds))
    models = summ["models"]
    fig = Figure(figsize=(1.6 + 1.3 * len(models), 3.6))
    ax = fig.subplots()
    x = np.arange(len(models))
    for i, (config, color) in enumerate(zip(SRBENCH_VIEW_CONFIGS, ("#1f77b4", "#ff7f0e"))):
        vals = [seed_stats(summ["metrics"][m][config]["circular"]) for m in models]
        ax.bar(x + (i - 0.5) * 0.38, [v.mean if v.n else 0 for v in vals], 0.38,
               yerr=[v.std if v.n else 0 for v in vals], color=color, capsize=3,
               label=config.replace("synthetic_", ""))
    ax.set_xticks(x, [m.replace(" (", "\n(") for m in models], fontsize=7)
    ax.set_ylabel("CircularEval (%)")
    ax.legend(fontsize=7)
    ax.set_title("3DSRBench: common vs uncommon viewpoints", fontsize=9)
    save_png(fig, path)
    return True
