"""``hf-real3d demo``: the Real-3DQA paper's story end to end on the embedded benchmark.

One seed runs the stages of :mod:`hf_real3d.demo.stages` in order: the data; the filter's
pair, the control SFT and the blind reference, trained side by side (``--jobs``); the
filtered set, built by the filter's pair; the 3DR-FT arms and their equal-training
controls (none of the scored models is used by the filter); scoring, the diagnosis and
bias pruning of the filtered set; it returns a
:class:`~hf_real3d.demo.results.SeedResult`. After every seed, the synthetic 3DSRBench
study. The run is a :class:`~hf_real3d.demo.results.DemoResults` saved as
``results.json``, from which :mod:`hf_real3d.demo.report` renders ``report.md`` and the
plots. ``--seeds N`` repeats the seeds (mean ± std); ``--srbench_model`` adds a VLM
trained on the renders per seed; ``--skip_real3dqa`` runs the 3DSRBench part alone.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path

from hf_real3d.real3dqa.draw import draw_question

from .config import DemoConfig, log
from .pool import TrainingPool
from .report import write_demo_report
from .results import DemoResults, SeedResult, results_summary
from .stages import (
    bias_pruning,
    diagnose,
    filter_pair,
    first_models,
    make_data,
    score_models,
    scored_models,
    srbench_study,
    viewpoint_study,
)

__all__ = ["run_seed", "run_demo"]


def run_seed(cfg: DemoConfig, seed: int, pool: TrainingPool | None = None) -> SeedResult:
    """One seed: the filter's own (full, blind) pair (seed + 1000) builds the filtered set;
    the scored models (SFT control, blind reference, 3DR-FT) are trained apart with
    ``seed`` and never used by the filter. ``pool`` trains independent models side by side
    (default: one after the other, here)."""
    run = make_data(cfg, seed, pool)
    models = first_models(run)
    orig, filtered = filter_pair(run, models)
    blind_path = scored_models(run, models)
    scores = score_models(run, models, orig, filtered)
    why = diagnose(run, models, filtered, scores, blind_path)
    pruning = bias_pruning(run, filtered, scores)
    rotation = viewpoint_study(run, models, filtered, scores)
    navigate = [r["question_id"] for r in filtered.rotation_rows if r["kind"] == "navigate"]
    build = json.loads(json.dumps(asdict(filtered.summary), default=str))
    (run.root / "summary.json").write_text(json.dumps({"build": build}, indent=2))
    return SeedResult(
        seed=seed, metrics=scores.metrics, ablations=why.ablations, attention=why.attention,
        flips=why.flips, build=build,
        example_question_id=int(navigate[0] if navigate
                                else filtered.rotation_rows[0]["question_id"]),
        root=str(run.root), by_kind=why.by_kind, weights=why.weights, text_only=why.text_only,
        pruning=pruning, rotation=rotation)


def run_demo(cfg: DemoConfig) -> Path:
    """Run every seed, then the synthetic 3DSRBench; write ``results.json``, ``report.md``
    and the plots under ``cfg.out``. Returns the report's path."""
    cfg.check()  # every option before any work
    t0 = time.time()
    out = Path(cfg.out)
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"`out` {out}: exists and is not a folder; give another `out`")
    out.mkdir(parents=True, exist_ok=True)
    with TrainingPool(cfg.jobs) as pool:
        seeds = [] if cfg.skip_real3dqa else [run_seed(cfg, seed, pool)
                                               for seed in cfg.seed_list()]
    if seeds:
        draw_question(Path(seeds[0].root) / "synth/sqa3d",
                      Path(seeds[0].root) / "synth/scans", seeds[0].example_question_id,
                      out / "topdown.png")
    results = DemoResults(asdict(cfg), seeds, srbench_study(cfg, out))
    results.wall_time_s = round(time.time() - t0, 1)
    payload = {**results_summary(results), "details": asdict(results)}
    (out / "results.json").write_text(json.dumps(payload, indent=2, default=str))
    report = write_demo_report(results, out)
    log(f"wrote {report} ({results.wall_time_s:.0f} s)")
    return report
