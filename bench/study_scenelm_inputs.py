"""Does SceneLM use its 3D input? One model per input design, on the demo's data.

Builds the demo's synthetic benchmark (seed 0, default size) once, trains the blind model
and one full SFT model per variant below, and prints refined-EM-style accuracy (the
answer-matching rule of the scorer) on the test split per question kind (`prior_kind`:
scene / prior / counter_prior), the same with the 3D input dropped (`no_3d`), and the
training time. This is a design study, not a speed benchmark: `bench/run_all.py` does not
run it. About 2 minutes per variant on the 2-core CPU machine.

    python bench/study_scenelm_inputs.py                        # every variant
    python bench/study_scenelm_inputs.py --variants first reader_b16
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from hf_real3d._io import write_json
from hf_real3d.answers import match
from hf_real3d.demo import DemoConfig
from hf_real3d.modeling import predict_rows
from hf_real3d.recipes import load_recipe
from hf_real3d.synth import build_benchmark
from hf_real3d.training import ReweightedConfig
from hf_real3d.training.args import ScriptArguments
from hf_real3d.training.data import load_split
from hf_real3d.training.recipe import load_training_data

FIRST = dict(object_labels=False, direction_words=False, color_words=False,
             question_reader=False, object_tokens=True, points_per_object=16)
READER = dict(object_labels=True, direction_words=True, color_words=True, question_reader=True)
# name: (ScriptArguments fields, batch size, learning rate, epochs)
VARIANTS = {
    "first": (FIRST, 64, 3e-3, 6.0),  # the first SceneLM and the first demo's settings
    "labels_directions": (dict(FIRST, object_labels=True, direction_features=True), 64, 3e-3,
                          6.0),
    "reader_b64": (dict(READER, object_tokens=True, color_words=False), 64, 1e-3, 6.0),
    "reader_b16": (dict(READER, object_tokens=True), 16, 1e-3, 6.0),
    "reader_only_b16": (dict(READER, object_tokens=False, points_per_object=8), 16, 1e-3,
                        6.0),
    "default": ({}, 16, 1e-3, 8.0),  # the recipe defaults at the demo's settings
}


def _accuracy(model, data, rows: list[dict], ablation: str) -> dict[str, float]:
    kinds = pd.DataFrame({"question_id": [r["question_id"] for r in rows],
                          "prior_kind": [r["prior_kind"] for r in rows],
                          "answers": [list(r["answers"]) for r in rows]})
    pred = pd.DataFrame(predict_rows(model, data.tokenizer, data.bank, rows, ablation=ablation,
                                     progress=False))
    d = kinds.merge(pred, on="question_id")
    d["ok"] = [match(p, a)[1] for p, a in zip(d.prediction, d.answers)]
    out = {k: round(100 * v, 1) for k, v in d.groupby("prior_kind").ok.mean().items()}
    out["scene_dependent"] = round(100 * d[d.prior_kind != "prior"].ok.mean(), 1)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--work", default=None, help="Folder for data and models (default: temp).")
    ap.add_argument("--train_scenes", type=int, default=DemoConfig().train_scenes)
    ap.add_argument("--test_scenes", type=int, default=DemoConfig().test_scenes)
    ap.add_argument("--out", default=None, help="Also write the results here (JSON).")
    args = ap.parse_args(argv)
    work = Path(args.work or tempfile.mkdtemp(prefix="scenelm_inputs_"))
    cfg = DemoConfig(train_scenes=args.train_scenes, test_scenes=args.test_scenes)
    data_dir = work / "synth"
    if not (data_dir / "README.md").is_file():
        build_benchmark(data_dir, cfg.synth_config(0), progress=False)
    rows = list(load_split(str(data_dir), "sqa3d", "test"))

    def targs(name: str, batch: int, lr: float, epochs: float) -> ReweightedConfig:
        return ReweightedConfig(
            output_dir=str(work / "models" / name), reweighting="none",
            num_train_epochs=epochs, per_device_train_batch_size=batch, learning_rate=lr,
            lr_scheduler_type="cosine", warmup_steps=0.05, logging_steps=1000,
            save_strategy="no", eval_strategy="no", seed=0, use_cpu=True, disable_tqdm=True,
            dataloader_num_workers=0, report_to="none")

    results = {}
    blind_done: set[tuple] = set()
    for name in args.variants:
        fields, batch, lr, epochs = VARIANTS[name]
        sargs = dataclasses.replace(
            ScriptArguments(dataset_name=str(data_dir), hidden_size=cfg.hidden_size,
                            num_layers=cfg.num_layers), **fields)
        data = load_training_data(sargs)
        if (batch, lr, epochs) not in blind_done:  # the blind model of these settings
            blind_done.add((batch, lr, epochs))
            m = load_recipe("blind_ft").main(sargs, targs(f"blind_b{batch}", batch, lr, epochs),
                                             data=data).model
            results[f"blind (batch {batch}, lr {lr:g}, {epochs:g} ep)"] = {
                "none": _accuracy(m, data, rows, "none")}
        t = time.perf_counter()
        m = load_recipe("sft").main(sargs, targs(name, batch, lr, epochs), data=data).model
        secs = time.perf_counter() - t
        results[name] = {"none": _accuracy(m, data, rows, "none"),
                         "no_3d": _accuracy(m, data, rows, "no_3d"),
                         "train_s": round(secs, 1)}
        print(name, json.dumps(results[name]), file=sys.stderr, flush=True)
    print(json.dumps(results, indent=1))
    if args.out:
        write_json(args.out, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
