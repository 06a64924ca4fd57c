"""Build the embedded synthetic SQA3D-style benchmark: scenes, situations, questions.

Output folder, a dataset folder that ``datasets.load_dataset(out, config)`` reads::

    <out>/README.md             dataset card: configs `sqa3d` (default) and `scenes`
    <out>/data/sqa3d/           questions per split (parquet; `semantics` says how each was made)
    <out>/data/scenes/          scenes per split (objects + Array2D point clouds, as read
                                back from the ScanNet files below)
    <out>/sqa3d/v1_balanced_{questions,sqa_annotations}_{train,val,test}_scannetv2.json
    <out>/scans/<scene_id>/<scene_id>_vh_clean_2.ply  (+ .segs.json, .aggregation.json)
    <out>/synth_config.json     the config and the summary (counts, guessable share)

Deterministic for a seed: every scene draws from its own generator seeded by
``(seed, scene index)``, so a scene does not change when other splits change size.
"""

from __future__ import annotations

import collections
import logging
import os
import sys
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from hf_real3d._io import atomic_dir, write_json
from hf_real3d.hub import ConfigData, write_dataset_files
from hf_real3d.scanqa import ROOM_KINDS, scanqa_records, write_scanqa
from hf_real3d.scene import Scene, read_scannet, write_scannet
from hf_real3d.schema import fill_rows, question_features, record_row, scene_features, scene_rows
from hf_real3d.sources import DatasetFolder, resolve
from hf_real3d.sqa3d import SQA3D_BIBTEX, SQA3DRecord, summarize, write_split
from hf_real3d.synth.config import SPLITS, SynthConfig
from hf_real3d.synth.questions import generate_questions, sample_situation
from hf_real3d.synth.rooms import generate_room

__all__ = ["SynthConfig", "SynthRun", "build_benchmark", "ensure_benchmark", "generate_split",
           "generate_scene_records"]

_SPLIT_CODE = {"train": 1, "val": 2, "test": 3}


@dataclass
class SynthRun:
    """``hf-real3d synth``: each split's summary (questions, scenes, question types, the
    guessable share, ...), also in ``synth_config.json``; ``--json`` prints ``splits``."""

    splits: dict[str, dict[str, Any]]

    def lines(self, out: str) -> list[str]:
        return [f"{'split':<6} {'questions':>9} {'scenes':>6} {'guessable':>9}  "
                "types (what/is/how/can/which/other)",
                *(f"{split:<6} {s['questions']:>9} {s['scenes']:>6} "
                  f"{s['guessable_share']:>9.1%}  "
                  + "/".join(str(v) for v in s["question_types"].values())
                  for split, s in self.splits.items()), f"wrote {out}"]


def generate_scene_records(config: SynthConfig, split: str, scene_id: str
                           ) -> tuple[Scene, list[SQA3DRecord]]:
    """One scene and its questions; a pure function of (config, scene id)."""
    number = int(scene_id[5:9])
    rng = np.random.default_rng([config.seed, number])
    scene = generate_room(scene_id, rng, n_objects=config.n_objects,
                          counter_prior_rate=config.counter_prior_rate,
                          spacing=config.point_spacing)
    records: list[SQA3DRecord] = []
    target = config.questions_per_scene.get(split, 0)
    base = (_SPLIT_CODE[split] * 10_000 + number) * 10_000
    misses = 0
    while len(records) < target and misses < 50:
        sit = sample_situation(scene, rng)
        if sit is None:
            misses += 1
            continue
        want = min(config.questions_per_situation, target - len(records))
        specs = generate_questions(scene, sit, rng, want, config.guessable_fraction,
                                   config.margin_deg, config.counter_prior_fraction)
        if not specs:
            misses += 1
            continue
        position, rotation = sit.pose.to_sqa3d(scene.origin)
        for spec in specs:
            records.append(SQA3DRecord(
                question_id=base + len(records),
                scene_id=scene_id,
                situation=sit.text,
                question=spec.question,
                answers=[spec.answer],
                position=position,
                rotation=rotation,
                alternative_situation=sit.alternatives,
                extra={"synth": {
                    "kind": spec.kind,
                    "guessable": spec.guessable,
                    "prior_kind": spec.prior_kind,
                    "objects": [int(i) for i in spec.objects],
                    "direction": spec.direction,
                    "params": spec.params,
                    "anchor": int(sit.anchor),
                    "facing": None if sit.facing is None else int(sit.facing),
                }},
            ))
    return scene, records


def _job(args: tuple) -> tuple[str, Scene, list[SQA3DRecord]]:
    config, split, sid = args
    scene, recs = generate_scene_records(config, split, sid)
    return split, scene, recs


def _iter_scenes(config: SynthConfig, workers: int) -> Iterator[tuple[str, Scene, list]]:
    jobs = [(config, split, sid) for split, ids in config.scene_ids().items() for sid in ids]
    if workers <= 1 or len(jobs) < 8:
        yield from map(_job, jobs)
        return
    with ProcessPoolExecutor(workers) as pool:
        yield from pool.map(_job, jobs, chunksize=4)


