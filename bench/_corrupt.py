"""Seeded corruptions of correct rotations, to measure what the rotation checker finds.

Each kind is a mistake a person or a language model makes when rewriting a situation for a
turned viewpoint; :func:`corrupt` applies one kind to a share of the rotated items it
applies to and returns which items it changed, so recall per kind is
``flagged changed items / changed items`` (``bench/study_check_recall.py`` and
``tests/test_checker.py`` measure it on synthetic rooms rotated from geometry). Given the
scenes, a text corruption is applied only where the names it involves pick out one object of
the room: "still facing the chair" is no mistake when the room has a second chair ahead.

* ``mirror``: the turned situation is viewpoint 0's with left and right swapped;
* ``unturned``: the turned situation is viewpoint 0's, word for word;
* ``clock_wrong_way``: a direction said as a clock hour moved the wrong way round (both
  viewpoints' phrases rewritten as clock hours; 90 and 270 only, where the wrong way differs);
* ``faced_kept``: the turned situation still faces viewpoint 0's object;
* ``answer_other_viewpoint``: the answer of another viewpoint whose answer differs (found
  only with the scene).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from hf_real3d.english.mentions import HOUR_WORDS, mentions
from hf_real3d.geometry import bearing_after_turn
from hf_real3d.real3dqa.checker.scene import several_named
from hf_real3d.scene import STRUCTURAL_LABELS

__all__ = ["KINDS", "corrupt"]

KINDS = ("mirror", "unturned", "clock_wrong_way", "faced_kept", "answer_other_viewpoint")

_SIDES = {"left": "right", "right": "left"}
_QUADRANT_PHRASES = {0.0: "in front of me", 90.0: "on my right", 180.0: "behind me",
                     270.0: "on my left"}


def _clock(bearing: float) -> str:
    return f"in my {HOUR_WORDS[int(round(bearing / 30)) % 12]} o'clock direction"


def _mirror(text: str) -> str | None:
    out = re.sub(r"\b(left|right)\b", lambda m: _SIDES[m.group(1)], text)
    return out if out != text else None


def _clock_pair(text0: str, text: str, turn: float) -> tuple[str, str] | None:
    """Both texts with one object's quadrant phrase said as a clock hour, the turned one
    moved the wrong way round."""
    if turn % 180 == 0:
        return None
    m0 = {m.head: m for m in mentions(text0) if not m.facing and m.width == 90}
    for m in mentions(text):
        a = m0.get(m.head)
        if m.facing or m.width != 90 or a is None:
            continue
        p0, p = _QUADRANT_PHRASES.get(a.bearing), _QUADRANT_PHRASES.get(m.bearing)
        if p0 is None or p is None or p0 not in text0 or p not in text:
            continue
        wrong = bearing_after_turn(a.bearing, -turn)  # the other way round
        return text0.replace(p0, _clock(a.bearing), 1), text.replace(p, _clock(wrong), 1)
    return None


def _faced_kept(text0: str, text: str) -> str | None:
    f0 = next((m for m in mentions(text0) if m.facing), None)
    fk = next((m for m in mentions(text) if m.facing), None)
    if f0 is None or fk is None or f0.head == fk.head:
        return None
    said = " ".join(fk.words)
    return text.replace(said, " ".join(f0.words), 1) if said in text else None


def _faced0(text0: str, text: str) -> set[str]:
    return {m.head for m in mentions(text0) if m.facing}


def _moved(text0: str, text: str) -> set[str]:
    m0 = {m.head for m in mentions(text0) if not m.facing and m.width == 90}
    return {m.head for m in mentions(text) if m.head in m0}


# the names a corruption's mistake depends on: with the scenes, each must pick out one object
_NAMED = {"mirror": _faced0, "faced_kept": _faced0, "clock_wrong_way": _moved}


def corrupt(rows: Sequence[dict[str, Any]], kind: str, *, share: float = 1.0,
            seed: int = 0, scenes: Callable[[str], Any] | None = None
            ) -> tuple[list[dict[str, Any]], set[tuple[Any, int]]]:
    """A copy of ``rows`` (one per question and viewpoint, as
    :class:`~hf_real3d.real3dqa.rotation_set.RotationSet` holds them) with ``kind`` applied to
    ``share`` of the rotated items it applies to (chosen with ``seed``), and the
    ``(question_id, rotation_deg)`` keys of the changed items. ``scenes`` (scene_id ->
    Scene): text corruptions only where every name involved picks out one object."""
    if kind not in KINDS:
        raise ValueError(f"Expected a corruption kind among {KINDS} but got {kind!r}")
    out = copy.deepcopy(list(rows))
    groups: dict[Any, dict[int, dict[str, Any]]] = {}
    for r in out:
        groups.setdefault(r["question_id"], {})[int(r["rotation_deg"])] = r
    rng = np.random.default_rng(seed)
    changed: set[tuple[Any, int]] = set()
    for q in sorted(groups, key=str):
        g = groups[q]
        if 0 not in g:
            continue
        r0 = g[0]
        for k in sorted(d for d in g if d):
            if rng.random() >= share:
                continue
            r = g[k]
            if scenes is not None and kind in _NAMED:
                several = several_named(scenes(r["scene_id"])) | STRUCTURAL_LABELS
                if _NAMED[kind](r0["situation"], r["situation"]) & several:
                    continue
            if kind == "mirror":
                new = _mirror(r0["situation"])
                if new is None or not any(m.facing for m in mentions(new)):
                    continue
                r["situation"] = new
            elif kind == "unturned":
                r["situation"] = r0["situation"]
            elif kind == "clock_wrong_way":
                pair = _clock_pair(r0["situation"], r["situation"], k)
                if pair is None or any(c[0] == q for c in changed):
                    continue
                # viewpoint 0's text in clock hours too (one item a group): the group's other
                # turned items compare with that text, which is still right
                r0["situation"], r["situation"] = pair
            elif kind == "faced_kept":
                new = _faced_kept(r0["situation"], r["situation"])
                if new is None:
                    continue
                r["situation"] = new
            else:
                other = next((g[j]["answers"] for j in sorted(g) if j != k and
                              sorted(g[j]["answers"]) != sorted(r["answers"])), None)
                if other is None:
                    continue
                r["answers"] = list(other)
            changed.add((q, k))
    return out, changed
