"""3DSRBench's viewpoint finding, measured on a trained VLM (``hf-real3d demo
--srbench_model``): per seed, a small VLM trained on common-viewpoint renders and one trained
on common and uncommon renders mixed, both scored on the demo's synthetic 3DSRBench through
``evaluate-3dsrbench --model``, plus the common model given blank images.

The test set (the demo's ``3dsrbench`` folder, generator seed 0) and the training scenes
(generator seed ``TRAIN_SEED_OFFSET + seed``: other rooms) are fixed before any model is
trained; sizes come from :class:`~hf_real3d.demo.config.DemoConfig`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from hf_real3d.demo.srbench_vlm import (
    MIXES,
    SRBenchVLMConfig,
    blank_image,
    train_srbench_vlm,
    training_items,
)
from hf_real3d.srbench.build import load_rows
from hf_real3d.srbench.evaluate import evaluate_dataset, model_predictions, score_rows
from hf_real3d.srbench.report import SRBENCH_VIEW_CONFIGS as VIEW_CONFIGS

__all__ = ["TRAIN_SEED_OFFSET", "run_study_seed"]

TRAIN_SEED_OFFSET = 300  # training rooms: generator seed 300 + seed (the test set is seed 0)


def run_study_seed(train: dict[str, Any], test_folder: str | Path, out: str | Path,
                   vlm: SRBenchVLMConfig, *, train_scenes: int, prior_rows=(), log=print
                   ) -> dict[str, Any]:
    """Train both mixes of the ``vlm`` (its ``seed`` is the study's seed) on ``train`` (the
    generator's output for the training scenes: ``synthetic_common`` /
    ``synthetic_uncommon`` rows of ``train_scenes`` rooms) and score them, and the
    blank-image control, on every viewpoint kind of ``test_folder``; returns this seed's
    record for ``results.json``."""
    t0 = time.time()
    seed, progress = vlm.seed, vlm.progress
    out = Path(out)
    paths, sizes = {}, {}
    for mix in MIXES:
        items = training_items(train["synthetic_common"], train["synthetic_uncommon"], mix,
                               seed=seed, image_size=vlm.image_size, answer=vlm.answer)
        sizes[mix] = len(items)
        log(f"3DSRBench VLM, seed {seed}: training vlm_{mix} on {len(items)} items")
        paths[mix] = train_srbench_vlm(items, out / "models" / f"vlm_{mix}", vlm)
    log(f"3DSRBench VLM, seed {seed}: answering the test set (evaluate-3dsrbench --model)")
    evaluate_dataset(test_folder, out / "eval", configs=VIEW_CONFIGS, prior_rows=prior_rows,
                     models=[f"vlm_{mix}={paths[mix]}" for mix in MIXES])
    results = json.loads((out / "eval" / "metrics.json").read_text())
    for config in VIEW_CONFIGS:
        rows = load_rows(test_folder, config)
        blank = [{**r, "image": blank_image(r["image"].size[0])} for r in rows]
        results[config]["vlm_common (blank images)"] = score_rows(
            rows, model_predictions(blank, str(paths["common"]), progress=progress))
        for res in results[config].values():
            res["n_questions"] = sum(1 for r in rows if int(r["shift"]) == 0
                                     and not r["flipped"])
    losses = {mix: json.loads((paths[mix] / "training_log.json").read_text())["losses"]
              for mix in MIXES}
    return {"seed": seed, "train_scenes": train_scenes,
            "train_generator_seed": TRAIN_SEED_OFFSET + seed, "train_items": sizes,
            "answer": vlm.answer, "epochs": vlm.epochs,
            "train_loss": {mix: [v[0]["loss"], v[-1]["loss"]] if v else None
                           for mix, v in losses.items()},
            "results": results, "time_s": round(time.time() - t0, 1)}
