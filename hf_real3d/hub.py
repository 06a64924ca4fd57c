"""Datasets on disk and on the Hub: parquet shards + a README card with YAML ``configs:``.

A folder written by :func:`write_dataset_folder` loads with ``load_dataset(folder, config)``
and, from its parent, ``load_dataset("<folder name>", config)``; :func:`push_folder`
publishes it with ``huggingface_hub`` (``HF_ENDPOINT`` selects the Hub). Folders are
written atomically: a failure leaves the previous folder, or nothing.

datasets (5.2, measured) caches a local folder by the ``data_files`` its card lists, not by
the files' content: a rebuilt folder whose card named the same files loaded the *previous*
build. So shard names carry a hash of their content and the card lists them exactly: a
rebuilt folder with other content is a new cache entry, and the same content reuses the
cache. ``load_dataset(folder, config)`` is safe from any working directory.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import pyarrow.parquet as pq
import yaml
from datasets.exceptions import NonMatchingSplitsSizesError
from huggingface_hub import HfApi

from hf_real3d import METRICS, metric_path
from hf_real3d._io import FormatError, atomic_dir, atomic_path
from hf_real3d.scene import Scene, SceneObject
from hf_real3d.spatial import CATEGORY
from hf_real3d.sqa3d import SQA3DRecord
from hf_real3d.tables import markdown_table

__all__ = [
    "ConfigData",
    "HubError",
    "question_features",
    "fill_rows",
    "record_row",
    "record_from_row",
    "scene_features",
    "scene_rows",
    "scene_from_row",
    "write_dataset_files",
    "write_dataset_folder",
    "push_folder",
    "load_local",
    "verify_shards",
    "card_header",
    "card_configs",
    "publish_metrics",
]

_POS = {k: datasets.Value("float64") for k in ("x", "y", "z")}
_ROT = {k: datasets.Value("float64") for k in ("_x", "_y", "_z", "_w")}


_EXTRA_COLUMNS = {
    "kind": "string", "guessable": "bool", "prior_kind": "string", "quality": ["string"],
    "reasons": ["string"], "dependency": "float64", "source_question_id": "int64",
    "in_debiased": "bool",
    "semantics": "string",
    "source": "string",
}
_EMPTY_DEFAULTS = {"alternative_situation": [], "quality": [], "reasons": [],
                   "question_type": "", "sqa3d_type": "", "kind": "", "prior_kind": "",
                   "situation": "",
                   "semantics": "", "source": ""}


def question_features(*extra: str) -> datasets.Features:
    """Columns shared by every question config, plus the named ``extra`` ones: ``kind``,
    ``guessable``, ``prior_kind``, ``quality``, ``reasons``, ``dependency``, ``source_question_id``,
    ``in_debiased``, ``semantics`` (JSON: how a synthetic question was made), ``source``
    (where a rotated item comes from)."""
    unknown = [n for n in extra if n not in _EXTRA_COLUMNS]
    if unknown:
        raise ValueError(f"Expected extra question columns among {sorted(_EXTRA_COLUMNS)} but "
                         f"got {unknown}")
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
    for n in extra:
        spec = _EXTRA_COLUMNS[n]
        f[n] = datasets.Sequence(datasets.Value(spec[0])) if isinstance(spec, list) \
            else datasets.Value(spec)
    return datasets.Features(f)


def fill_rows(rows: Iterable[dict], features: datasets.Features) -> list[dict]:
    """Rows restricted to ``features``' columns; absent text/list columns become empty."""
    out = []
    for r in rows:
        row = {}
        for c in features:
            v = r.get(c)
            row[c] = _EMPTY_DEFAULTS.get(c) if v is None and c in _EMPTY_DEFAULTS else v
        out.append(row)
    return out


def record_from_row(row: Mapping[str, Any]) -> SQA3DRecord:
    """The :class:`~hf_real3d.sqa3d.SQA3DRecord` a question row describes (inverse of
    :func:`record_row`; ``semantics`` goes back to ``extra["synth"]``)."""
    sem = row.get("semantics") or ""
    return SQA3DRecord(
        question_id=int(row["question_id"]), scene_id=row["scene_id"],
        situation=row["situation"], question=row["question"], answers=list(row["answers"]),
        position=dict(row["position"]), rotation=dict(row["rotation"]),
        alternative_situation=list(row.get("alternative_situation") or []),
        extra={"synth": json.loads(sem)} if sem else {})


