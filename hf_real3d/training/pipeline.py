"""What the recipes share: data loading, tokenizer, model building, training, prediction.

Every step is a function so that recipes (``recipes/*.py``), the demo and tests call the
same code.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from hf_real3d.modeling import SceneBank, SceneLM, SceneLMConfig, SceneQACollator, qa_rows
from hf_real3d.modeling.data import default_tokenizer_corpus, train_tokenizer

__all__ = ["ScriptArguments", "load_benchmark", "get_tokenizer", "build_model", "train_model",
           "predict_rows", "attention_to_3d", "make_parser", "parse_recipe_args",
           "ensure_benchmark", "write_jsonl"]


@dataclass
class ScriptArguments:
    """Recipe arguments beyond the training ones."""

    data_dir: str = field(default="outputs/recipes/synth", metadata={
        "help": "Synthetic benchmark folder (sqa3d/ + scans/); generated if absent."})
    synth_train_scenes: int = field(default=40, metadata={
        "help": "Scenes per split when the benchmark must be generated (train)."})
    synth_test_scenes: int = field(default=12, metadata={"help": "... (val and test)."})
    synth_questions_per_scene: int = field(default=60, metadata={"help": "Questions per scene."})
    synth_guessable_fraction: float = field(default=0.5, metadata={
        "help": "Share of language-prior questions when generating."})
    tokenizer_path: str | None = field(default=None, metadata={
        "help": "Tokenizer folder; default <data_dir>/tokenizer, trained if absent."})
    model_name_or_path: str | None = field(default=None, metadata={
        "help": "Start from this saved SceneLM (else build from config)."})
    lm_path: str | None = field(default=None, metadata={
        "help": "Local causal-LM checkpoint to use as the language model (Qwen, Llama, ...)."})
    hidden_size: int = field(default=128, metadata={"help": "Language model width."})
    num_layers: int = field(default=2, metadata={"help": "Language model layers."})
    max_objects: int = field(default=24, metadata={"help": "3D tokens per scene."})
    points_per_object: int = field(default=16, metadata={"help": "Points per object."})
    max_length: int = field(default=64, metadata={"help": "Text tokens per example."})
    blind: bool = field(default=False, metadata={"help": "Train the text-only (blind) model."})
    blind_model_path: str | None = field(default=None, metadata={
        "help": "Blind fine-tuned model for reweighting='paper' (trained first if absent)."})
    live_reference: bool = field(default=False, metadata={
        "help": "Run the blind model live as a frozen reference instead of precomputing."})
    max_train_questions: int | None = field(default=None, metadata={
        "help": "Use only the first N training questions."})


def ensure_benchmark(args: ScriptArguments) -> None:
    """Generate the synthetic benchmark into ``data_dir`` unless it is already there."""
    from hf_real3d.synth import SynthConfig, build_benchmark

    if (Path(args.data_dir) / "sqa3d").is_dir():
        return
    cfg = SynthConfig(seed=0, guessable_fraction=args.synth_guessable_fraction,
                      scenes={"train": args.synth_train_scenes, "val": args.synth_test_scenes,
                              "test": args.synth_test_scenes},
                      questions_per_scene={s: args.synth_questions_per_scene
                                           for s in ("train", "val", "test")})
    build_benchmark(args.data_dir, cfg)


def load_benchmark(data_dir: str | os.PathLike, splits=("train", "val", "test"),
                   max_objects: int = 24, points_per_object: int = 16):
    """Records per split and a :class:`SceneBank` of every referenced scene."""
    from hf_real3d.scene import read_scannet
    from hf_real3d.sqa3d import read_split

    data_dir = Path(data_dir)
    records = {s: read_split(data_dir / "sqa3d", s) for s in splits}
    ids = sorted({r.scene_id for recs in records.values() for r in recs})
    scenes = {sid: read_scannet(data_dir / "scans", sid) for sid in ids}
    bank = SceneBank.from_scenes(scenes.values(), max_objects, points_per_object)
    return records, scenes, bank


def get_tokenizer(args: ScriptArguments, train_records) -> Any:
    from transformers import AutoTokenizer

    path = Path(args.tokenizer_path or Path(args.data_dir) / "tokenizer")
    if (path / "tokenizer.json").is_file():
        return AutoTokenizer.from_pretrained(str(path))
    return train_tokenizer(default_tokenizer_corpus(train_records), save_to=str(path))


def build_model(args: ScriptArguments, tokenizer, *, blind: bool | None = None) -> SceneLM:
    from transformers import LlamaConfig

    if args.model_name_or_path:
        model = SceneLM.from_pretrained(args.model_name_or_path)
        if blind is not None:
            model.config.blind = blind
        return model
    text = LlamaConfig(vocab_size=len(tokenizer), hidden_size=args.hidden_size,
                       intermediate_size=2 * args.hidden_size, num_hidden_layers=args.num_layers,
                       num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=256,
                       tie_word_embeddings=True, pad_token_id=tokenizer.pad_token_id,
                       bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    cfg = SceneLMConfig(text_config=text, lm_path=args.lm_path, max_objects=args.max_objects,
                        points_per_object=args.points_per_object,
                        blind=args.blind if blind is None else blind)
    return SceneLM(cfg)


def train_model(script_args: ScriptArguments, training_args, *, records=None, bank=None,
                tokenizer=None, blind: bool | None = None):
    """Train SFT / blind / 3DR-FT as ``training_args.reweighting`` and ``blind`` say; saves
    the model and tokenizer to ``training_args.output_dir``. Returns the trainer."""
    from datasets import Dataset

    from hf_real3d.training import ReweightedTrainer, precompute_blind_logprobs

    if records is None:
        with training_args.main_process_first(desc="synthetic benchmark"):
            ensure_benchmark(script_args)
        records, _, bank = load_benchmark(script_args.data_dir, ("train", "val"),
                                          script_args.max_objects,
                                          script_args.points_per_object)
    train = records["train"][: script_args.max_train_questions]
    if tokenizer is None:
        with training_args.main_process_first(desc="tokenizer"):
            tokenizer = get_tokenizer(script_args, train)
    blind = script_args.blind if blind is None else blind
    model = build_model(script_args, tokenizer, blind=blind)
    collator = SceneQACollator(tokenizer, bank, max_length=script_args.max_length,
                               egocentric=model.config.egocentric)
    train_ds = Dataset.from_list(_flat(qa_rows(train)))
    eval_ds = Dataset.from_list(_flat(qa_rows(records["val"]))) if records.get("val") else None
    ref_model = None
    if training_args.reweighting == "paper" and not blind:
        blind_path = script_args.blind_model_path
        if not blind_path or not (Path(blind_path) / "config.json").is_file():
            raise FileNotFoundError(
                f"reweighting='paper' needs a blind fine-tuned model at {blind_path!r}; train it "
                "with recipes/blind_ft.py (or set reweighting='official')")
        blind_model = SceneLM.from_pretrained(blind_path)
        if script_args.live_reference:
            ref_model = blind_model
        else:
            train_ds = precompute_blind_logprobs(train_ds, blind_model, collator,
                                                 column=training_args.blind_logprob_column)
            collator.blind_col = training_args.blind_logprob_column
    trainer = ReweightedTrainer(model=model, args=training_args, ref_model=ref_model,
                                train_dataset=train_ds, eval_dataset=eval_ds,
                                data_collator=collator, processing_class=tokenizer)
    trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint)
    trainer.save_model(training_args.output_dir)
    if trainer.is_world_process_zero():
        tokenizer.save_pretrained(training_args.output_dir)
    return trainer


def _flat(rows: list[dict]) -> list[dict]:
    """Rows as Arrow-friendly dicts (position/rotation stay structs)."""
    return [{**r, "question_id": int(r["question_id"])} for r in rows]


@torch.no_grad()
def predict_rows(model: SceneLM, tokenizer, bank: SceneBank, rows: list[dict], *,
                 ablation: str = "none", batch_size: int = 64, max_new_tokens: int = 6,
                 max_length: int = 64, progress: bool = True) -> list[dict[str, Any]]:
    """Greedy answers (and their log-probs) for QA rows, with an optional input ablation."""
    model.eval()
    collator = SceneQACollator(tokenizer, bank, max_length=max_length, for_generation=True,
                               egocentric=model.config.egocentric, ablation=ablation)
    out = []
    for start in tqdm(range(0, len(rows), batch_size), desc=f"predict ({ablation})",
                      disable=not progress):
        chunk = rows[start:start + batch_size]
        batch = collator(chunk)
        toks, logp = model.generate_answers(
            batch.pop("input_ids"), batch.pop("attention_mask"), tokenizer.eos_token_id,
            tokenizer.pad_token_id, max_new_tokens=max_new_tokens, **batch)
        for r, t, lp in zip(chunk, toks, logp.tolist()):
            out.append({"question_id": int(r["question_id"]),
                        "rotation_deg": int(r.get("rotation_deg", 0)),
                        "prediction": tokenizer.decode(t, skip_special_tokens=True).strip(),
                        "log_prob": float(lp)})
    return out


@torch.no_grad()
def attention_to_3d(model: SceneLM, tokenizer, bank: SceneBank, rows: list[dict], *,
                    batch_size: int = 64, n_resamples: int = 200, seed: int = 0,
                    max_length: int = 64) -> dict[str, float]:
    """Mean attention mass from answer tokens to the 3D tokens (all layers and heads),
    with its spread over bootstrap resamples of the examples."""
    model.eval()
    impl = model.lm.config._attn_implementation
    model.lm.set_attn_implementation("eager")
    collator = SceneQACollator(tokenizer, bank, max_length=max_length,
                               egocentric=model.config.egocentric)
    per_example = []
    try:
        for start in range(0, len(rows), batch_size):
            batch = collator(rows[start:start + batch_size])
            labels = batch.pop("labels")
            out = model(**batch, output_attentions=True)
            n = out.n_prefix
            att = torch.stack(out.attentions).mean(dim=(0, 2))  # (B, S, S)
            # answer tokens are predicted at the position before each label token
            qpos = labels[:, 1:].ne(-100)
            to3d = att[:, n:-1, :n].sum(-1)  # (B, T-1): mass on 3D tokens per text query
            for i in range(len(labels)):
                per_example.append(float(to3d[i][qpos[i]].mean()))
    finally:
        model.lm.set_attn_implementation(impl)
    v = np.asarray(per_example)
    rng = np.random.default_rng(seed)
    boots = v[rng.integers(0, len(v), size=(n_resamples, len(v)))].mean(1)
    return {"mean": float(v.mean()), "std_over_resamples": float(boots.std()),
            "n": int(len(v))}


def make_parser():
    from transformers import HfArgumentParser

    from hf_real3d.training import ReweightedConfig

    parser = HfArgumentParser((ScriptArguments, ReweightedConfig))
    parser.add_argument("--config", default=None, help="YAML file of arguments")
    return parser


def parse_recipe_args(argv=None, defaults: dict | None = None):
    """``(ScriptArguments, ReweightedConfig)`` from ``--config x.yaml`` plus flags
    (flags override the file), as trl's recipes do."""
    import sys

    import yaml

    argv = list(sys.argv[1:] if argv is None else argv)
    parser = make_parser()
    cfg: dict = dict(defaults or {})
    if "--config" in argv:
        i = argv.index("--config")
        path = argv[i + 1]
        del argv[i:i + 2]
        with open(path) as f:
            loaded = yaml.safe_load(f) or {}
        if not isinstance(loaded, dict):
            raise ValueError(f"{path}: expected a mapping of argument names to values")
        cfg.update(loaded)
    known = {a.dest for a in parser._actions}
    unknown = sorted(set(cfg) - known)
    if unknown:
        raise ValueError(f"unknown argument(s) in config: {unknown}")
    parser.set_defaults(**cfg)
    parsed = parser.parse_args_into_dataclasses(args=argv, return_remaining_strings=True)
    script_args, train_args, rest = parsed[0], parsed[1], parsed[-1]
    if rest:
        raise ValueError(f"unknown command-line argument(s): {rest}")
    return script_args, train_args


def write_jsonl(path: str | os.PathLike, rows: list[dict]) -> None:
    from hf_real3d._io import atomic_path

    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
