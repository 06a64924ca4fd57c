"""Datasets on disk and on the Hub: parquet shards + a README card with YAML ``configs:``.

A folder written by :func:`write_dataset_folder` loads with ``load_dataset(folder, config)``
and, from its parent, ``load_dataset("<folder name>", config)``; :func:`push_folder`
publishes it with ``huggingface_hub`` (``HF_ENDPOINT`` selects the Hub). Folders are
written atomically: a failure leaves the previous folder, or nothing.

Caveat (datasets 5.2, measured): ``load_dataset`` caches a local folder under its folder
name and config name only, so after rebuilding a folder with the same name it returns the
*previous* build from its cache. Load a rebuilt folder with
``download_mode="force_redownload", verification_mode="no_checks"`` (:func:`load_local`
does; our own loaders use it).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import datasets
import yaml

from hf_real3d._io import atomic_dir

__all__ = [
    "ConfigData",
    "question_features",
    "scene_features",
    "scene_rows",
    "write_dataset_folder",
    "push_folder",
    "load_local",
    "publish_metrics",
]

_POS = {k: datasets.Value("float64") for k in ("x", "y", "z")}
_ROT = {k: datasets.Value("float64") for k in ("_x", "_y", "_z", "_w")}


def question_features(extra: Mapping[str, Any] | None = None) -> datasets.Features:
    """Columns shared by every question config (+ ``extra`` ones)."""
    f = {
        "question_id": datasets.Value("int64"),
        "scene_id": datasets.Value("string"),
        "situation": datasets.Value("string"),
        "alternative_situation": datasets.Sequence(datasets.Value("string")),
        "question": datasets.Value("string"),
        "answers": datasets.Sequence(datasets.Value("string")),
        "position": _POS,
        "rotation": _ROT,
        "question_type": datasets.Value("string"),
        "sqa3d_type": datasets.Value("string"),
        "rotation_deg": datasets.Value("int32"),
    }
    f.update(extra or {})
    return datasets.Features(f)


def scene_features() -> datasets.Features:
    return datasets.Features({
        "scene_id": datasets.Value("string"),
        "origin": datasets.Sequence(datasets.Value("float64"), length=3),
        "objects": [{
            "object_id": datasets.Value("int32"),
            "label": datasets.Value("string"),
            "center": datasets.Sequence(datasets.Value("float32"), length=3),
            "size": datasets.Sequence(datasets.Value("float32"), length=3),
            "yaw": datasets.Value("float32"),
            "attributes": datasets.Value("string"),  # JSON object
        }],
        "points": datasets.Array2D(shape=(None, 6), dtype="float32"),
    })


def scene_rows(scenes: Iterable) -> Iterable[dict[str, Any]]:
    """Rows of the ``scenes`` config from :class:`hf_real3d.scene.Scene` objects."""
    for s in scenes:
        yield {
            "scene_id": s.scene_id,
            "origin": [float(v) for v in s.origin],
            "objects": [{"object_id": int(o.object_id), "label": o.label,
                         "center": [float(v) for v in o.center],
                         "size": [float(v) for v in o.size], "yaw": float(o.yaw),
                         "attributes": json.dumps(o.attributes, sort_keys=True)}
                        for o in s.objects],
            "points": s.point_cloud(),
        }


@dataclass
class ConfigData:
    """One config: rows per split, their features, and a line for the card."""

    name: str
    splits: Mapping[str, Sequence[dict[str, Any]] | Iterable[dict[str, Any]]]
    features: datasets.Features
    description: str = ""
    default: bool = False
    rows_per_shard: int = 50_000
    counts: dict[str, int] = field(default_factory=dict)


def _write_config(cfg: ConfigData, root: Path) -> list[dict[str, str]]:
    files = []
    (root / cfg.name).mkdir(parents=True, exist_ok=True)
    for split, rows in cfg.splits.items():
        rows = list(rows)
        cfg.counts[split] = len(rows)
        n_shards = max(1, math.ceil(len(rows) / cfg.rows_per_shard))
        for k in range(n_shards):
            part = rows[k * cfg.rows_per_shard:(k + 1) * cfg.rows_per_shard]
            ds = datasets.Dataset.from_list(part, features=cfg.features) if part else \
                datasets.Dataset.from_dict({c: [] for c in cfg.features}, features=cfg.features)
            ds.to_parquet(str(root / cfg.name / f"{split}-{k:05d}-of-{n_shards:05d}.parquet"))
        files.append({"split": split, "path": f"{cfg.name}/{split}-*.parquet"})
    return files


def write_dataset_folder(
    out: str | os.PathLike,
    configs: Sequence[ConfigData],
    *,
    pretty_name: str,
    summary: str,
    license: str,
    citation: str,
    extra_sections: Sequence[str] = (),
    tags: Sequence[str] = ("3d", "question-answering", "spatial-reasoning"),
) -> Path:
    """Write every config as parquet shards plus a README card; atomic."""
    if not any(c.default for c in configs):
        raise ValueError("Expected one config marked default=True")
    out = Path(out)
    with atomic_dir(out) as tmp:
        yaml_configs = []
        for cfg in configs:
            entry: dict[str, Any] = {"config_name": cfg.name}
            if cfg.default:
                entry["default"] = True
            entry["data_files"] = _write_config(cfg, tmp)
            yaml_configs.append(entry)
        header = {"pretty_name": pretty_name, "license": license, "tags": list(tags),
                  "configs": yaml_configs}
        lines = ["---", yaml.safe_dump(header, sort_keys=False).strip(), "---", "",
                 f"# {pretty_name}", "", summary, "", "## Configs", "",
                 "| config | split | rows | description |", "|---|---|---|---|"]
        for cfg in configs:
            for split, n in cfg.counts.items():
                lines.append(f"| `{cfg.name}`{' (default)' if cfg.default else ''} | {split} | "
                             f"{n} | {cfg.description} |")
        lines += ["", *extra_sections, "", "## License", "", license, "", "## Citation", "",
                  "```bibtex", citation.strip(), "```", ""]
        (tmp / "README.md").write_text("\n".join(lines), encoding="utf-8")
    return out


def push_folder(folder: str | os.PathLike, repo_id: str, *, token: str | None = None,
                private: bool = False, repo_type: str = "dataset",
                commit_message: str = "Upload with hf_real3d") -> str:
    """Create ``repo_id`` if needed and upload ``folder``; returns the repo URL."""
    from huggingface_hub import HfApi

    folder = Path(folder)
    if not (folder / "README.md").is_file():
        raise FileNotFoundError(f"{folder}: no README.md card; build the folder first")
    api = HfApi(token=token)
    url = api.create_repo(repo_id, repo_type=repo_type, private=private, exist_ok=True)
    api.upload_folder(folder_path=str(folder), repo_id=repo_id, repo_type=repo_type,
                      commit_message=commit_message)
    return str(url)


def load_local(folder: str | os.PathLike, config: str, split: str = "test"):
    """``load_dataset`` on a folder we built, bypassing datasets' cache of local folders
    (keyed by folder and config name only: a rebuilt folder would load the old build)."""
    return datasets.load_dataset(str(folder), config, split=split,
                                 download_mode="force_redownload", verification_mode="no_checks")


def publish_metrics(namespace: str, *, private: bool = False, token: str | None = None,
                    names: Sequence[str] | None = None) -> list[str]:
    """Upload the metric modules as Hub Spaces (evaluate's convention), so that
    ``evaluate.load("<namespace>/vrs")`` works for anyone with hf-real3d installed."""
    import tempfile

    from huggingface_hub import HfApi

    from hf_real3d import METRICS, metric_path

    api = HfApi(token=token)
    urls = []
    for name in names or METRICS:
        src = Path(metric_path(name))
        repo_id = f"{namespace}/{name}"
        with tempfile.TemporaryDirectory() as tmp:
            t = Path(tmp)
            for f in src.iterdir():
                if f.is_file() and f.suffix in (".py", ".md", ".txt"):
                    (t / f.name).write_bytes(f.read_bytes())
            (t / "app.py").write_text(
                "import evaluate\nfrom evaluate.utils import launch_gradio_widget\n\n"
                f"module = evaluate.load({repo_id!r})\nlaunch_gradio_widget(module)\n")
            api.create_repo(repo_id, repo_type="space", space_sdk="gradio", private=private,
                            exist_ok=True)
            api.upload_folder(folder_path=tmp, repo_id=repo_id, repo_type="space",
                              commit_message=f"Upload {name} metric with hf_real3d")
        urls.append(f"{api.endpoint}/spaces/{repo_id}")
    return urls

