"""Is it the objective or the batches? The viewpoint objective's arm of the demo
(``sft_rot_dro``) differs from its control ``sft_rot`` in two ways: its batches hold whole
questions (4 questions x 4 viewpoints per batch of 16, from the group-aware sampler) and its
loss reweights the viewpoints. This study trains, per seed of a finished demo run, the
control that separates them: ``grouped``, the same sampler with equal weights
(``viewpoint_dro`` at temperature 1e9, which is SFT's loss exactly), and ``sharp``, the
objective at temperature 0.1; each with ``sft_rot``'s optimizer steps, data and seed. It
scores them on the run's filtered set and prints them beside the run's ``sft_rot`` and
``sft_rot_dro`` (mean ± seed std, per-seed differences). A design study, not a speed
benchmark: ``bench/run_all.py`` does not run it. About 6 minutes per seed on the 2-core
CPU machine.

    hf-real3d demo --arms rotation --seeds 3 --out outputs/rot
    python bench/study_viewpoint_grouping.py --study outputs/rot
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import pandas as pd

from hf_real3d._io import write_json
from hf_real3d.demo import DemoConfig
from hf_real3d.demo.pool import TrainingPool
from hf_real3d.demo.stages import SeedRun
from hf_real3d.hub import load_local
from hf_real3d.real3dqa import load_references, score_predictions
from hf_real3d.real3dqa.predictions import load_predictions
from hf_real3d.stats import seed_stats
from hf_real3d.tables import markdown_table
from hf_real3d.training.args import ScriptArguments
from hf_real3d.training.data import load_split
from hf_real3d.training.recipe import load_training_data

# name: viewpoint_dro's temperature (1e9: equal weights, the grouped batches alone)
VARIANTS = {"grouped": 1e9, "sharp": 0.1}
KEYS = (("VRS", "rotation", "vrs"), ("P_1", "rotation", "p_at_least_1"),
        ("P_4", "rotation", "p_at_least_4"), ("EM_R filtered", "debiased", "em_refined"),
        ("EM_R original", "original", "em_refined"))


def _metrics(refs: pd.DataFrame, preds: pd.DataFrame, name: str) -> dict[str, float]:
    m = score_predictions(refs, preds, name=name, allow_missing=True).metrics
    return {label: float(m[part][key]) for label, part, key in KEYS}


def run_seed(cfg: DemoConfig, seed_dir: Path, out: Path, pool: TrainingPool
             ) -> dict[str, dict[str, float]]:
    seed = int(seed_dir.name.removeprefix("seed"))
    data_dir = seed_dir / "synth"
    sargs = ScriptArguments(dataset_name=str(data_dir), **cfg.settings())
    data = load_training_data(sargs)
    rows = list(load_split(str(data_dir), "sqa3d", "test"))
    run = SeedRun(cfg, seed, out / seed_dir.name, data_dir, sargs, data, rows, pool)
    aug = dataclasses.replace(sargs, rotation_augment="all")
    jobs = [run.job(name, "viewpoint_dro", script_args=aug, viewpoint_temperature=t,
                    max_steps=run.steps(cfg.epochs)) for name, t in VARIANTS.items()]
    models = run.train(*jobs)
    refs = load_references(seed_dir / "real3dqa")
    rotation_rows = list(load_local(seed_dir / "real3dqa", "rotations"))
    out_metrics = {}
    for name in ("sft_rot", "sft_rot_dro"):
        out_metrics[name] = _metrics(refs, load_predictions(seed_dir / "predictions" /
                                                            f"{name}.jsonl"), name)
    for name, model in models.items():
        orig = run.predict(model, rows)
        rot = run.predict(model, rotation_rows)
        both = pd.concat([orig, rot[rot.rotation_deg != 0]], ignore_index=True)
        out_metrics[name] = _metrics(refs, both, name)
    return out_metrics


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--study", required=True,
                    help="a finished `hf-real3d demo --arms rotation` (or all) folder")
    ap.add_argument("--out", default=None, help="where the models go (default <study>/grouping)")
    a = ap.parse_args()
    study = Path(a.study)
    results = json.loads((study / "results.json").read_text())["details"]
    fields = {f.name for f in dataclasses.fields(DemoConfig)}
    cfg = DemoConfig(**{k: v for k, v in results["config"].items() if k in fields})
    out = Path(a.out or study / "grouping")
    per_seed = []
    with TrainingPool(2) as pool:
        for s in results["seeds"]:
            per_seed.append(run_seed(cfg, Path(s["root"]), out, pool))
            print(f"seed {s['seed']}: {json.dumps(per_seed[-1])}", flush=True)
    models = list(per_seed[0])
    table = [[m, *(seed_stats([p[m][label] for p in per_seed]).text() for label, _, _ in KEYS)]
             for m in models]
    for a_, b_ in (("grouped", "sft_rot"), ("sft_rot_dro", "grouped"), ("sharp", "grouped")):
        table.append([f"{a_} - {b_}", *(seed_stats([p[a_][label] - p[b_][label]
                                                     for p in per_seed]).text(sign=True)
                                         for label, _, _ in KEYS)])
    print(markdown_table(["model", *(label for label, _, _ in KEYS)], table))
    write_json(out / "grouping.json", {"seeds": [s["seed"] for s in results["seeds"]],
                                       "per_seed": per_seed}, indent=1)


if __name__ == "__main__":
    main()
