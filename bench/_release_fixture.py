"""Release-shaped Real-3DQA references and official-format predictions at any size, for the
end-to-end evaluation benchmark.

The references copy the release's layout: ``rotation_{0,90,180,270}.json`` and the
de-biased file, SQA3D-style ``{"questions": [...]}`` objects with the same fields (situation,
alternative situations, position, quaternion, one answer); ``rotation_90`` / ``rotation_270``
use ``id * 100 + 01 / 03``. Predictions follow the official per-viewpoint format, a JSON
list of ``{question_id, response_pred, response_gt}`` with the ``01/02/03`` suffixes the
official script strips.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

WORDS = ("chair table left right forward backward two three four one zero yes no window door "
         "bed couch desk lamp monitor brown white black gray cabinet sink toilet trash can "
         "bookshelf picture pillow backpack box plant piano refrigerator").split()
TYPES = ("spatial relation", "number", "navigation", "object", "color", "visibility", "state",
         "shape")
SUFFIX = {0: None, 90: 1, 180: 2, 270: 3}


def write_release_like(folder: Path, groups: int, seed: int = 0) -> dict[int, list[str]]:
    """Write the five release files for ``groups`` rotation groups (the de-biased file holds
    every group's 0-degree question); returns {viewpoint: answers in group order}."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    base = 220602000000 + np.arange(groups, dtype=np.int64) * 7
    scenes = [f"scene{s:04d}_00" for s in rng.integers(0, 700, groups)]
    xs, ys = rng.uniform(-4, 4, groups), rng.uniform(-4, 4, groups)
    yaws = rng.uniform(-math.pi, math.pi, groups)
    words = np.array(WORDS, dtype=object)
    answers = {}
    for deg in (0, 90, 180, 270):
        ans = words[rng.integers(0, len(words), groups)].tolist()
        answers[deg] = ans
        items = []
        for i in range(groups):
            yaw = yaws[i] - math.radians(deg)
            sfx = SUFFIX[deg]
            qid = int(base[i]) if sfx in (None, 2) else int(base[i]) * 100 + sfx
            items.append({
                "scene_id": scenes[i],
                "situation": f"I am facing the {WORDS[i % len(WORDS)]} with the "
                             f"{WORDS[(i * 7) % len(WORDS)]} "
                             f"on my {'left' if (i + deg) % 2 else 'right'}.",
                "alternative_situation": ["I am standing near the door.",
                                          "I just sat down on the couch."],
                "question": f"What is on my {'left' if i % 3 else 'right'} side near item {i}?",
                "question_id": qid,
                "answers": [{"answer": ans[i], "answer_confidence": "yes", "answer_id": 1}],
                "position": {"x": float(xs[i]), "y": float(ys[i]), "z": 0},
                "rotation": {"_x": 0.0, "_y": 0.0, "_z": math.sin(yaw / 2),
                             "_w": math.cos(yaw / 2)},
            })
        (folder / f"rotation_{deg}.json").write_text(json.dumps({"questions": items}))
        if deg == 0:
            deb = [dict(it, question_type=TYPES[i % len(TYPES)]) for i, it in enumerate(items)]
            (folder / "de-biased_testset_with_question_type.json").write_text(
                json.dumps({"questions": deb}))
    return answers


def write_official_predictions(folder: Path, groups: int, answers: dict[int, list[str]],
                               seed: int = 1) -> list[Path]:
    """One official-format prediction file per viewpoint; ~55% right, some styled answers."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    base = 220602000000 + np.arange(groups, dtype=np.int64) * 7
    words = np.array(WORDS, dtype=object)
    paths = []
    for deg, ans in answers.items():
        ans_arr = np.array(ans, dtype=object)
        pred = np.where(rng.random(groups) < 0.55, ans_arr,
                        words[rng.integers(0, len(words), groups)])
        styled = rng.random(groups) < 0.2
        pred[styled] = ["The " + p.capitalize() + "." for p in pred[styled]]
        sfx = SUFFIX[deg]
        ids = base if sfx is None else base * 100 + sfx
        rows = [{"question_id": int(q), "response_pred": p, "response_gt": [a]}
                for q, p, a in zip(ids.tolist(), pred.tolist(), ans)]
        path = folder / f"rotation_{deg}.json"
        path.write_text(json.dumps(rows))
        paths.append(path)
    return paths
