"""lmms-eval tasks for Real-3DQA and 3DSRBench that score with this library's metrics.

``write_lmms_tasks(out, real3dqa=..., srbench=...)`` (CLI: ``hf-real3d lmms-tasks``) writes a
folder of lmms-eval task YAMLs plus their ``utils.py`` hooks, each task pointing at a built
dataset (a local folder or a Hub id); run them with::

    lmms-eval --model llava_onevision --model_args pretrained=... \\
        --include_path OUT --tasks hf_real3d_3dsrbench_real,hf_real3d_real3dqa

Tasks (:data:`TASKS`, one row each; names prefixed ``hf_real3d_`` so they never clash with
lmms-eval's own ``3dsrbench``): Real-3DQA's ``rotations`` config, one document per question and
viewpoint (``em``, ``em_refined`` and, over the rotation groups, ``p_at_least_1..4`` and
``vrs``, incomplete groups left out as ``hf-real3d evaluate`` does), its de-biased
``real3dqa`` config (``em``, ``em_refined``), the same on what ``stress-test --prune`` kept
and on the groups ``check-rotations`` passes (when the folder has them), Real-ScanQA, and each
3DSRBench config with lmms-eval's own ``3dsrbench_circular`` metrics and values (its letter
extraction: :mod:`hf_real3d.srbench.rules`, rule ``lmms_eval``). Each task includes one base
template (:data:`BASE`: split, generation, metadata).

Documents of a task are scored together at aggregation (P_k, CircularEval and FlipEval need
whole groups), so ``--limit`` should keep whole groups to mean anything.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import yaml

from hf_real3d._io import atomic_dir, looks_local

__all__ = ["write_lmms_tasks", "TASK_UTILS", "SRBENCH_CONFIGS"]

TASK_UTILS = Path(__file__).resolve().parent / "lmms_tasks" / "utils.py"
SRBENCH_CONFIGS = ("real", "synthetic_common", "synthetic_uncommon")
#: lmms-eval's own 3dsrbench_circular metrics (names and values), so a run through these
#: tasks compares with one through lmms-eval's task
SRBENCH_LMMS_METRICS = ("vanilla_accuracy", "flip_accuracy", "circular_accuracy",
                        "flip_circular_accuracy", "height_accuracy", "location_accuracy",
                        "orientation_accuracy", "multi_object_accuracy")
_EM = ("em", "em_refined")
_ROTATION = (*_EM, "p_at_least_1", "p_at_least_2", "p_at_least_3", "p_at_least_4", "vrs")
#: every task: (name, the input it reads, its config, the prefix of its utils.py hooks, its
#: metrics, whether it is written for a Hub id too (else only when a local folder has the
#: config))
TASKS = (
    ("hf_real3d_real3dqa", "real3dqa", "rotations", "real3dqa", _ROTATION, True),
    ("hf_real3d_real3dqa_debiased", "real3dqa", "real3dqa", "real3dqa", _EM, True),
    # what hf-real3d stress-test --prune kept, and the groups check-rotations passes
    ("hf_real3d_real3dqa_tst", "real3dqa", "rotations_tst", "real3dqa", _ROTATION, False),
    ("hf_real3d_real3dqa_debiased_tst", "real3dqa", "real3dqa_tst", "real3dqa", _EM, False),
    ("hf_real3d_real3dqa_checked", "real3dqa", "rotations_checked", "real3dqa", _ROTATION,
     False),
    ("hf_real3d_real_scanqa", "real_scanqa", "real_scanqa", "real_scanqa", _EM, True),
    *((f"hf_real3d_3dsrbench_{c}", "srbench", c, "srbench", SRBENCH_LMMS_METRICS, True)
      for c in SRBENCH_CONFIGS))
#: the command that builds each input, for the error naming a folder without its configs
_BUILT_BY = {"real3dqa": "build-real3dqa or import-real3dqa",
             "real_scanqa": "build-real-scanqa", "srbench": "build-3dsrbench"}
#: the base template every task includes (lmms-eval's ``include:``); not a task itself
BASE = "_hf_real3d_base_yaml"


class _Function(str):
    """A hook in ``utils.py``, written as lmms-eval's ``!function utils.NAME`` tag."""


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(_Function, lambda d, f: d.represent_scalar("!function", f"utils.{f}"))


