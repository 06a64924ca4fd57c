"""Trains a tiny SceneLM for a few steps and writes the logged losses (main process).

Run by tests/test_trainer_distributed.py as one process and under
``accelerate launch --multi_gpu --num_processes 2`` with the same global batch. The modes
to train are the fifth argument (default ``paper,official``); ``viewpoint_dro`` trains on
the rotation-augmented split with the group-aware sampler, and every rank writes the
question groups of each batch it got (``<out>.rank<N>.groups.json``).
"""

import json
import sys
from pathlib import Path

from datasets import Dataset
from helpers.models import tiny_model

from hf_real3d.modeling import SceneBank, SceneQACollator, qa_rows
from hf_real3d.modeling.data import default_tokenizer_corpus, train_tokenizer
from hf_real3d.schema import record_row
from hf_real3d.synth import SynthConfig, generate_split
from hf_real3d.training import ReweightedConfig, ReweightedTrainer, precompute_blind_logprobs
from hf_real3d.training.augment import rotation_augment
from hf_real3d.training.pipeline import end_distributed


class GroupSpy:
    """The trainer's collator, recording the question group of every row of each batch."""

    def __init__(self, collator):
        self.collator, self.batches = collator, []

    def __call__(self, rows):
        self.batches.append([r["viewpoint_group"] for r in rows])
        return self.collator(rows)


def main(per_device: int, grad_acc: int, out: str, workdir: str,
         modes: tuple[str, ...] = ("paper", "official")) -> None:
    cfg = SynthConfig(seed=4, scenes={"train": 3}, questions_per_scene={"train": 24})
    scenes, recs = generate_split(cfg, "train")
    tok = train_tokenizer(default_tokenizer_corpus(recs))
    bank = SceneBank.from_scenes(scenes, max_objects=8, points_per_object=4)
    ds = Dataset.from_list(qa_rows(recs))
    results = {}
    for mode in modes:
        col = SceneQACollator(tok, bank, max_length=48)
        train = ds
        if mode == "viewpoint_dro":
            # the rows with the records' semantics, which the turn's answers are computed from
            full = Dataset.from_list([record_row(r) for r in recs])
            train = rotation_augment(full, {s.scene_id: s for s in scenes})
        if mode == "paper":
            train = precompute_blind_logprobs(ds, tiny_model(tok, blind=True, seed=1), col)
            col.blind_col = "blind_logprobs"
        args = ReweightedConfig(
            output_dir=f"{workdir}/{mode}", reweighting=mode,
            per_device_train_batch_size=per_device,
            gradient_accumulation_steps=grad_acc, max_steps=5, learning_rate=5e-3,
            logging_steps=1, save_strategy="no", report_to="none", use_cpu=True, seed=0,
            disable_tqdm=True, dataloader_num_workers=0)
        tr = ReweightedTrainer(model=tiny_model(tok, blind=False, seed=0), args=args,
                               train_dataset=train,
                               data_collator=col, processing_class=tok)
        if mode == "viewpoint_dro":
            spy = tr.data_collator = GroupSpy(tr.data_collator)
        tr.train()
        if mode == "viewpoint_dro":
            Path(f"{out}.rank{tr.args.process_index}.groups.json").write_text(
                json.dumps(spy.batches))
        results[mode] = {"losses": [h["loss"] for h in tr.state.log_history if "loss" in h],
                         "world_size": tr.args.world_size,
                         "weight": float(tr.model.state_dict()["point_mlp.0.weight"].sum())}
    if tr.is_world_process_zero():
        with open(out, "w") as f:
            json.dump(results, f)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4],
         *([tuple(sys.argv[5].split(","))] if len(sys.argv) > 5 else []))
    end_distributed()  # after main: its trainers (and their DDP reducers) are gone
