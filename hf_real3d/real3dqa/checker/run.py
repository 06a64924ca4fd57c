"""``hf-real3d check-rotations``: read a rotation set once, find SQA3D's texts as evidence,
check it (:func:`~hf_real3d.real3dqa.checker.check.check_set`), write the check folder and a
dataset folder's configs (:mod:`.outputs`).

Reads the official release folder, any folder of ``rotation_{k}.json`` files in its format, or
a dataset folder this library built or imported (its ``rotations`` config), with scenes
(``scenes``, or the folder's own ``scenes`` config) for the scene rules.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from hf_real3d.geometry import MARGIN_DEG
from hf_real3d.real3dqa.checker.check import CheckOptions, CheckResult, check_set
from hf_real3d.real3dqa.checker.evidence import find_evidence, missing_evidence
from hf_real3d.real3dqa.checker.outputs import (
    CHECKED_CONFIG,
    CHECKS_CONFIG,
    add_check_configs,
    write_check_folder,
)
from hf_real3d.real3dqa.rotation_set import RotationSet, read_rotation_set

__all__ = ["check_rotations", "check_set", "check_with_evidence"]


def check_with_evidence(rs: RotationSet, options: CheckOptions | None = None, *,
                        sqa3d: str | os.PathLike | None = None, pose_evidence: bool = True,
                        progress: bool = False) -> CheckResult:
    """:func:`check_set` of ``rs`` with the evidence :func:`~hf_real3d.real3dqa.checker.
    evidence.find_evidence` finds for it (``sqa3d``, the folder's ``sqa3d`` config, an
    ``sqa3d`` folder beside it; ``pose_evidence=False``: none): what ``check-rotations``,
    ``review-init`` and ``evaluate --exclude-flagged`` run, so that they agree."""
    evidence = find_evidence(rs.path, sqa3d=sqa3d, folder=rs.source == "folder",
                             split=rs.split) if pose_evidence else None
    return check_set(rs, options, evidence=evidence, progress=progress)


def check_rotations(dataset: str | os.PathLike, out: str | os.PathLike, *,
                    scenes: str | os.PathLike | None = None, margin_deg: float = MARGIN_DEG,
                    write_configs: bool = True, progress: bool = True,
                    sqa3d: str | os.PathLike | None = None,
                    pose_evidence: bool = True) -> dict[str, Any]:
    """``hf-real3d check-rotations``: a verdict per rotated item, written (atomically) to
    ``OUT``; for a dataset folder also its ``rotation_checks`` and ``rotations_checked``
    configs. SQA3D's texts are evidence (:func:`~hf_real3d.real3dqa.checker.evidence.
    find_evidence`: ``sqa3d``, else the folder's own ``sqa3d`` config, else an ``sqa3d``
    folder beside ``dataset``; ``pose_evidence=False``: none); without them the summary's
    ``evidence_missing`` says what is off. Returns the summary written to ``check.json``."""
    options = CheckOptions(margin_deg)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out}: exists and is not a folder; give another `out`")
    rs = read_rotation_set(dataset, scenes)
    result = check_with_evidence(rs, options, sqa3d=sqa3d, pose_evidence=pose_evidence,
                                 progress=progress)
    missing = None if result.evidence else missing_evidence(dataset, not pose_evidence)
    summary = write_check_folder(result, out, dataset=str(dataset), source=rs.source,
                                 scenes_from=rs.scenes_from, missing=missing)
    if write_configs and rs.source == "folder":
        add_check_configs(rs, result, summary)
        summary["configs"] = [CHECKS_CONFIG, CHECKED_CONFIG]
    return summary
