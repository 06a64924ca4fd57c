"""Datasets on disk and on the Hub: parquet shards + a README card with YAML ``configs:``.

A folder written by :func:`write_dataset_folder` loads with ``load_dataset(folder, config)``
and, from its parent, ``load_dataset("<folder name>", config)``; :func:`push_folder`
publishes it with ``huggingface_hub`` (``HF_ENDPOINT`` selects the Hub). Folders are
written atomically: a failure leaves the previous folder, or nothing.

``datasets`` caches a local folder by the ``data_files`` its card lists, not by the files'
content, so a rebuilt folder whose card named the same files would load the *previous*
build. Shard names therefore carry a hash of their content and the card lists them exactly: a
rebuilt folder with other content is a new cache entry, and the same content reuses the
cache. ``load_dataset(folder, config)`` is safe from any working directory.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import datasets
import pandas as pd
import pyarrow.parquet as pq
import yaml
from datasets.exceptions import NonMatchingSplitsSizesError
from huggingface_hub import HfApi

from hf_real3d._io import FormatError, atomic_dir, atomic_path
from hf_real3d.schema import FIELD_DOCS
from hf_real3d.tables import markdown_table

__all__ = ["ConfigData", "HubError", "write_dataset_files", "write_dataset_folder", "push_folder",
           "load_local", "load_frame", "verify_shards", "card_header", "card_configs",
           "hub_errors"]


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
    extra_json: dict[str, Any] | None = None,
) -> Path:
    """Write every config as parquet shards plus a README card into the existing folder
    ``root`` (not atomic: for a folder that a caller writes atomically as a whole);
    ``extra_json``: JSON files to write beside the card (file name -> value)."""
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
    for name, value in (extra_json or {}).items():
        (root / name).write_text(json.dumps(value, indent=2, allow_nan=False) + "\n",
                                 encoding="utf-8")
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


def card_splits(folder: str | os.PathLike, config: str) -> list[str]:
    """The split names the card lists for one config."""
    for c in card_header(folder)[0].get("configs", []):
        if c.get("config_name") == config:
            files = c.get("data_files", [])
            return [f["split"] for f in files if isinstance(f, dict) and "split" in f]
    return []


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
def hub_errors(what: str) -> Iterator[None]:
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
    card_header(folder)  # a dataset folder's card, before anything is uploaded
    api = HfApi(token=token)
    with hub_errors(f"push {folder} to {repo_id}"):
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


def load_frame(folder: str | os.PathLike, config: str, split: str = "test", *,
               columns: Sequence[str] | None = None, drop: Sequence[str] = ()) -> pd.DataFrame:
    """One split of one config of a built folder as a pandas DataFrame (read through
    :func:`load_local`, so verified first). ``columns``: keep those of them the config has,
    in that order; ``drop``: leave these out (images, say)."""
    ds = load_local(folder, config, split)
    if columns is not None:
        ds = ds.select_columns([c for c in columns if c in ds.column_names])
    if drop:
        ds = ds.remove_columns([c for c in drop if c in ds.column_names])
    return ds.to_pandas()
