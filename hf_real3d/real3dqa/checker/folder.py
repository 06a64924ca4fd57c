"""The readers of ``hf-real3d check-rotations``' outputs: a check folder
(:func:`read_check_folder`) and a dataset folder's ``rotation_checks`` config
(:func:`read_checks_config`). Each verdict must be one of :data:`VERDICTS`, each repair must
leave nothing empty, and the fingerprint of the set judged must be the given set's."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from hf_real3d._io import FormatError, read_json, read_jsonl
from hf_real3d.real3dqa.checker.outputs import CHECKS_CONFIG
from hf_real3d.real3dqa.checker.rules import VERDICTS
from hf_real3d.real3dqa.rotation_set import RotationSet

__all__ = ["read_check_folder", "read_checks_config"]


def _redo(dataset: Any) -> str:
    return f"run hf-real3d check-rotations --dataset {dataset} --out DIR again"


def _check_verdict(value: Any, where: str) -> None:
    if value not in VERDICTS:
        raise FormatError(f"{where}: verdict {value!r} is not one of {', '.join(VERDICTS)} "
                          "(check-rotations writes no other); restore it, or write the checks "
                          "again with hf-real3d check-rotations")


def _check_repair(p: dict[str, Any], where: str) -> None:
    """A proposed repair: an action of :func:`repairs`; a replacement's answers a non-empty
    list of non-empty texts, a rewrite's situation none yet (for a person to write) or a
    text."""
    action, to = p.get("action"), p.get("to")
    if action not in ("replace", "rewrite"):
        raise FormatError(f"{where}: action {action!r} is not replace or rewrite (what "
                          "check-rotations proposes); restore it, or drop the line")
    if action == "rewrite":
        ok, what = to is None or (isinstance(to, str) and bool(to.strip())), "situation"
    else:
        ok, what = isinstance(to, list) and bool(to) and all(
            isinstance(a, str) and a.strip() for a in to), "answer"
    if not ok:
        raise FormatError(f"{where}: question_id {p.get('question_id')} at "
                          f"{p.get('rotation_deg')} degrees: a repair to {to!r} leaves an "
                          f"empty {what} (answers are a non-empty list of non-empty texts); "
                          "fix the line or drop it")


def read_check_folder(folder: str | os.PathLike, rs: RotationSet | None = None
                      ) -> tuple[list[tuple[int, dict]], list[tuple[int, dict]]]:
    """The (line, verdict) and (line, repair) pairs of a ``check-rotations`` output folder
    (``verdicts.jsonl``, ``repairs.jsonl`` when present), every verdict and repair checked;
    with ``rs``, the folder's ``check.json`` must carry ``rs``' fingerprint (checks of
    another set, or of a set since changed, are an error naming both)."""
    folder = Path(folder)
    path = folder / "verdicts.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{folder}: no verdicts.jsonl; give a folder written by "
                                "hf-real3d check-rotations on this rotation set")
    if rs is not None:
        meta = read_json(folder / "check.json") if (folder / "check.json").is_file() else None
        said = meta.get("fingerprint") if isinstance(meta, dict) else None
        if not said:
            raise FormatError(f"{folder}: no check.json with the fingerprint of the rotation set "
                              "it judged (written before check-rotations recorded it); "
                              + _redo(rs.path))
        if said != rs.fingerprint():
            judged = str(meta.get("dataset"))
            same = Path(judged).resolve() == Path(rs.path).resolve()
            raise FormatError(f"{folder}: " + (
                f"{rs.path} changed since these checks (its turned items' fingerprint was "
                f"{said}, it is {rs.fingerprint()} now: a rotation file or its rows were "
                "edited, or check.json was); " if same else
                f"these checks judged the rotation set {judged} (fingerprint {said}), not "
                f"{rs.path} (fingerprint {rs.fingerprint()}: another set, a subset of it, or "
                "one edited since); give this set's checks, or ") + _redo(rs.path))
    lines = read_jsonl(path)
    for n, d in lines:
        _check_verdict(d.get("verdict"), f"{path}: line {n}")
    rpath = folder / "repairs.jsonl"
    proposals = read_jsonl(rpath) if rpath.is_file() else []
    for n, p in proposals:
        _check_repair(p, f"{rpath}: line {n}")
    return lines, proposals


def read_checks_config(rs: RotationSet) -> list[dict[str, Any]]:
    """The rows (``question_id``, ``rotation_deg``, ``verdict``) of the ``rotation_checks``
    config of the dataset folder ``rs`` was read from, each verdict checked and the config's
    fingerprint compared with ``rs``'."""
    # datasets only for a dataset folder's config
    from hf_real3d.hub import card_configs, load_frame

    src = rs.path
    if CHECKS_CONFIG not in card_configs(src):
        raise FileNotFoundError(f"{src}: no {CHECKS_CONFIG} config to leave groups out by; "
                                f"write it with hf-real3d check-rotations `dataset` {src} "
                                "`out` DIR")
    df = load_frame(src, CHECKS_CONFIG, rs.split,
                    columns=("question_id", "rotation_deg", "verdict", "set_fingerprint"))
    redo = _redo(src)
    if "verdict" not in df or "set_fingerprint" not in df:
        raise FormatError(f"{src}: its {CHECKS_CONFIG} config predates the "
                          f"{'verdicts' if 'verdict' not in df else 'set fingerprint'} (no "
                          f"{'verdict' if 'verdict' not in df else 'set_fingerprint'} column); "
                          + redo)
    said = sorted(set(df.set_fingerprint))
    if said != [rs.fingerprint()]:
        raise FormatError(f"{src}: its {CHECKS_CONFIG} config judged the rotation set with "
                          f"fingerprint {', '.join(said) or 'none'}, but its rotations config "
                          f"({rs.split} split) has fingerprint {rs.fingerprint()}: the checks "
                          "come from another set, or the rotations changed since; " + redo)
    rows = df.drop(columns="set_fingerprint").to_dict("records")
    for n, r in enumerate(rows, 1):
        _check_verdict(r["verdict"], f"{src}: {CHECKS_CONFIG} row {n} (question_id "
                                     f"{r['question_id']} at {r['rotation_deg']} degrees)")
    return rows
