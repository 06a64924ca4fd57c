"""A question drawn top-down from every viewpoint of its rotation group (``hf-real3d draw``,
the demo's ``topdown.png`` and the explorer's panels)."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Polygon

from hf_real3d.real3dqa.rotation import rotate_record, viewpoint_angles
from hf_real3d.scene import read_scannet
from hf_real3d.spatial import Unanswerable
from hf_real3d.sqa3d import read_split
from hf_real3d.tables import save_png

__all__ = ["draw_question", "topdown_figure", "topdown_panel", "plot_topdown", "turn_words",
           "PANEL_DPI", "PANEL_FONT"]

PANEL_DPI = 100  # one panel of topdown_panel: 4.8 in -> 480 px wide
PANEL_FONT = 9  # points: 12.5 px at PANEL_DPI


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


def plot_topdown(scene, panels: Sequence[dict[str, Any]], path: str | os.PathLike,
                 title: str = "") -> None:
    """Write :func:`topdown_figure` of ``scene`` to ``path`` (PNG)."""
    save_png(topdown_figure(scene, panels, title), path)


def topdown_figure(scene, panels: Sequence[dict[str, Any]], title: str = "", *,
                   panel_width: float = 4.2) -> Figure:
    """Top-down views of ``scene``, one panel per viewpoint (a matplotlib Figure).

    Each panel: ``pose`` (:class:`hf_real3d.geometry.Pose`), ``label`` (title line) and
    ``highlight`` (object ids drawn in red, e.g. the answer object). The agent is an arrow
    along its facing direction; dashed lines split its four quadrants (front/right/back/
    left, 45 degrees off its heading).
    """
    n = len(panels)
    fig = Figure(figsize=(panel_width * n, panel_width * 1.05))
    axes = fig.subplots(1, n, squeeze=False)
    for ax, panel in zip(axes[0], panels):
        pose = panel["pose"]
        p, f = pose.position[:2], pose.facing[:2]
        _draw_room(ax, scene, pose, panel.get("highlight", ()), fontsize=6, border_width=0.6)
        ax.annotate("", xy=p + f * 0.7, xytext=p,
                    arrowprops={"arrowstyle": "-|>", "color": "#2ca02c", "lw": 2})
        ax.plot(*p, "o", color="#2ca02c")
        ax.set_title(panel.get("label", ""), fontsize=8)
        ax.tick_params(labelsize=6)
    legend = [Patch(color="#d62728", alpha=0.45, label="answer object(s) of this view"),
              Patch(color="#1f77b4", alpha=0.45, label="other objects"),
              Patch(color="#bbbbbb", alpha=0.45, label="walls, doors, windows"),
              Line2D([], [], color="#2ca02c", marker="o", lw=2, label="agent (facing)"),
              Line2D([], [], color="k", ls="--", lw=0.6, label="quadrant borders")]
    fig.legend(handles=legend, loc="lower center", ncol=len(legend), fontsize=7,
               frameon=False)
    if title:
        fig.suptitle(title, fontsize=9)
    return fig


def _draw_room(ax, scene, pose, highlight: Sequence[int], *, fontsize: float,
               border_width: float) -> float:
    """Draw the room's objects (``highlight`` in red) and the agent's quadrant borders on
    ``ax``, framed to the room; returns the room's diagonal (the borders' reach)."""
    lo, hi = scene.mesh_bounds()
    hl = set(highlight)
    for o in scene.objects:
        if o.label == "floor":
            continue
        color = "#d62728" if o.object_id in hl else ("#bbbbbb" if o.is_structural
                                                      else "#1f77b4")
        ax.add_patch(Polygon(o.footprint_corners(), closed=True, alpha=0.45, color=color))
        if not o.is_structural:
            ax.text(o.center[0], o.center[1], o.label, fontsize=fontsize, ha="center",
                    va="center")
    p, f = pose.position[:2], pose.facing[:2]
    reach = float(np.linalg.norm(hi[:2] - lo[:2]))
    for deg in (45, 135, 225, 315):
        a = np.radians(deg)
        d = np.array([f[0] * np.cos(a) - f[1] * np.sin(a), f[0] * np.sin(a) + f[1] * np.cos(a)])
        ax.plot([p[0], p[0] + d[0] * reach], [p[1], p[1] + d[1] * reach], "k--",
                lw=border_width, alpha=0.5)
    ax.set_xlim(lo[0] - 0.2, hi[0] + 0.2)
    ax.set_ylim(lo[1] - 0.2, hi[1] + 0.2)
    ax.set_aspect("equal")
    return reach


def turn_words(deg: float) -> str:
    """A turn of ``deg`` degrees clockwise seen from above, in words: ``"turned 90°
    clockwise, to the right"``."""
    k = int(round(float(deg))) % 360
    if k == 0:
        return "not turned"
    if k == 180:
        return "turned around (180°)"
    if k < 180:
        return f"turned {k}° clockwise, to the right"
    return f"turned {k}° clockwise ({360 - k}° counter-clockwise), to the left"


def topdown_panel(scene, pose, *, highlight: Sequence[int] = (), title: str = "",
                  current: bool = False, size: float = 4.8) -> Figure:
    """One viewpoint drawn top-down at a readable size (``size`` inches; labels
    :data:`PANEL_FONT` points): the room's objects (``highlight`` in red), the agent's
    heading as an arrow scaled to the room, its quadrant borders, and ``title`` above. A
    ``current`` panel (the one under review) gets a thick orange frame."""
    fig = Figure(figsize=(size, size * 1.08))
    ax = fig.subplots()
    p, f = pose.position[:2], pose.facing[:2]
    reach = _draw_room(ax, scene, pose, highlight, fontsize=PANEL_FONT, border_width=0.7)
    length = max(0.6, 0.16 * reach)
    ax.arrow(p[0], p[1], f[0] * length, f[1] * length, width=length * 0.07,
             head_width=length * 0.32, head_length=length * 0.3, length_includes_head=True,
             color="#2ca02c", zorder=5)
    ax.plot(*p, "o", color="#2ca02c", ms=8, zorder=6)
    ax.tick_params(labelsize=PANEL_FONT - 2)
    ax.set_title(title, fontsize=PANEL_FONT + 1, fontweight="bold" if current else "normal")
    if current:
        fig.patch.set_edgecolor("#ff7f0e")
        fig.patch.set_linewidth(10)
    return fig