def _dump(data: dict, path: Path) -> None:
    path.write_text(yaml.dump(data, Dumper=_Dumper, sort_keys=False), encoding="utf-8")


def _task(name: str, path: str, config: str, prefix: str, metrics: tuple[str, ...]) -> dict:
    return {"include": BASE, "task": name, "dataset_path": path, "dataset_name": config,
            "doc_to_visual": _Function(f"{prefix}_doc_to_visual"),
            "doc_to_text": _Function(f"{prefix}_doc_to_text"),
            "doc_to_target": "answer" if prefix == "srbench" else
            _Function(f"{prefix}_doc_to_target"),
            "process_results": _Function(f"{prefix}_process_results"),
            "metric_list": [{"metric": m, "aggregation": _Function(f"{prefix}_{m}"),
                             "higher_is_better": True} for m in metrics]}


def _configs(source: str) -> list[str] | None:
    """Configs of a local folder (None for a Hub id: the caller's list is trusted); a path
    that names no folder is an error (no task may point at nothing)."""
    folder = Path(source).expanduser()
    if not folder.is_dir():
        if looks_local(source):
            raise FileNotFoundError(f"{source}: no such dataset folder; build it first "
                                    "(hf-real3d build-real3dqa / import-real3dqa / "
                                    "build-3dsrbench) or give an org/name Hub id")
        return None
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and any(p.rglob("*.parquet")))


def write_lmms_tasks(out: str | os.PathLike, *, real3dqa: str | None = None,
                     srbench: str | None = None, real_scanqa: str | None = None,
                     max_new_tokens: int = 16) -> list[str]:
    """Write task YAMLs (the rows of :data:`TASKS` whose input is given), their base template
    and ``utils.py`` to ``out``; returns the task names.

    ``real3dqa`` / ``srbench`` / ``real_scanqa``: a dataset folder built by this library (made
    absolute) or a Hub dataset id. For a local folder only the configs it holds get a task."""
    inputs = {"real3dqa": real3dqa, "real_scanqa": real_scanqa, "srbench": srbench}
    if not any(inputs.values()):
        raise ValueError("Give real3dqa, srbench and/or real_scanqa: a built dataset folder or "
                         "a Hub id")
    tasks: dict[str, dict] = {}
    views = None
    for what, source in ((k, v) for k, v in inputs.items() if v):
        path = str(Path(source).resolve()) if Path(source).is_dir() else source
        have = _configs(source)
        rows = [t for t in TASKS if t[1] == what and (have is None and t[5] or
                                                       have is not None and t[2] in have)]
        if what == "real3dqa" and have is not None and "rotations_checked" in have:
            # the checks must have judged this folder's rotations (their set's fingerprint)
            from hf_real3d.real3dqa.checker.folder import read_checks_config
            from hf_real3d.real3dqa.rotation_set import read_rotation_set

            read_checks_config(read_rotation_set(source))
        if not any(t[5] for t in rows):
            wanted = " or ".join(f"{t[2]}/" for t in TASKS if t[1] == what and t[5])
            raise FileNotFoundError(f"{source}: no {wanted} config; build it with hf-real3d "
                                    f"{_BUILT_BY[what]}")
        tasks.update({t[0]: _task(t[0], path, *t[2:5]) for t in rows})
        if what == "real3dqa" and have is not None and "views" in have:
            views = {"path": path, "split": "test"}  # documents carry the rendered views
    base = {"test_split": "test", "output_type": "generate_until",
            "generation_kwargs": {"max_new_tokens": max_new_tokens, "temperature": 0.0,
                                  "do_sample": False},
            "metadata": [{"version": 1.0}]}
    with atomic_dir(out) as tmp:
        _dump(base, tmp / BASE)
        for name, task in tasks.items():
            _dump(task, tmp / f"{name}.yaml")
        shutil.copyfile(TASK_UTILS, tmp / "utils.py")
        if views is not None:
            (tmp / "views.json").write_text(json.dumps(views))
    return list(tasks)
