"""Training step time of 3DR-FT against SFT, measured in the same run.

Tiny Llama language model (hidden 128, 2 layers, ~500-word vocabulary), 64 text tokens,
batch 64, the default SceneLM inputs (question reader over label, direction and colour
words). Target (training issue): with the blind model's log-probs
precomputed, 3DR-FT / SFT <= 1.40 for 'paper' and for 'official' (each needs one extra
no-grad text-only pass of the current model). Also reported: 'paper' with a live frozen
reference model instead of the precomputed column.

Per route (issue 20, point I), each against SFT on the same model and batch in the same run:
'paper' with a precomputed column <= 1.4, 'official' (the policy's own text-only pass)
<= 1.6, 'paper' with a frozen blind model <= 1.7. Routes: SceneLM (HF model route, object
tokens) and a LLaVA (HF VLM route, 3D as one rendered image per question; hidden 128, 2
layers, images zeroed in the text-only pass).

    python bench/train_step.py [--steps 30] [--scenes 30] [--questions 80]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch
from _common import report
from datasets import Dataset
from transformers import TrainerCallback

from hf_real3d.modeling import SceneBank, qa_rows, train_tokenizer
from hf_real3d.modeling.data import collator_for, default_tokenizer_corpus
from hf_real3d.synth import SynthConfig, generate_split
from hf_real3d.training import (
    BlindColumnCollator,
    ReweightedConfig,
    ReweightedTrainer,
    precompute_blind_logprobs,
)
from hf_real3d.training.args import ScriptArguments
from hf_real3d.training.recipe import build_model
from hf_real3d.training.routes import HFModelRoute
from hf_real3d.training.vlm import VLMCollator

TARGETS = {"paper": 1.40, "official": 1.60, "paper+frozen ref": 1.70}


class StepTimer(TrainerCallback):
    def __init__(self):
        self.times, self._t = [], None

    def on_step_begin(self, args, state, control, **kw):
        self._t = time.perf_counter()

    def on_step_end(self, args, state, control, **kw):
        self.times.append(time.perf_counter() - self._t)


def _tiny_llava_builder():
    """The tests' tiny LLaVA builder (tests/helpers/tiny_vlm.py), loaded from its file."""
    import importlib.util

    path = Path(__file__).parents[1] / "tests/helpers/tiny_vlm.py"
    spec = importlib.util.spec_from_file_location("tiny_vlm", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.build_tiny_llava


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--scenes", type=int, default=30, help="synthetic training rooms")
    ap.add_argument("--questions", type=int, default=80, help="questions per room")
    args = ap.parse_args()
    torch.set_num_threads(2)
    cfg = SynthConfig(seed=0, scenes={"train": args.scenes},
                      questions_per_scene={"train": args.questions})
    scenes, recs = generate_split(cfg, "train")
    tok = train_tokenizer(default_tokenizer_corpus(recs), vocab_size=500)
    bank = SceneBank.from_scenes(scenes)
    bank.tokenize_labels(tok)  # the default SceneLM reads label words
    ds = Dataset.from_list(qa_rows(recs))
    sargs = ScriptArguments(hidden_size=128, num_layers=2)
    blind = build_model(sargs, tok, blind=True)
    col = collator_for(blind, tok, bank, max_length=64)
    ds_col = precompute_blind_logprobs(ds, blind, col)

    def scenelm(data):
        torch.manual_seed(0)
        model = build_model(sargs, tok, blind=False)
        return model, collator_for(model, tok, bank, max_length=64,
                                   blind_logprob_column="blind_logprobs" if data is ds_col
                                   else None), tok

    results = _time_runs(ds, ds_col, blind, scenelm, steps=args.steps, batch=64)
    _report("SceneLM", results)
    _report("LLaVA (VLM)", _vlm_times(args.steps, [r["question"] for r in qa_rows(recs)]))


def _report(route: str, results: dict[str, float]) -> None:
    base = min(results["sft"], results["sft (again)"])
    for name, t in results.items():
        print(f"{route:>12} {name:>16}: {t * 1000:7.1f} ms/step  ratio {t / base:.2f}")
    for name, target in TARGETS.items():
        report(f"3DR-FT {name} / SFT step time, {route}", results[name] / base, "x",
               target=f"<= {target:.2f}", ok=results[name] / base <= target,
               ms=round(results[name] * 1000, 1), sft_ms=round(base * 1000, 1))


def _vlm_times(steps: int, questions: list[str]) -> dict[str, float]:
    """The same comparison on a LLaVA taking one image per question (batch 16)."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    words = ["yes", "no", "left", "right", "a", "b"]
    rows = [{"images": [Image.fromarray(rng.integers(0, 255, (32, 32, 3), dtype=np.uint8))],
             "prompt": " ".join(q.split()[:12]), "answer": words[i % 6]}
            for i, q in enumerate(questions[:16 * (steps + 4)])]
    ds = Dataset.from_list(rows)
    blind, proc = _tiny_llava_builder()(seed=1, hidden=128, layers=2)
    coll = VLMCollator(proc)
    route = HFModelRoute("zeroed")
    ds_col = precompute_blind_logprobs(ds, blind, coll, route=route, batch_size=16)

    def llava(data):
        model, _ = _tiny_llava_builder()(seed=0, hidden=128, layers=2)
        return model, BlindColumnCollator(coll), proc

    return _time_runs(ds, ds_col, blind, llava, steps=steps, batch=16, text_only_mode="zeroed")


def _time_runs(ds, ds_col, blind, make, *, steps: int, batch: int, **config) -> dict:
    """Median step time (after 3 warm-up steps) of SFT, 3DR-FT paper with the column,
    official, paper with the frozen blind model, and SFT again (the faster SFT is the
    baseline: warm-up effects), each on a fresh model from ``make(data)``."""
    runs = [("sft", "none", ds, None), ("paper", "paper", ds_col, None),
            ("official", "official", ds, None), ("paper+frozen ref", "paper", ds, blind),
            ("sft (again)", "none", ds, None)]
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, mode, data, ref in runs:
            model, collator, processing = make(data)
            targs = ReweightedConfig(output_dir=f"{tmp}/{name}", reweighting=mode,
                                     per_device_train_batch_size=batch, max_steps=steps,
                                     logging_steps=1000, save_strategy="no", use_cpu=True,
                                     disable_tqdm=True, dataloader_num_workers=0, seed=0,
                                     **config)
            timer = StepTimer()
            ReweightedTrainer(model=model, args=targs, train_dataset=data,
                              data_collator=collator, processing_class=processing,
                              ref_model=ref, callbacks=[timer]).train()
            out[name] = statistics.median(timer.times[3:])
    return out


if __name__ == "__main__":
    main()
