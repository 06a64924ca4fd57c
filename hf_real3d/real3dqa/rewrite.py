"""``hf-real3d rotate``: every question from each turned viewpoint (Real-3DQA section 3.2,
App. D), from geometry where it applies and by a language model elsewhere.

For each question and each turn (90, 180, 270 degrees clockwise by default):

* with its scene, :func:`hf_real3d.real3dqa.rotation.rotate_record` turns the agent and
  recomputes the answer from the scene graph wherever the question's meaning is known
  (``source`` = ``geometry``);
* otherwise the model behind :class:`hf_real3d.llm.LLMClient` rewrites the situation and the
  answer from the template ``hf_real3d/prompts/rotate.json`` (in-context examples; a user's
  file of the same shape replaces it), given, with a scene, what the agent sees after the turn:
  each object's quadrant and clock direction from its box centre (``source`` = ``lm``).

The reply must be one JSON object ``{"situation": ..., "answer": ...}``. A reply that does not
parse, leaves a field empty or repeats the original situation is excluded with its reason,
never repaired; a question keeps its rotation group only when every turned viewpoint has one.
The result is a Real-3DQA dataset folder (configs ``real3dqa``, ``rotations`` with a
``source`` column, ``rotations_excluded``, and ``scenes`` when given), checked at once by
``check-rotations`` (``OUT/checks/``, configs ``rotation_checks`` / ``rotations_checked``), so
the Review tab opens on what it flags and ``export-rotations`` writes the release format.
"""

from __future__ import annotations

import collections
import json
import math
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import datasets

from hf_real3d._io import FormatError
from hf_real3d.geometry import Pose, quaternion_from_yaw, yaw_from_quaternion
from hf_real3d.hub import ConfigData, card_configs, load_local, write_dataset_folder
from hf_real3d.llm import PROMPTS, LLMClient, PromptTemplate
from hf_real3d.real3dqa.build import CITATION
from hf_real3d.real3dqa.check_run import check_rotations
from hf_real3d.real3dqa.checks import HOUR_WORDS
from hf_real3d.real3dqa.format import question_row, same_text
from hf_real3d.real3dqa.rotation import rotate_record, viewpoint_angles
from hf_real3d.scene import Scene, read_scannet, scannet_paths
from hf_real3d.schema import (
    fill_rows,
    question_features,
    record_from_row,
    scene_features,
    scene_from_row,
    scene_rows,
)
from hf_real3d.spatial import Unanswerable, View
from hf_real3d.sqa3d import SQA3DRecord, read_split, split_paths
from hf_real3d.tables import markdown_table

__all__ = ["ROTATE_TEMPLATE", "scene_graph_text", "parse_rotation", "rotate_dataset"]

ROTATE_TEMPLATE = PROMPTS / "rotate.json"
_FIELDS = ("degrees", "situation", "question", "answer")
_FENCE = re.compile(r"^```(?:json)?\s*\n(.*)\n```$", re.S)


def scene_graph_text(scene: Scene, pose: Pose, limit: int = 30) -> str:
    """What the agent sees from ``pose``: each object (walls aside) with its quadrant, its
    clock direction and its distance, nearest first (App. D.2's quadrants)."""
    view = View(scene, pose, margin_deg=0.0)
    order = sorted(range(len(view.objs)), key=lambda i: view.dist[i])[:limit]
    lines = []
    for i in order:
        hour = int(round(-float(view.angle[i]) / 30.0)) % 12
        lines.append(f"{view.objs[i].label}: {view.direction(i)} ({HOUR_WORDS[hour]} o'clock), "
                     f"{float(view.dist[i]):.1f} m")
    return "\n".join(lines) or "(no objects)"


def parse_rotation(text: str, original: str) -> tuple[dict[str, Any] | None, str | None]:
    """(the rotated ``situation`` and ``answers``, None) or (None, why it is excluded)."""
    body = text.strip()
    fence = _FENCE.match(body)
    if fence:
        body = fence.group(1).strip()
    try:
        data = json.loads(body)
    except ValueError:
        return None, "not a JSON object"
    if not isinstance(data, dict):
        return None, "not a JSON object"
    sit, ans = data.get("situation"), data.get("answer")
    if not isinstance(sit, str) or not sit.strip():
        return None, "empty or missing situation"
    if isinstance(ans, list):
        ans = [a for a in ans if isinstance(a, str) and a.strip()]
    elif isinstance(ans, str) and ans.strip():
        ans = [ans]
    else:
        ans = []
    if not ans:
        return None, "empty or missing answer"
    if same_text(sit, original):
        return None, "repeats the original situation"
    return {"situation": sit.strip(), "answers": [a.strip() for a in ans]}, None


