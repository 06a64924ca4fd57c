"""A review folder's own files: ``review.json`` and the checker's stored suggestions, made
once (:func:`create_folder`) and read without the rotation set (:func:`read_meta`,
:meth:`StoredChecks.read`).

* ``R/review.json``: the rotation set it reviews (its path and a fingerprint of its rotated
  items), where the suggestions came from (``checks``) and the queue's settings (share of
  groups shown twice, at least how many showings later, seed); written last, so its
  presence marks a whole folder;
* ``R/checks/``: the checker's suggestions, stored once when the folder is made (read from
  ``hf-real3d check-rotations`` output when there is one, else computed):
  ``verdicts.jsonl`` (one line per rotated item: verdict, sense, rules, hits) and
  ``repairs.jsonl`` (the proposed fixes).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hf_real3d._io import FormatError, atomic_dir, read_json, write_json

__all__ = ["StoredChecks", "read_meta", "create_folder", "set_items", "QUEUE_DEFAULTS", "META",
           "CHECKS_DIR"]

META = "review.json"
CHECKS_DIR = "checks"
QUEUE_DEFAULTS = {"repeat_share": 0.1, "repeat_gap": 50, "seed": 0}

Key = tuple[Any, int]


def read_meta(folder: Path) -> dict[str, Any]:
    """``review.json`` of ``folder``; FileNotFoundError when there is none."""
    path = folder / META
    if not path.is_file():
        raise FileNotFoundError(
            f"{folder}: no review.json, so not a review folder; make one with "
            "hf-real3d review-init `dataset` SET `review` FOLDER (or explore `review`)")
    meta = read_json(path)
    if not isinstance(meta, dict) or "fingerprint" not in meta or "dataset" not in meta:
        raise FormatError(f"{path}: not a review folder's review.json (an object with the "
                          "dataset and its fingerprint); move it away or give another review "
                          "folder")
    return meta


def _verdict_line(d: dict[str, Any]) -> dict[str, Any]:
    keep = ("question_id", "rotation_deg", "verdict", "sense", "turn", "turn_source", "rules",
            "why")
    out = {k: d[k] for k in keep if k in d}
    out["hits"] = [{k: h[k] for k in ("rule", "detail", "needs_scene") if k in h}
                   for h in d.get("hits", [])]
    out.setdefault("rules", [h["rule"] for h in out["hits"]])
    return out


@dataclass
class StoredChecks:
    """The checker's suggestions of a review folder: a verdict line per rotated item and the
    proposed repairs by item. ``ids``: each question id as text -> the set's own id."""

    verdicts: dict[Key, dict[str, Any]]
    proposals: dict[Key, list[dict[str, Any]]] = field(default_factory=dict)
    ids: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def build(cls, verdicts: dict[Key, dict[str, Any]], proposals: Iterable[dict[str, Any]]
              ) -> StoredChecks:
        ids = {str(q): q for q, _ in verdicts}
        by_item: dict[Key, list[dict[str, Any]]] = {}
        for p in proposals:
            key = (ids.get(str(p["question_id"]), p["question_id"]), int(p["rotation_deg"]))
            by_item.setdefault(key, []).append(p)
        return cls(verdicts, by_item, ids)

    @classmethod
    def read(cls, folder: Path, rows: dict[Key, dict[str, Any]] | None = None,
             keys: Sequence[Key] | None = None, rotation_set=None) -> StoredChecks:
        """The suggestions in ``folder`` (a review folder's ``checks/`` or check-rotations
        output), each verdict and repair checked; given ``rotation_set``, the folder must have
        judged it (its fingerprint). Given the set's ``rows`` and rotated ``keys``, lines that
        checked another text or do not cover the set are a :class:`FormatError`."""
        # the check-folder reader (verdicts, repairs, fingerprint) imports the checker
        from hf_real3d.real3dqa.checker.folder import read_check_folder

        lines, proposed = read_check_folder(folder, rotation_set)
        path = folder / "verdicts.jsonl"
        ids = {str(q): q for q, _ in (keys or [])}
        verdicts: dict[Key, dict[str, Any]] = {}
        for n, d in lines:
            if "question_id" not in d or "rotation_deg" not in d or "verdict" not in d:
                raise FormatError(f"{path}: line {n} lacks question_id, rotation_deg or "
                                  "verdict; is this check-rotations output?")
            key = (ids.get(str(d["question_id"]), d["question_id"]), int(d["rotation_deg"]))
            if rows is not None:
                _same_text(path, n, key, d, rows.get(key))
            verdicts[key] = _verdict_line(dict(d, question_id=key[0]))
        missing = [k for k in (keys or []) if k not in verdicts]
        if missing:
            raise FormatError(f"{path}: covers {len(verdicts)} of the set's {len(keys)} rotated "
                              f"items (question_id {missing[0][0]} at {missing[0][1]} degrees is "
                              "missing); run hf-real3d check-rotations on this set again")
        got = cls.build(verdicts, [d for _, d in proposed])
        for key in got.proposals:
            if key not in verdicts:
                raise FormatError(f"{folder / 'repairs.jsonl'}: a proposal for question_id "
                                  f"{key[0]} at {key[1]} degrees, which the set lacks; run "
                                  "check-rotations again")
        return got

    def suggestion(self, key: Key) -> dict[str, Any]:
        """What the checker says of an item: ``verdict``, ``sense``, ``rules``."""
        v = self.verdicts.get(key, {})
        return {"verdict": v.get("verdict"), "sense": v.get("sense"),
                "rules": list(v.get("rules", []))}

    def rules(self, key: Key) -> list[str]:
        return list(self.verdicts.get(key, {}).get("rules", []))