def generate_split(config: SynthConfig, split: str) -> tuple[list[Scene], list[SQA3DRecord]]:
    """In-memory scenes and records of one split (no files)."""
    scenes, records = [], []
    for sid in config.scene_ids()[split]:
        scene, recs = generate_scene_records(config, split, sid)
        scenes.append(scene)
        records.extend(recs)
    return scenes, records


def build_benchmark(out: str | os.PathLike, config: SynthConfig | None = None, *,
                    write_scenes: bool = True, workers: int | None = None,
                    progress: bool = True) -> SynthRun:
    """Generate the benchmark into ``out`` (atomically) and return its summary."""
    config = config or SynthConfig()
    workers = workers if workers is not None else min(2, os.cpu_count() or 1)
    out = Path(out)
    records: dict[str, list[SQA3DRecord]] = collections.defaultdict(list)
    n_scenes = sum(config.scenes.values())
    with atomic_dir(out) as tmp:
        bar = tqdm(total=n_scenes, desc="synth scenes", unit="scene", disable=not progress)
        for split, scene, recs in _iter_scenes(config, workers):
            if write_scenes:
                write_scannet(scene, tmp / "scans")
            records[split].extend(recs)
            bar.update(1)
        bar.close()
        summary: dict[str, Any] = {}
        for split in SPLITS:
            if split not in config.scenes:
                continue
            recs = records[split]
            write_split(recs, tmp / "sqa3d", split,
                        info={"description": f"hf_real3d synthetic SQA3D-style {split} split",
                              "seed": config.seed})
            s = summarize(recs)
            kinds = collections.Counter(r.extra["synth"]["kind"] for r in recs)
            s["guessable_share"] = (
                sum(r.extra["synth"]["guessable"] for r in recs) / len(recs) if recs else 0.0)
            s["kinds"] = dict(sorted(kinds.items()))
            pk = collections.Counter(r.extra["synth"]["prior_kind"] for r in recs)
            s["prior_kinds"] = {k: pk.get(k, 0) for k in ("scene", "prior", "counter_prior")}
            summary[split] = s
            if split == "test":  # the room-level questions in ScanQA's format (Real-ScanQA)
                items = scanqa_records(recs, split, ROOM_KINDS)
                if items:
                    write_scanqa(tmp / "scanqa" / f"ScanQA_v1.0_{split}.json", items)
                s["scanqa_questions"] = len(items)
        write_json(tmp / "synth_config.json",
                   {"config": asdict(config), "summary": summary}, indent=2)
        _write_card(tmp, config, records, write_scenes)
    return SynthRun(summary)


def ensure_benchmark(out: str | os.PathLike, config: SynthConfig | None = None) -> Path:
    """``out`` holding the benchmark: the dataset folder found there (its README.md card),
    or built now with ``config`` (default: :class:`SynthConfig`'s, what ``hf-real3d synth
    --out <out>`` writes). One line on stderr says which. What the recipes do with their
    default ``dataset_name``, ``data/synth``."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):  # an empty folder is built
        resolve(out, DatasetFolder, what="the default benchmark's folder")
        _say(f"dataset: {out} (the embedded default benchmark, found)")
        return out
    _say(f"dataset: {out} not found: building the embedded default benchmark "
         f"(as hf-real3d synth --out {out})")
    build_benchmark(out, config, progress=False)
    return out


def _say(msg: str) -> None:
    logging.getLogger("hf_real3d.synth").info(msg)
    print(f"[hf_real3d] {msg}", file=sys.stderr, flush=True)


def _write_card(root: Path, config: SynthConfig, records: dict[str, list[SQA3DRecord]],
                with_scenes: bool) -> None:
    """The dataset configs of the folder: ``sqa3d`` (questions) and ``scenes`` (read back
    from the ScanNet files just written, so both views of the data agree exactly)."""
    splits = [s for s in SPLITS if records.get(s)]
    qf = question_features("kind", "guessable", "prior_kind", "semantics")
    configs = [ConfigData("sqa3d", {s: fill_rows(map(record_row, records[s]), qf)
                                    for s in splits}, qf,
                          "SQA3D-style situated questions; `semantics` (JSON) records how each "
                          "was made", default=True, data_dir="data/sqa3d")]
    if with_scenes:
        ids = config.scene_ids()
        configs.append(ConfigData(
            "scenes", {s: scene_rows(read_scannet(root / "scans", sid) for sid in ids[s])
                       for s in splits}, scene_features(),
            "objects and Nx6 point clouds (xyz + rgb in [0, 1])", rows_per_shard=20,
            data_dir="data/scenes"))
    write_dataset_files(
        root, configs, pretty_name="hf_real3d synthetic SQA3D-style benchmark",
        summary=(f"Procedural rooms with situated questions (seed {config.seed}; "
                 f"{config.guessable_fraction:.0%} of questions follow a language prior). "
                 "Generated by `hf-real3d synth`; the same data is in sqa3d/ (SQA3D JSON) "
                 "and scans/ (ScanNet files)."),
        license="apache-2.0", citation=SQA3D_BIBTEX)