def _turned_rotation(rotation: dict[str, float], degrees: int, item: str) -> dict[str, float]:
    yaw = yaw_from_quaternion(rotation, item=item) - math.radians(degrees)
    x, y, z, w = quaternion_from_yaw(yaw)
    return {"_x": float(x), "_y": float(y), "_z": float(z), "_w": float(w)}


def _inputs(dataset: str | os.PathLike, scenes: str | os.PathLike | None, split: str
            ) -> tuple[list[SQA3DRecord], Callable[[str], Scene | None] | None]:
    """(records, scene getter or None) of an SQA3D folder or a built dataset folder (its
    ``real3dqa`` config, else ``sqa3d``; its ``scenes`` config unless ``scenes`` is given)."""
    path = Path(dataset)
    get = None
    if path.is_dir() and split_paths(path, split)[0].is_file():
        recs = read_split(path, split)
    elif path.is_dir() and (path / "README.md").is_file():
        configs = card_configs(path)
        config = next((c for c in ("real3dqa", "sqa3d") if c in configs), None)
        if config is None:
            raise FormatError(f"{path}: its card lists configs {configs}, neither real3dqa nor "
                              "sqa3d; build it with hf-real3d build-real3dqa or synth")
        recs = [record_from_row(r) for r in load_local(path, config)]
        if scenes is None and "scenes" in configs:
            ds = load_local(path, "scenes")
            index = {sid: i for i, sid in enumerate(ds["scene_id"])}

            def get(sid: str) -> Scene | None:
                return scene_from_row(ds[index[sid]]) if sid in index else None
    else:
        raise FileNotFoundError(f"{path}: not an SQA3D folder (v1_balanced_questions_{split}_"
                                "...json) or a dataset folder built by this library")
    if scenes is not None:
        root = Path(scenes)
        if not root.is_dir():
            raise FileNotFoundError(f"--scenes {root}: no such folder")

        def get(sid: str) -> Scene | None:
            return read_scannet(root, sid) if scannet_paths(root, sid)["ply"].is_file() \
                else None
    if not recs:
        raise FormatError(f"{path}: no questions to rotate")
    return recs, get