def _same_text(path: Path, n: int, key: Key, d: dict[str, Any], row: dict | None) -> None:
    if row is None or ("situation" in d and d["situation"] != row["situation"]) or \
            ("answers" in d and list(d["answers"]) != list(row["answers"])):
        raise FormatError(f"{path}: line {n}: question_id {key[0]} at {key[1]} degrees was "
                          "checked with another text than the set has (or is not in it); run "
                          "hf-real3d check-rotations on this set again")


def run_checker(rotation_set) -> StoredChecks:
    """The checker's suggestions computed now (a folder without stored ones), with the
    evidence ``check-rotations`` would read for the set."""
    # the checker itself only when no stored checks are there
    from hf_real3d.real3dqa.checker.outputs import repairs
    from hf_real3d.real3dqa.checker.run import check_with_evidence

    result = check_with_evidence(rotation_set)
    verdicts = {(it.question_id, it.rotation_deg): _verdict_line(it.to_dict())
                for it in result.items}
    return StoredChecks.build(verdicts, repairs(result))


def find_checks(rotation_set, rows: dict[Key, dict], keys: list[Key],
                checks: str | os.PathLike | None) -> tuple[StoredChecks, str]:
    """(the suggestions for a new folder, where they came from): ``checks`` (check-rotations
    output), else the dataset folder's own ``checks/`` when it covers the set, else the
    checker run now."""
    if checks is not None:
        got = StoredChecks.read(Path(checks), rows, keys, rotation_set)
        return got, f"hf-real3d check-rotations output {Path(checks).resolve()}"
    own = Path(rotation_set.path) / "checks"
    if (own / "verdicts.jsonl").is_file():
        try:
            return (StoredChecks.read(own, rows, keys, rotation_set),
                    f"the dataset folder's stored checks {own.resolve()}")
        except (FormatError, FileNotFoundError):
            pass  # stale checks of another text: the checker runs
    return run_checker(rotation_set), "the rotation checker, run when the folder was made"


def set_items(rotation_set) -> tuple[dict[Key, dict[str, Any]], list[Key]]:
    """(every row of the set by ``(question_id, rotation_deg)``, its rotated items in order)."""
    rows = {(r["question_id"], int(r["rotation_deg"])): r for r in rotation_set.rows}
    return rows, sorted((key for key in rows if key[1]), key=str)


def _write_lines(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def create_folder(folder: Path, rotation_set, dataset: str | os.PathLike, *,
                  checks: str | os.PathLike | None = None,
                  settings: dict[str, Any] | None = None) -> tuple[dict[str, Any], StoredChecks]:
    """Make a review folder for ``rotation_set`` (read from ``dataset``): the stored checks,
    then ``review.json``. ``folder`` must be new or empty. Returns (meta, checks)."""
    if (folder / META).is_file():
        raise FileExistsError(f"{folder}: already a review folder (review.json); annotators "
                              "resume it as it is, or give a new folder")
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise FileExistsError(f"{folder}: exists and is not a review folder (no review.json); "
                              "give a new or empty folder")
    queue = dict(QUEUE_DEFAULTS)
    queue.update({k: v for k, v in (settings or {}).items() if v is not None})
    if not 0 <= queue["repeat_share"] <= 1 or queue["repeat_gap"] < 1:
        raise ValueError(f"repeat share {queue['repeat_share']} must lie in [0, 1] and repeat "
                         f"gap {queue['repeat_gap']} be at least 1")
    rows, keys = set_items(rotation_set)
    stored, found_in = find_checks(rotation_set, rows, keys, checks)
    meta = {"dataset": str(Path(dataset).resolve()), "fingerprint": rotation_set.fingerprint(),
            "items": len(keys), "checks": found_in,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S"), **queue}
    folder.mkdir(parents=True, exist_ok=True)
    with atomic_dir(folder / CHECKS_DIR) as tmp:
        _write_lines(tmp / "verdicts.jsonl", [stored.verdicts[k] for k in keys])
        _write_lines(tmp / "repairs.jsonl", [p for k in keys for p in stored.proposals.get(k, [])])
    write_json(folder / META, meta, indent=2)  # last: its presence marks a whole folder
    return meta, stored