def scene_features() -> datasets.Features:
    """One row per scene: objects (box, label, attributes, how many of ``points`` are
    theirs) and the scene's points, object after object, as ``Array2D((None, 6))``."""
    return datasets.Features({
        "scene_id": datasets.Value("string"),
        "origin": datasets.Sequence(datasets.Value("float64"), length=3),
        "objects": [{
            "object_id": datasets.Value("int32"),
            "label": datasets.Value("string"),
            "center": datasets.Sequence(datasets.Value("float64"), length=3),
            "size": datasets.Sequence(datasets.Value("float64"), length=3),
            "yaw": datasets.Value("float64"),
            "attributes": datasets.Value("string"),  # JSON object
            "num_points": datasets.Value("int64"),
        }],
        "points": datasets.Array2D(shape=(None, 6), dtype="float32"),
    })


def scene_rows(scenes: Iterable[Scene]) -> Iterable[dict[str, Any]]:
    """Rows of the ``scenes`` config from :class:`hf_real3d.scene.Scene` objects."""
    for s in scenes:
        yield {
            "scene_id": s.scene_id,
            "origin": [float(v) for v in s.origin],
            "objects": [{"object_id": int(o.object_id), "label": o.label,
                         "center": [float(v) for v in o.center],
                         "size": [float(v) for v in o.size], "yaw": float(o.yaw),
                         "attributes": json.dumps(o.attributes, sort_keys=True),
                         "num_points": 0 if o.points is None else len(o.points)}
                        for o in s.objects],
            "points": s.point_cloud(),
        }


def scene_from_row(row: Mapping[str, Any]) -> Scene:
    """The :class:`~hf_real3d.scene.Scene` a ``scenes`` row describes (inverse of
    :func:`scene_rows`)."""
    points = np.asarray(row["points"], dtype=np.float32).reshape(-1, 6)
    objs = row["objects"]
    if isinstance(objs, Mapping):  # columnar (as some datasets formats return lists)
        objs = [dict(zip(objs, vals)) for vals in zip(*objs.values())]
    counts = [int(o.get("num_points", 0)) for o in objs]
    if sum(counts) != len(points):
        raise FormatError(f"scene {row['scene_id']}: objects own {sum(counts)} points but the "
                          f"row has {len(points)}; rebuild the scenes config")
    starts = np.cumsum([0, *counts])
    objects = [SceneObject(int(o["object_id"]), o["label"], o["center"], o["size"],
                           float(o["yaw"]), json.loads(o["attributes"] or "{}"),
                           points[starts[i]:starts[i + 1]] if counts[i] else None)
               for i, o in enumerate(objs)]
    return Scene(row["scene_id"], objects, origin=row["origin"])


