"""lmms-eval tasks for Real-3DQA and 3DSRBench that score with this library's metrics.

``write_lmms_tasks(out, real3dqa=..., srbench=...)`` (CLI: ``hf-real3d lmms-tasks``) writes a
folder of lmms-eval task YAMLs plus their ``utils.py`` hooks, each task pointing at a built
dataset (a local folder or a Hub id); run them with::

    lmms-eval --model llava_onevision --model_args pretrained=... \\
        --include_path OUT --tasks hf_real3d_3dsrbench_real,hf_real3d_real3dqa

Tasks (names prefixed ``hf_real3d_`` so they never clash with lmms-eval's own ``3dsrbench``):

* ``hf_real3d_real3dqa``: the ``rotations`` config, one document per question and viewpoint;
  metrics ``em``, ``em_refined`` and, over the rotation groups, ``p_at_least_1..4`` and
  ``vrs`` (incomplete groups left out, as ``hf-real3d evaluate`` does).
* ``hf_real3d_real3dqa_debiased``: the ``real3dqa`` config (the filtered questions at 0
  degrees); ``em`` and ``em_refined``.
* ``hf_real3d_real3dqa_tst`` / ``hf_real3d_real3dqa_debiased_tst``: the same on the
  ``rotations_tst`` / ``real3dqa_tst`` configs (what ``hf-real3d stress-test --prune``
  kept), when the folder has them.
* ``hf_real3d_real3dqa_checked``: the same on the ``rotations_checked`` config (the rotation
  groups ``hf-real3d check-rotations`` flags nothing in), when the folder has it.
* ``hf_real3d_3dsrbench_<config>`` for each 3DSRBench config (``real``,
  ``synthetic_common``, ``synthetic_uncommon``): lmms-eval's own ``3dsrbench_circular``
  metrics with its values (its letter extraction, fractions): ``vanilla_accuracy``,
  ``flip_accuracy``, ``circular_accuracy``, ``flip_circular_accuracy`` and the row
  accuracies ``height_accuracy`` ... ``multi_object_accuracy``
  (``hf_real3d.srbench.rules``, rule ``lmms_eval``).

Documents of a task are scored together at aggregation (P_k, CircularEval and FlipEval need
whole groups), so ``--limit`` should keep whole groups to mean anything.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from hf_real3d._io import atomic_dir, looks_local

__all__ = ["write_lmms_tasks", "TASK_UTILS", "SRBENCH_CONFIGS"]

TASK_UTILS = Path(__file__).resolve().parent / "lmms_tasks" / "utils.py"
SRBENCH_CONFIGS = ("real", "synthetic_common", "synthetic_uncommon")
#: lmms-eval's own 3dsrbench_circular metrics (names and values), so a run through these
#: tasks compares with one through lmms-eval's task
SRBENCH_LMMS_METRICS = ("vanilla_accuracy", "flip_accuracy", "circular_accuracy",
                        "flip_circular_accuracy", "height_accuracy", "location_accuracy",
                        "orientation_accuracy", "multi_object_accuracy")

_GENERATION = """generation_kwargs:
  max_new_tokens: {max_new_tokens}
  temperature: 0.0
  do_sample: false