def rotate_dataset(dataset: str | os.PathLike, out: str | os.PathLike, client: LLMClient, *,
                   scenes: str | os.PathLike | None = None,
                   template: str | os.PathLike | None = None, split: str = "test",
                   n_viewpoints: int = 4, progress: bool = True) -> dict[str, Any]:
    """Rotate every question of ``dataset`` (see the module docstring) into the dataset folder
    ``out`` and check it. Returns the summary."""
    angles = viewpoint_angles(n_viewpoints)
    if Path(out).exists() and not Path(out).is_dir():
        raise FileExistsError(f"--out {out}: exists and is not a folder; give another --out")
    tpl = PromptTemplate.load(template or ROTATE_TEMPLATE, required=_FIELDS,
                              optional=("scene_graph",))
    recs, get = _inputs(dataset, scenes, split)
    client.check()
    cache: dict[str, Scene | None] = {}

    def scene_of(sid: str) -> Scene | None:
        if get is None:
            return None
        if sid not in cache:
            cache[sid] = get(sid)
        return cache[sid]

    groups: dict[int, list[dict[str, Any]]] = {}
    asks: list[tuple[SQA3DRecord, int]] = []
    prompts = []
    for rec in recs:
        scene = scene_of(rec.scene_id)
        if scene is not None:
            try:
                rows = rotate_record(rec, scene, angles)
                groups[rec.question_id] = [dict(r, source="geometry") for r in rows]
                continue
            except Unanswerable:
                pass
        for k in angles[1:]:
            graph = "(no scene given)"
            if scene is not None:
                graph = scene_graph_text(scene, rec.pose(scene.origin).turned(k))
            asks.append((rec, k))
            prompts.append(tpl.messages(degrees=k, situation=rec.situation,
                                        question=rec.question, answer=rec.answers[0],
                                        scene_graph=graph))
    results = client.generate(prompts, desc="rewriting rotations")
    excluded = []
    lm: dict[int, dict[int, dict[str, Any]]] = collections.defaultdict(dict)
    for (rec, k), g in zip(asks, results):
        if g.text is None:
            excluded.append({"question_id": rec.question_id, "rotation_deg": k,
                             "reason": f"no reply: {g.error}", "output": ""})
            continue
        parsed, why = parse_rotation(g.text, rec.situation)
        if parsed is None:
            excluded.append({"question_id": rec.question_id, "rotation_deg": k,
                             "reason": why, "output": g.text[:500]})
            continue
        lm[rec.question_id][k] = parsed
    by_id = {r.question_id: r for r in recs}
    for q, got in lm.items():
        if len(got) < len(angles) - 1:
            continue
        rec = by_id[q]
        rows = [{"question_id": q, "rotation_deg": 0, "situation": rec.situation,
                 "answers": list(rec.answers), "position": dict(rec.position),
                 "rotation": dict(rec.rotation), "source": "original"}]
        for k in angles[1:]:
            rows.append({"question_id": q, "rotation_deg": k, **got[k],
                         "position": dict(rec.position),
                         "rotation": _turned_rotation(rec.rotation, k, f"question_id {q}"),
                         "source": "lm"})
        groups[q] = rows
    rot_f = question_features("kind", "semantics", "source")
    rot_rows = []
    for q in sorted(groups):
        base = question_row(by_id[q])
        for r in groups[q]:
            row = dict(base)
            row.update({k: r[k] for k in ("situation", "answers", "position", "rotation",
                                          "rotation_deg")})
            row["alternative_situation"] = [] if r["rotation_deg"] else \
                base["alternative_situation"]
            row["source"] = r.get("source", "geometry") if r["rotation_deg"] else "original"
            rot_rows.append(row)
    ex_f = datasets.Features({"question_id": datasets.Value("int64"),
                              "rotation_deg": datasets.Value("int32"),
                              "reason": datasets.Value("string"),
                              "output": datasets.Value("string")})
    reasons = collections.Counter(e["reason"].split(":")[0] for e in excluded)
    sources = collections.Counter(r["source"] for r in rot_rows if r["rotation_deg"])
    base_f = question_features("kind", "semantics")
    configs = [ConfigData("real3dqa", {split: fill_rows([question_row(r) for r in recs],
                                                          base_f)}, base_f,
                          "the questions asked to rotate, at 0 degrees", default=True),
               ConfigData("rotations", {split: fill_rows(rot_rows, rot_f)}, rot_f,
                          f"questions with every viewpoint of {angles}, grouped on "
                          "question_id; `source` says how each was made"),
               ConfigData("rotations_excluded", {split: excluded}, ex_f,
                          "turned viewpoints a model's reply could not give, with the reason")]
    if get is not None:
        present = [s for s in (scene_of(sid) for sid in sorted({r.scene_id for r in recs}))
                   if s is not None]
        configs.append(ConfigData("scenes", {split: scene_rows(present)}, scene_features(),
                                  "objects and Nx6 point clouds", rows_per_shard=20))
    described = client.describe()
    section = ("## How the rotations were made\n\n"
               f"`hf-real3d rotate` on {len(recs)} questions and the turns "
               f"{angles[1:]}: {len(groups)} rotation groups, "
               + ", ".join(f"{n} turned items from {s}" for s, n in sources.items())
               + f". The language model: {described['model']}"
               + (f" at {described['url']}" if described.get("url") else "")
               + f" (temperature {described['temperature']}, seed {described['seed']}), prompt "
               f"`{tpl.path.name}`. Excluded turned items: {len(excluded)}"
               + (" (" + ", ".join(f"{r}: {n}" for r, n in reasons.most_common()) + ")"
                  if excluded else "") + ".\n\n"
               + markdown_table(["source", "turned items"], [[s, n] for s, n in
                                                             sources.items()]))
    write_dataset_folder(
        out, configs, pretty_name="Real-3DQA rotations (built with hf_real3d rotate)",
        summary=("Situated questions from turned viewpoints, made from scene geometry where it "
                 "applies and by a language model elsewhere; check and review before use."),
        license="other", citation=CITATION, extra_sections=[section],
        license_note="Built by the user with hf_real3d from their own SQA3D-format data.")
    check = check_rotations(out, Path(out) / "checks", progress=progress) if rot_rows else None
    return {"questions": len(recs), "groups": len(groups), "sources": dict(sources),
            "asked": len(prompts), "cached": sum(g.cached for g in results),
            "excluded": len(excluded), "reasons": dict(reasons),
            "requests": client.stats.requests, "check": None if check is None else
            {k: check[k] for k in ("items", "verdicts", "group_verdicts")}}