def record_row(rec, **extra) -> dict[str, Any]:
    """A question row from an :class:`~hf_real3d.sqa3d.SQA3DRecord` (0-degree view); a
    synthetic record's semantics go to ``kind``, ``guessable``, ``prior_kind`` and
    ``semantics``."""
    meta = rec.extra.get("synth") or {}
    return {
        "question_id": rec.question_id, "scene_id": rec.scene_id, "situation": rec.situation,
        "alternative_situation": list(rec.alternative_situation), "question": rec.question,
        "answers": list(rec.answers), "position": dict(rec.position),
        "rotation": dict(rec.rotation),
        "question_type": CATEGORY.get(meta.get("kind", ""), ""), "sqa3d_type": rec.qtype,
        "rotation_deg": 0, "kind": meta.get("kind", ""), "guessable": meta.get("guessable"),
        "prior_kind": meta.get("prior_kind") or (
            ("prior" if meta.get("guessable") else "scene") if meta else ""),
        "semantics": json.dumps(meta, sort_keys=True) if meta else "",
        **extra,
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
    data_dir: str | None = None  # folder of the shards (default: the config's name)
    counts: dict[str, int] = field(default_factory=dict)


def _write_shard(cfg: ConfigData, rows: list[dict[str, Any]], path: Path) -> None:
    ds = datasets.Dataset.from_list(rows, features=cfg.features) if rows else \
        datasets.Dataset.from_dict({c: [] for c in cfg.features}, features=cfg.features)
    ds.to_parquet(str(path))


def _write_config(cfg: ConfigData, root: Path) -> list[dict[str, str]]:
    """Shards of ``rows_per_shard`` rows, written as the rows stream in (one shard in
    memory at a time), then named ``<split>-<k>-of-<n>-<content hash>.parquet``."""
    files = []
    sub = cfg.data_dir or cfg.name
    (root / sub).mkdir(parents=True, exist_ok=True)
    for split, rows in cfg.splits.items():
        parts: list[Path] = []
        buf: list[dict[str, Any]] = []
        n = 0
        for row in rows:
            buf.append(row)
            n += 1
            if len(buf) == cfg.rows_per_shard:
                parts.append(root / sub / f".{split}-{len(parts):05d}.part")
                _write_shard(cfg, buf, parts[-1])
                buf = []
        if buf or not parts:
            parts.append(root / sub / f".{split}-{len(parts):05d}.part")
            _write_shard(cfg, buf, parts[-1])
        cfg.counts[split] = n
        names = []
        for k, part in enumerate(parts):
            # the content hash in the name, and the exact names in the card: datasets caches
            # a local folder by its card's data_files, so a rebuilt folder with other content
            # can never load a stale copy
            digest = hashlib.sha256(part.read_bytes()).hexdigest()[:12]
            names.append(f"{sub}/{split}-{k:05d}-of-{len(parts):05d}-{digest}.parquet")
            part.rename(root / names[-1])
        files.append({"split": split, "path": names[0] if len(names) == 1 else names})
    return files


FIELD_DOCS = {
    "question_id": "question id (SQA3D's; rotation groups share it)",
    "scene_id": "ScanNet scene id",
    "situation": "the agent's situation, as text",
    "alternative_situation": "other wordings of the situation",
    "question": "the question",
    "answers": "accepted answers",
    "position": "agent position (m, relative to the mesh box centre)",
    "rotation": "agent orientation, yaw-only quaternion (x, y, z, w); it faces R(q)(-1, 0, 0)",
    "question_type": "Real-3DQA question category",
    "sqa3d_type": "what/is/how/can/which/other (first word)",
    "rotation_deg": "degrees the agent turned clockwise (0 = original view)",
    "kind": "question template (synthetic or parsed real questions)",
    "guessable": "synthetic: answerable from language priors alone",
    "prior_kind": "synthetic: prior (the language prior gives the answer), scene (no prior "
                  "decides it) or counter_prior (the prior points to another answer)",
    "quality": "importer flags (see below)",
    "reasons": "why the filter removed the question",
    "dependency": "3D dependency: full minus blind answer log-prob, mean over pairs",
    "source_question_id": "the id as written in the release file",
    "in_debiased": "the question is in the de-biased set",
    "semantics": "JSON: how a synthetic question was made (kind, params, anchor, facing)",
    "source": "where a rotated item comes from: geometry (turned in its scene), lm (rewritten "
              "by a language model), release (the authors' files) or reviewed (accepted or "
              "corrected by a person)",
    "origin": "centre of the mesh's axis-aligned box (SQA3D positions are relative to it)",
    "objects": "objects: id, label, box (centre, size, yaw), attributes (JSON), num_points",
    "points": "the scene's points, object after object: x, y, z, r, g, b (rgb in [0, 1])",
    "index": "row index", "qid": "3DSRBench question id (-1..-3: shifts, -flip: mirrored)",
    "options": "option texts (A..D)", "answer": "the correct option's letter",
    "category": "one of the 12 3DSRBench categories", "group": "height / location / "
    "orientation / multi_object", "image": "the image", "circular_group": "rows that are "
    "circular shifts of one question", "flip_group": "original and mirrored, all shifts",
    "shift": "circular shift of the options (0 = original)", "flipped": "mirrored image",
    "pair_id": "the same question in synthetic_common and synthetic_uncommon",
    "camera": "JSON: camera pose and measured roll/pitch/height",
}


def _type_text(feature: Any) -> str:
    if isinstance(feature, datasets.Value):
        return feature.dtype
    if isinstance(feature, datasets.Sequence | list):
        inner = feature.feature if isinstance(feature, datasets.Sequence) else feature[0]
        return f"list of {_type_text(inner) if not isinstance(inner, dict) else 'struct'}"
    if isinstance(feature, datasets.Array2D):
        return f"Array2D{tuple(feature.shape)} {feature.dtype}"
    if isinstance(feature, dict):
        return "struct(" + ", ".join(feature) + ")"
    return type(feature).__name__


def write_dataset_files(
    root: str | os.PathLike,
    configs: Sequence[ConfigData],
    *,
    pretty_name: str,
    summary: str,
    license: str,
    citation: str,
    extra_sections: Sequence[str] = (),
    tags: Sequence[str] = ("3d", "question-answering", "spatial-reasoning"),
    license_note: str = "",
) -> Path:
    """Write every config as parquet shards plus a README card into the existing folder
    ``root`` (not atomic: for a folder that a caller writes atomically as a whole)."""
    if not any(c.default for c in configs):
        raise ValueError("Expected one config marked default=True")
    root = Path(root)
    yaml_configs = []
    for cfg in configs:
        entry: dict[str, Any] = {"config_name": cfg.name}
        if cfg.default:
            entry["default"] = True
        entry["data_files"] = _write_config(cfg, root)
        yaml_configs.append(entry)
    header = {"pretty_name": pretty_name, "license": license, "tags": list(tags),
              "configs": yaml_configs}
    lines = ["---", yaml.safe_dump(header, sort_keys=False).strip(), "---", "",
             f"# {pretty_name}", "", summary, "", "## Configs", "",
             markdown_table(["config", "split", "rows", "description"],
                            [[f"`{cfg.name}`{' (default)' if cfg.default else ''}", split, n,
                              cfg.description]
                             for cfg in configs for split, n in cfg.counts.items()])]
    for cfg in configs:
        lines += ["", f"## Data fields: `{cfg.name}`", "",
                  markdown_table(["column", "type", "meaning"],
                                 [[f"`{col}`", _type_text(feat), FIELD_DOCS.get(col, "")]
                                  for col, feat in cfg.features.items()])]
    lines += ["", *extra_sections, "", "## License", "", license]
    if license_note:
        lines += ["", license_note]
    lines += ["", "## Citation", "", "```bibtex", citation.strip(), "```", ""]
    (root / "README.md").write_text("\n".join(lines), encoding="utf-8")
    return root


def card_header(folder: str | os.PathLike) -> tuple[dict[str, Any], str]:
    """(YAML header, body) of a dataset folder's README card; a malformed header is a
    :class:`FormatError` naming the card and the line."""
    card = Path(folder) / "README.md"
    if not card.is_file():
        raise FileNotFoundError(f"{Path(folder)}: not a dataset folder (no README.md card)")
    text = card.read_text(encoding="utf-8-sig")
    if not text.startswith("---\n") or "\n---\n" not in text[4:]:
        raise FormatError(f"{card}: no YAML header (between --- lines) with the dataset's "
                          "configs")
    end = text.index("\n---\n", 4)
    try:
        header = yaml.safe_load(text[4:end]) or {}
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        at = f"line {mark.line + 2}, column {mark.column + 1}: " if mark is not None else ""
        what = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise FormatError(f"{card}: malformed YAML header: {at}{what}; fix the card or "
                          "rebuild the folder") from None
    if not isinstance(header, dict):
        raise FormatError(f"{card}: the YAML header is not a mapping of card fields")
    return header, text[end + 5:]


_DIGEST = re.compile(r"-([0-9a-f]{12})\.parquet$")


def verify_shards(folder: str | os.PathLike, config: str) -> bool:
    """Check the shards the card lists for ``config`` before any (cached) table is used:
    each exists, and a shard whose name carries its content hash (as this library writes
    them) still has that content. Returns False when some shard carries no hash in its
    name (its content cannot be vouched for: read it afresh). A shard edited or cut short in
    place is a :class:`FormatError` naming it."""
    root = Path(folder)
    header, _ = card_header(root)
    entry = next((c for c in header.get("configs", []) if c.get("config_name") == config), None)
    if entry is None:
        names = [c.get("config_name") for c in header.get("configs", [])]
        raise FormatError(f"{root / 'README.md'}: no config {config!r} (the card lists "
                          f"{names})")
    vouched = True
    for files in entry.get("data_files", []):
        paths = files.get("path", []) if isinstance(files, dict) else files
        for rel in [paths] if isinstance(paths, str) else paths:
            shard = root / rel
            if not shard.is_file():
                raise FormatError(f"{shard}: listed by the card for config {config!r} but "
                                  "absent; rebuild the folder")
            m = _DIGEST.search(shard.name)
            if m is None:
                vouched = False
                try:  # at least a whole parquet file: its footer is where a cut one fails
                    pq.read_metadata(shard)
                except (OSError, ValueError) as err:
                    raise FormatError(f"{shard}: not a readable parquet file "
                                      f"({str(err).splitlines()[0]}); rebuild the folder") \
                        from None
                continue
            h = hashlib.sha256()
            with open(shard, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
            if h.hexdigest()[:12] != m.group(1):
                raise FormatError(
                    f"{shard}: content changed since the folder was built (its name records "
                    f"content hash {m.group(1)}, the file now hashes to "
                    f"{h.hexdigest()[:12]}); rebuild the folder rather than edit a shard "
                    "in place")
    return vouched


def card_configs(folder: str | os.PathLike) -> list[str]:
    """The config names a dataset folder's card lists."""
    return [c["config_name"] for c in card_header(folder)[0].get("configs", [])]


def add_config(folder: str | os.PathLike, cfg: ConfigData, section: str = "") -> Path:
    """Add (or replace) one config of an existing dataset folder: its shards, its entry in
    the card's YAML ``configs:`` and a card section. The card is rewritten last and
    atomically, so a failure leaves the folder's card as it was (new shards are removed)."""
    root = Path(folder)
    card = root / "README.md"
    header, body = card_header(root)
    sub = root / (cfg.data_dir or cfg.name)
    old = set(sub.glob("*.parquet")) if sub.is_dir() else set()
    try:
        files = _write_config(cfg, root)
        entries = [c for c in header.get("configs", []) if c.get("config_name") != cfg.name]
        entries.append({"config_name": cfg.name, "data_files": files})
        header["configs"] = entries
        marker = f"## Config `{cfg.name}`"
        if marker in body:
            body = body[:body.index(marker)].rstrip() + "\n"
        counts = ", ".join(f"{s}: {n}" for s, n in cfg.counts.items())
        body = body.rstrip() + f"\n\n{marker}\n\n{cfg.description} ({counts} rows)\n" + \
            (f"\n{section}\n" if section else "")
        with atomic_path(card) as tmp:
            Path(tmp).write_text("---\n" + yaml.safe_dump(header, sort_keys=False) + "---\n"
                                 + body, encoding="utf-8")
    except BaseException:
        for f in set(sub.glob("*.parquet")) - old:
            f.unlink()
        raise
    keep = {root / f for e in files for f in ([e["path"]] if isinstance(e["path"], str)
                                              else e["path"])}
    for f in old - keep:  # the replaced config's shards
        f.unlink()
    return root


def write_dataset_folder(out: str | os.PathLike, configs: Sequence[ConfigData],
                         **card: Any) -> Path:
    """:func:`write_dataset_files` into ``out`` atomically: a failure leaves the previous
    folder, or nothing."""
    out = Path(out)
    with atomic_dir(out) as tmp:
        write_dataset_files(tmp, configs, **card)
    return out


class HubError(OSError):
    """The Hub could not be reached or refused a request (one line, no traceback)."""


_NETWORK_MODULES = ("httpx", "httpcore", "requests", "urllib3", "huggingface_hub")


@contextlib.contextmanager
def _hub_errors(what: str) -> Iterator[None]:
    """Network and Hub errors (httpx, requests, huggingface_hub: whichever the installed
    huggingface_hub uses) become one :class:`HubError` naming the endpoint and the fix."""
    try:
        yield
    except HubError:
        raise
    except Exception as err:
        if not type(err).__module__.startswith(_NETWORK_MODULES):
            raise
        endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise HubError(f"{what}: the Hub at {endpoint} could not be reached or refused the "
                       f"request ({type(err).__name__}: {first}); check the network, HF_ENDPOINT "
                       "and HF_TOKEN, or run without publishing") from None


def push_folder(folder: str | os.PathLike, repo_id: str, *, token: str | None = None,
                private: bool = False, repo_type: str = "dataset",
                commit_message: str = "Upload with hf_real3d") -> str:
    """Create ``repo_id`` if needed and upload ``folder``; returns the repo URL."""
    folder = Path(folder)
    if not (folder / "README.md").is_file():
        raise FileNotFoundError(f"{folder}: no README.md card; build the folder first")
    api = HfApi(token=token)
    with _hub_errors(f"push {folder} to {repo_id}"):
        url = api.create_repo(repo_id, repo_type=repo_type, private=private, exist_ok=True)
        api.upload_folder(folder_path=str(folder), repo_id=repo_id, repo_type=repo_type,
                          commit_message=commit_message)
    return str(url)


def _empty_split(folder: Path, config: str, split: str | None):
    """A config whose shards hold no rows, read with pyarrow (``datasets`` refuses to load
    an empty split): an empty ``Dataset`` with the shards' columns."""
    header, _ = card_header(folder)
    entry = next(c for c in header.get("configs", []) if c.get("config_name") == config)
    out = {}
    for files in entry.get("data_files", []):
        paths = files["path"] if isinstance(files["path"], list) else [files["path"]]
        out[files["split"]] = datasets.Dataset(pq.read_table(folder / paths[0]))
    return out[split] if split is not None else datasets.DatasetDict(out)


def load_local(folder: str | os.PathLike, config: str, split: str | None = "test"):
    """One split (``split=None``: every split, as a ``DatasetDict``) of one config of a
    folder this library built. The shards the card lists are verified first
    (:func:`verify_shards`), so an edited folder is never read from the ``datasets`` cache;
    shards whose names carry no content hash are read afresh every time."""
    vouched = verify_shards(folder, config)
    mode = None if vouched else datasets.DownloadMode.FORCE_REDOWNLOAD
    try:
        return datasets.load_dataset(str(folder), config, split=split, download_mode=mode)
    except NonMatchingSplitsSizesError as err:
        raise FormatError(f"{Path(folder) / 'README.md'}: config {config!r} holds other row "
                          f"counts than its card records ({str(err)[:200]}); a shard was "
                          "changed: rebuild the folder") from None
    except (OSError, ValueError) as err:  # pyarrow's errors subclass these
        if isinstance(err, FormatError):
            raise
        if "corresponds to no data" in str(err):  # datasets refuses an empty split
            return _empty_split(Path(folder), config, split)
        raise FormatError(f"{folder}: config {config!r} could not be read "
                          f"({type(err).__name__}: {str(err).splitlines()[0]})") from None


def publish_metrics(namespace: str, *, private: bool = False, token: str | None = None,
                    names: Sequence[str] | None = None) -> list[str]:
    """Upload the metric modules as Hub Spaces (evaluate's convention), so that
    ``evaluate.load("<namespace>/vrs")`` works for anyone with hf-real3d installed."""
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
            with _hub_errors(f"publish metric {name} as {repo_id}"):
                api.create_repo(repo_id, repo_type="space", space_sdk="gradio",
                                private=private, exist_ok=True)
                api.upload_folder(folder_path=tmp, repo_id=repo_id, repo_type="space",
                                  commit_message=f"Upload {name} metric with hf_real3d")
        urls.append(f"{api.endpoint}/spaces/{repo_id}")
    return urls

