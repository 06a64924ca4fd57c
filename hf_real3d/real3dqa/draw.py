"""A question drawn top-down from every viewpoint of its rotation group."""

from __future__ import annotations

import os
import textwrap

from hf_real3d.real3dqa.rotation import rotate_record, viewpoint_angles
from hf_real3d.report import plot_topdown
from hf_real3d.scene import read_scannet
from hf_real3d.spatial import Unanswerable
from hf_real3d.sqa3d import read_split

__all__ = ["draw_question"]


def draw_question(sqa3d_dir: str | os.PathLike, scenes_dir: str | os.PathLike,
                  question_id: int, out: str | os.PathLike, *, split: str = "test",
                  n_viewpoints: int = 4) -> str | None:
    """Write a PNG with one top-down panel per viewpoint (agent, quadrants, answer objects).

    Returns a note when the question cannot be rotated (then only the original is drawn).
    """
    recs = {r.question_id: r for r in read_split(sqa3d_dir, split)}
    if question_id not in recs:
        raise KeyError(f"question_id {question_id} is not in {sqa3d_dir} ({split})")
    rec = recs[question_id]
    scene = read_scannet(scenes_dir, rec.scene_id)
    note = None
    try:
        rows = rotate_record(rec, scene, viewpoint_angles(n_viewpoints))
    except Unanswerable as err:
        note = f"question_id {rec.question_id} cannot be rotated ({err}); drawing the original"
        rows = [{"rotation_deg": 0, "situation": rec.situation, "answers": rec.answers}]
    pose0 = rec.pose(scene.origin)
    asked = set(rec.extra.get("synth", {}).get("objects", []))
    labels = {o.label for o in scene.non_structural()}

    def answer_objects(answer: str) -> set[int]:
        # each viewpoint's own answer: the objects it names, else the ones the question asks
        if answer in labels:
            return {o.object_id for o in scene.by_label(answer)}
        return asked

    panels = [{"pose": pose0.turned(r["rotation_deg"]),
               "highlight": answer_objects(r["answers"][0]),
               "label": "\n".join([f"{r['rotation_deg']} deg: answer {r['answers'][0]!r}",
                                   *textwrap.wrap(r["situation"], 60)])} for r in rows]
    plot_topdown(scene, panels, out, title=f"{rec.question_id}: {rec.question}")
    return note
