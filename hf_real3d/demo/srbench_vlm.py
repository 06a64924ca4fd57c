"""A small VLM trained on synthetic 3DSRBench renders, so the benchmark's viewpoint finding can
be measured here, not only its baselines (3DSRBench §4.4: models lose accuracy when the same
question is asked of an uncommon camera).

The model is a LLaVA (CLIP vision tower + Llama) built from configs with a word-level
tokenizer trained on the training prompts, saved as a folder with its processor and a chat
template, so it answers through ``hf-real3d evaluate-3dsrbench --model NAME=PATH`` like any
``transformers`` image-text-to-text model. It trains with the library's
:class:`~hf_real3d.training.ReweightedTrainer` (``reweighting="none"``: plain SFT through the
Hugging Face VLM route) on the expanded items (every circular order and the mirrored image)
of training scenes rendered by the same generator with another seed, so no test room is seen.

Training mixes (:func:`training_items`):

- ``common``: common-viewpoint renders only, as the paper's LMMs mostly saw;
- ``mixed``: for each training question, the common or the uncommon render at random (the
  same number of items), which tells a shift in the camera distribution apart from a view
  that is harder in itself.
"""

from __future__ import annotations

import io
import os
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from hf_real3d._io import write_json
from hf_real3d.srbench.build import expand
from hf_real3d.srbench.evaluate import prompt_for

__all__ = ["CHAT_TEMPLATE", "MIXES", "SRBenchVLMConfig", "training_items", "train_srbench_vlm",
           "blank_image"]

# one user turn: the image, then the prompt; the model then writes the letter
CHAT_TEMPLATE = ("{% for m in messages %}{% for c in m['content'] %}"
                 "{% if c['type'] == 'image' %}<image> {% else %}{{ c['text'] }} {% endif %}"
                 "{% endfor %}{% endfor %}Answer:")
MIXES = ("common", "mixed")


@dataclass
class SRBenchVLMConfig:
    """The small VLM's size (``hidden``, ``layers``, ``image_size``, ``patch``-px patches),
    its training (``epochs`` or ``max_steps``, ``batch_size``, ``learning_rate``, ``seed``,
    ``progress``) and its target, the option's ``"letter"`` or its ``"text"`` (``answer``)."""
    seed: int = 0
    epochs: float = 20.0
    max_steps: int = -1
    batch_size: int = 32
    learning_rate: float = 2e-3
    hidden: int = 128
    layers: int = 2
    image_size: int = 64
    patch: int = 16
    answer: str = "text"
    progress: bool = False


def _image(row: dict[str, Any], size: int) -> Image.Image:
    img = row.get("image")
    if row.get("image_bytes"):  # generated rows: PNG bytes (base64 in "image", for TSVs)
        img = Image.open(io.BytesIO(row["image_bytes"]))
    elif isinstance(img, dict):
        img = Image.open(io.BytesIO(img["bytes"]))
    return img.convert("RGB").resize((size, size), Image.BICUBIC)


def blank_image(size: int = 512) -> Image.Image:
    """The blank-image control's picture: uniform mid grey."""
    return Image.new("RGB", (size, size), (128, 128, 128))


def training_items(common: Sequence[dict[str, Any]], uncommon: Sequence[dict[str, Any]],
                   mix: str, *, seed: int = 0, image_size: int = 64,
                   answer: str = "letter") -> list[dict[str, Any]]:
    """Rows ``{images, prompt, answer, qid}`` for :class:`~hf_real3d.training.VLMCollator`:
    every circular order and the mirrored image of each training question of ``mix``.
    ``answer``: the target is the option's ``"letter"`` or its ``"text"`` (the scorer reads
    both; a small model trained on letters collapses to one letter, measured)."""
    if mix not in MIXES:
        raise ValueError(f"mix {mix!r}: one of {MIXES}")
    if mix == "common":
        rows = list(common)
    else:  # the same questions, each from the common or the uncommon camera at random
        rng = random.Random(seed)
        by_qid = {r["qid"]: r for r in uncommon}
        rows = [by_qid[r["qid"]] if r["qid"] in by_qid and rng.random() < 0.5 else r
                for r in common]
    def target(r: dict[str, Any]) -> str:
        return r["answer"] if answer == "letter" else r["options"]["ABCD".index(r["answer"])]

    def small(r: dict[str, Any]) -> dict[str, Any]:  # shrink once, before the expansions
        buf = io.BytesIO()
        _image(r, image_size).save(buf, format="PNG", compress_level=1)  # pixels kept, fast
        return {**r, "image_bytes": buf.getvalue(), "image": ""}

    return [{"images": [_image(r, image_size)], "prompt": prompt_for(r), "answer": target(r),
             "qid": r["qid"]} for r in expand([small(r) for r in rows])]


def train_srbench_vlm(items: Sequence[dict[str, Any]], out: str | os.PathLike,
                      config: SRBenchVLMConfig | None = None) -> Path:
    """Train the small VLM of ``config`` (default: :class:`SRBenchVLMConfig`'s), a LLaVA
    built from configs with two vision layers and a tokenizer trained on the items' prompts
    and answers, on ``items`` (SFT through the Hugging Face VLM route) and save it with its
    processor to ``out``, a folder ``evaluate-3dsrbench --model`` loads; its loss curve goes
    to ``out/training_log.json``."""
    # the training stack (torch, transformers) only when a VLM is trained
    from hf_real3d.training import ReweightedConfig, ReweightedTrainer
    from hf_real3d.training.vlm import VLMCollator
    from hf_real3d.training.vlm_recipe import small_llava

    c = config or SRBenchVLMConfig()
    texts = [r["prompt"] for r in items] + [r["answer"] for r in items] + ["Answer:"]
    model, proc = small_llava(texts, hidden=c.hidden, layers=c.layers, image_size=c.image_size,
                              patch=c.patch, vision_layers=2, chat_template=CHAT_TEMPLATE,
                              seed=c.seed)
    ds = [{k: r[k] for k in ("images", "prompt", "answer")} for r in items]  # PIL kept as is
    args = ReweightedConfig(
        output_dir=str(out), reweighting="none", num_train_epochs=c.epochs,
        max_steps=c.max_steps, per_device_train_batch_size=c.batch_size,
        learning_rate=c.learning_rate, lr_scheduler_type="cosine", warmup_steps=0.05,
        weight_decay=0.01, logging_steps=50, save_strategy="no", eval_strategy="no",
        seed=c.seed, use_cpu=True, disable_tqdm=not c.progress, dataloader_num_workers=0,
        report_to="none", remove_unused_columns=False)
    trainer = ReweightedTrainer(model=model, args=args, train_dataset=ds,
                                data_collator=VLMCollator(proc), processing_class=proc)
    trainer.train()
    trainer.save_model(str(out))
    proc.save_pretrained(str(out))
    losses = [{"epoch": h["epoch"], "loss": h["loss"]} for h in trainer.state.log_history
              if "loss" in h]
    write_json(Path(out) / "training_log.json", {"items": len(items), "losses": losses})
    return Path(out)