"""


def _metric_list(prefix: str, names: tuple[str, ...]) -> str:
    return "metric_list:\n" + "".join(
        f"  - metric: {m}\n    aggregation: !function utils.{prefix}_{m}\n"
        "    higher_is_better: true\n" for m in names)


def _task(name: str, path: str, config: str, prefix: str, metrics: tuple[str, ...],
          max_new_tokens: int, target: str) -> str:
    return (
        f"task: {name}\n"
        f"dataset_path: {path}\n"
        f"dataset_name: {config}\n"
        "test_split: test\n"
        "output_type: generate_until\n"
        f"doc_to_visual: !function utils.{prefix}_doc_to_visual\n"
        f"doc_to_text: !function utils.{prefix}_doc_to_text\n"
        f"doc_to_target: {target}\n"
        f"process_results: !function utils.{prefix}_process_results\n"
        + _GENERATION.format(max_new_tokens=max_new_tokens)
        + _metric_list(prefix, metrics)
        + "metadata:\n  - version: 1.0\n"
    )


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
    """Write task YAMLs and ``utils.py`` to ``out``; returns the task names.

    ``real3dqa`` / ``srbench``: a dataset folder built by this library (made absolute) or a
    Hub dataset id. For a local folder only the configs it holds get a task."""
    if not real3dqa and not srbench and not real_scanqa:
        raise ValueError("Give real3dqa, srbench and/or real_scanqa: a built dataset folder or "
                         "a Hub id")
    tasks: dict[str, str] = {}
    views = None
    if real3dqa:
        path = str(Path(real3dqa).resolve()) if Path(real3dqa).is_dir() else real3dqa
        have = _configs(real3dqa)
        metrics = ("em", "em_refined", "p_at_least_1", "p_at_least_2", "p_at_least_3",
                   "p_at_least_4", "vrs")
        if have is None or "rotations" in have:
            tasks["hf_real3d_real3dqa"] = _task("hf_real3d_real3dqa", path, "rotations",
                                                "real3dqa", metrics, max_new_tokens,
                                                "!function utils.real3dqa_doc_to_target")
        if have is None or "real3dqa" in have:
            tasks["hf_real3d_real3dqa_debiased"] = _task(
                "hf_real3d_real3dqa_debiased", path, "real3dqa", "real3dqa",
                ("em", "em_refined"), max_new_tokens, "!function utils.real3dqa_doc_to_target")
        # what hf-real3d stress-test --prune kept, when the folder has it
        if have is not None and "rotations_tst" in have:
            tasks["hf_real3d_real3dqa_tst"] = _task("hf_real3d_real3dqa_tst", path,
                                                    "rotations_tst", "real3dqa", metrics,
                                                    max_new_tokens,
                                                    "!function utils.real3dqa_doc_to_target")
        if have is not None and "real3dqa_tst" in have:
            tasks["hf_real3d_real3dqa_debiased_tst"] = _task(
                "hf_real3d_real3dqa_debiased_tst", path, "real3dqa_tst", "real3dqa",
                ("em", "em_refined"), max_new_tokens, "!function utils.real3dqa_doc_to_target")
        if have is not None and "rotations_checked" in have:  # what check-rotations passes
            # the checks must have judged this folder's rotations (their set's fingerprint)
            from hf_real3d.real3dqa.checker.folder import read_checks_config
            from hf_real3d.real3dqa.rotation_set import read_rotation_set

            read_checks_config(read_rotation_set(real3dqa))
            tasks["hf_real3d_real3dqa_checked"] = _task(
                "hf_real3d_real3dqa_checked", path, "rotations_checked", "real3dqa", metrics,
                max_new_tokens, "!function utils.real3dqa_doc_to_target")
        if have is not None and not {"rotations", "real3dqa"} & set(have):
            raise FileNotFoundError(f"{real3dqa}: no rotations/ or real3dqa/ config; build it "
                                    "with hf-real3d build-real3dqa or import-real3dqa")
        if have is not None and "views" in have:  # documents carry the rendered views
            views = {"path": path, "split": "test"}
    if real_scanqa:
        path = str(Path(real_scanqa).resolve()) if Path(real_scanqa).is_dir() else real_scanqa
        have = _configs(real_scanqa)
        if have is not None and "real_scanqa" not in have:
            raise FileNotFoundError(f"{real_scanqa}: no real_scanqa/ config; build it with "
                                    "hf-real3d build-real-scanqa")
        tasks["hf_real3d_real_scanqa"] = _task("hf_real3d_real_scanqa", path, "real_scanqa",
                                               "real_scanqa", ("em", "em_refined"),
                                               max_new_tokens,
                                               "!function utils.real_scanqa_doc_to_target")
    if srbench:
        path = str(Path(srbench).resolve()) if Path(srbench).is_dir() else srbench
        have = _configs(srbench)
        configs = [c for c in SRBENCH_CONFIGS if have is None or c in have]
        if not configs:
            raise FileNotFoundError(f"{srbench}: none of the configs {list(SRBENCH_CONFIGS)}; "
                                    "build it with hf-real3d build-3dsrbench")
        for c in configs:
            name = f"hf_real3d_3dsrbench_{c}"
            tasks[name] = _task(name, path, c, "srbench",
                                SRBENCH_LMMS_METRICS, max_new_tokens, "answer")
    with atomic_dir(out) as tmp:
        for name, text in tasks.items():
            (tmp / f"{name}.yaml").write_text(text)
        shutil.copyfile(TASK_UTILS, tmp / "utils.py")
        if views is not None:
            (tmp / "views.json").write_text(json.dumps(views))
    return list(tasks)
