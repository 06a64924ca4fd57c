"""The model card written beside every trained model: base, data, reweighting, metrics, and
how to load and evaluate it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from hf_real3d._io import atomic_path
from hf_real3d.tables import markdown_table
from hf_real3d.training.modes import mode

__all__ = ["write_model_card"]


def _augment_lines(augment: dict[str, Any] | None) -> list[str]:
    if not augment:
        return []
    which = "every viewpoint" if augment["choose"] == "all" else "one viewpoint (seeded)"
    source = augment.get("from", "geometry")
    how = "rewritten from the scene's geometry" if source == "geometry" else \
        f"taken from the rotation set `{source}`"
    kinds = f" (only the kinds {', '.join(augment['kinds'])})" if augment.get("kinds") else ""
    return [f"- rotation augmentation: {which} of {augment['viewpoints']} per question"
            f"{kinds}, {how}: {augment['questions']} questions became {augment['rows']} "
            "training rows."]


def write_model_card(output_dir: str | os.PathLike, info: dict[str, Any]) -> None:
    """README.md beside a trained model: base, data, reweighting, metrics."""
    m, src, tr = info["model"], info["source"], info["training"]
    base = (f"`{m['model_name_or_path']}`" if m["model_name_or_path"] else
            f"`{m['lm_path']}` as the language model" if m["lm_path"] else
            f"a Llama built from config (hidden {m['hidden_size']}, {m['num_layers']} layers)")
    variant = mode(tr["reweighting"]).card
    header = {"library_name": "hf_real3d", "tags": ["3d", "scene-lm", "spatial-reasoning"]
              + (["3dr-ft"] if tr["reweighting"] != "none" else [])}
    if not Path(src["dataset_name"]).exists():
        header["datasets"] = [src["dataset_name"]]
    blind = info.get("blind_model")
    metrics = markdown_table(["metric", "value"],
                             [[k, f"{v:.4g}" if isinstance(v, float) else v]
                              for k, v in info["metrics"].items()])
    lines = [
        "---", yaml.safe_dump(header, sort_keys=False).strip(), "---", "",
        f"# {Path(output_dir).name}", "",
        f"SceneLM ({'blind: text only' if m['blind'] else 'full: text + 3D objects'}) "
        "trained with hf_real3d.", "",
        "## Base", "", f"- {base}; {m['max_objects']} object tokens x "
        f"{m['points_per_object']} points; {m['max_length']} text tokens.", "",
        "## Data", "", f"- `{src['dataset_name']}`, config `{src['config']}`, split "
        f"`{src['train_split']}` ({src['train_rows']} questions), fingerprint "
        f"`{src['fingerprint']}`.", *_augment_lines(src.get("rotation_augment")), "",
        "## Training", "", f"- {variant}.",
        f"- {tr['num_train_epochs']:g} epochs (max_steps {tr['max_steps']}), learning rate "
        f"{tr['learning_rate']:g} ({tr['lr_scheduler_type']}), batch "
        f"{tr['per_device_train_batch_size']} per device x {tr['gradient_accumulation_steps']} "
        f"accumulation, seed {tr['seed']}."]
    settings = [f"{k} {tr[k]}" for k in mode(tr["reweighting"]).params if k in tr]
    if settings:  # the mode's own hyperparameters
        lines.append(f"- {tr['reweighting']} settings: {', '.join(settings)}.")
    if info.get("text_only_pass"):
        lines.append(f"- text-only pass (text_only_mode `{tr['text_only_mode']}`): "
                     f"{info['text_only_pass']}.")
    if blind:
        lines.append(f"- blind model: `{blind['path']}` (data fingerprint "
                     f"`{blind.get('fingerprint', '?')}`).")
    lines += ["", "## Metrics", "", metrics, ""]
    lines += ["## How to use", "", "```python", "from hf_real3d.modeling import SceneLM", "",
              f"model = SceneLM.from_pretrained({str(output_dir)!r})  # its tokenizer is "
              "saved beside it", "```", "",
              "Predictions on a built dataset (every viewpoint), then the library's scores:", "",
              "```bash",
              f"hf-real3d predict --model {output_dir} --dataset_name "
              f"{src['dataset_name']} --out preds",
              "hf-real3d evaluate --dataset REAL3DQA_FOLDER --predictions "
              f"{Path(output_dir).name}=preds/original.jsonl,preds/rotations.jsonl "
              "--out report",
              "```", ""]
    with atomic_path(Path(output_dir) / "README.md") as tmp:
        tmp.write_text("\n".join(lines), encoding="utf-8")
