"""Synthetic 3DSRBench: the 12 question types asked of renders from a common and an
uncommon camera of the same procedural scene, answers computed from 3D ground truth.

* common camera: no roll, small pitch (-25..+5 degrees), eye height 1.4-1.8 m;
* uncommon camera (one of): high up looking down steeply (2.3-2.7 m, pitch <= -35),
  near the floor (0.25-0.45 m) looking up, or strongly rolled (25-45 degrees).

Each question is asked of both renders (``pair_id``). Near-ties are avoided by margins
(:class:`SRBenchConfig`), yes/no and left/right answers are drawn 50/50, option order is
shuffled. Answers that depend on the camera (closer to the camera) are computed per camera.
"""

from __future__ import annotations

import itertools
import json
import math
import multiprocessing as mp
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from hf_real3d.choices import LETTERS
from hf_real3d.scene import Scene
from hf_real3d.srbench.format import CATEGORIES, qid_base
from hf_real3d.synth.catalog import CATALOG
from hf_real3d.synth.config import SRBenchConfig
from hf_real3d.synth.render import Camera, Renderer, png_bytes, scene_mesh_arrays
from hf_real3d.synth.rooms import generate_room

__all__ = ["SRBenchConfig", "generate_srbench", "answer_text", "mirror_world", "World",
           "srbench_scene"]


@dataclass
class World:
    """Just the geometry a 3DSRBench answer needs: object centres, sizes, fronts."""

    center: dict[int, np.ndarray]
    size: dict[int, np.ndarray]
    front: dict[int, np.ndarray]  # unit xy vector
    label: dict[int, str]
    on: dict[int, int] = field(default_factory=dict)

    @classmethod
    def from_scene(cls, scene: Scene) -> World:
        objs = scene.non_structural()
        return cls({o.object_id: o.center.copy() for o in objs},
                   {o.object_id: o.size.copy() for o in objs},
                   {o.object_id: o.front[:2].copy() for o in objs},
                   {o.object_id: o.label for o in objs},
                   {o.object_id: int(o.attributes["on"]) for o in objs if "on" in o.attributes})

    def top(self, i: int) -> float:
        return float(self.center[i][2] + self.size[i][2] / 2)

    def bottom(self, i: int) -> float:
        return float(self.center[i][2] - self.size[i][2] / 2)


def mirror_world(w: World, camera: Camera) -> World:
    """The world of the horizontally mirrored image, for answering its questions: reflected
    across the *vertical* plane through the camera that holds its viewing direction (normal:
    horizontal and across that direction). Any mirror reverses handedness whatever the
    camera's roll or pitch, and gravity stays down: left/right relations flip; heights,
    above/below and distances (the camera lies on the plane) do not. Reflecting across the
    camera's own tilted plane, as this did before, also tilted "up" under a rolled camera,
    so some left/right answers survived the mirror."""
    axes = camera.world_from_cam()
    n = np.cross(axes[:, 2], [0.0, 0.0, 1.0])  # horizontal, across the viewing direction
    if np.linalg.norm(n) < 1e-6:  # looking straight up or down: the image x axis, levelled
        n = np.array([axes[0, 0], axes[1, 0], 0.0])
    n = n / np.linalg.norm(n)
    c0 = np.asarray(camera.position)

    def refl(p):
        return p - 2 * np.dot(p - c0, n) * n

    def refl_dir(d2):
        d = np.array([d2[0], d2[1], 0.0])
        r = d - 2 * np.dot(d, n) * n
        return r[:2] / (np.linalg.norm(r[:2]) + 1e-12)

    return World({i: refl(c) for i, c in w.center.items()}, dict(w.size),
                 {i: refl_dir(f) for i, f in w.front.items()}, dict(w.label), dict(w.on))


def _angle(front: np.ndarray, vec: np.ndarray) -> float:
    """CCW angle in degrees from ``front`` to ``vec`` (xy), (-180, 180]."""
    a = math.degrees(math.atan2(vec[1], vec[0]) - math.atan2(front[1], front[0]))
    return (a + 180) % 360 - 180


def _gap(w: World, i: int, j: int) -> float:
    """Horizontal gap between the footprints' bounding circles (m)."""
    d = np.linalg.norm(w.center[i][:2] - w.center[j][:2])
    return float(d - (np.linalg.norm(w.size[i][:2]) + np.linalg.norm(w.size[j][:2])) / 4)


def answer_text(cat: str, objs: tuple[int, ...], w: World, cam: Camera,
                cfg: SRBenchConfig) -> str | None:
    """The correct option text of category ``cat`` about ``objs`` (None: a near-tie)."""
    m = cfg.angle_margin
    if cat == "height_higher":
        x, y = objs
        d = w.top(x) - w.top(y)
        return None if abs(d) < cfg.height_margin else w.label[x if d > 0 else y]
    if cat == "location_above":
        x, y = objs
        if w.bottom(x) >= w.top(y) - 0.03:
            return "yes"
        if w.top(x) <= w.bottom(y) + 0.03:
            return "no"
        return None
    if cat == "location_closer_to_camera":
        x, y = objs
        p = np.asarray(cam.position)
        dx, dy = np.linalg.norm(w.center[x] - p), np.linalg.norm(w.center[y] - p)
        return None if abs(dx - dy) < cfg.distance_margin else w.label[x if dx < dy else y]
    if cat == "location_next_to":
        g = _gap(w, *objs)
        return "yes" if g < 0.5 else "no" if g > 1.5 else None
    if cat == "multi_object_closer_to":
        x, y, z = objs
        dx = np.linalg.norm(w.center[x] - w.center[z])
        dy = np.linalg.norm(w.center[y] - w.center[z])
        return None if abs(dx - dy) < cfg.distance_margin else w.label[x if dx < dy else y]
    if cat in ("orientation_in_front_of", "orientation_on_the_left", "orientation_viewpoint",
               "multi_object_facing"):
        x, y = objs  # about x, from y's perspective
        a = _angle(w.front[y], w.center[x][:2] - w.center[y][:2])
        if cat == "orientation_in_front_of":
            return "yes" if abs(a) < 45 - m / 2 else "no" if abs(a) > 135 + m / 2 else None
        if cat == "orientation_on_the_left":
            return "yes" if abs(a - 90) < 45 - m / 2 else "no" if abs(a + 90) < 45 - m / 2 \
                else None
        if cat == "multi_object_facing":
            return "yes" if abs(a) < 25 else "no" if abs(a) > 70 else None
        edges = np.array([45, 135, -45, -135])
        if np.min(np.abs(((a - edges) + 180) % 360 - 180)) < m:
            return None
        return ("in front" if abs(a) < 45 else "behind" if abs(a) > 135
                else "on the left" if a > 0 else "on the right")
    if cat == "multi_object_viewpoint_towards_object":
        y, x, z = objs  # stand at y, face x: where is z?
        face = w.center[x][:2] - w.center[y][:2]
        a = _angle(face, w.center[z][:2] - w.center[y][:2])
        if abs(a) < m or abs(a) > 180 - m:
            return None
        return "left" if a > 0 else "right"
    if cat in ("multi_object_parallel", "multi_object_same_direction"):
        x, y = objs
        a = abs(_angle(w.front[x], w.front[y]))
        if cat == "multi_object_parallel":
            par = min(a, 180 - a)
            return "yes" if par < 15 else "no" if par > 45 else None
        return "yes" if a < 20 else "no" if a > 60 else None
    raise ValueError(f"unknown category {cat!r}")


_TEMPLATES: dict[str, tuple[str, int, Callable[[list[str]], list[str]] | None]] = {
    # category: (question template, number of objects, options builder or None for yes/no)
    "height_higher": ("Which object is higher in 3D world space, the {0} or the {1}?", 2,
                      lambda lab: lab[:2]),
    "location_above": ("Is the {0} above the {1}?", 2, None),
    "location_closer_to_camera": ("Which object is closer to the camera taking this photo, "
                                  "the {0} or the {1}?", 2, lambda lab: lab[:2]),
    "location_next_to": ("Is the {0} next to the {1}?", 2, None),
    "orientation_in_front_of": ("Is the {0} in front of the {1}?", 2, None),
    "orientation_on_the_left": ("Is the {0} on the left side of the {1}?", 2, None),
    "orientation_viewpoint": ("From the {1}'s perspective, where is the {0}?", 2,
                              lambda lab: ["on the left", "on the right", "in front", "behind"]),
    "multi_object_closer_to": ("Which object is closer to the {2}, the {0} or the {1}?", 3,
                               lambda lab: lab[:2]),
    "multi_object_facing": ("Is the {1} facing towards the {0}?", 2, None),
    "multi_object_viewpoint_towards_object": (
        "If I stand at the {0} and face the {1}, is the {2} on my left or on my right?", 3,
        lambda lab: ["left", "right"]),
    "multi_object_parallel": ("Are the {0} and the {1} parallel to each other?", 2, None),
    "multi_object_same_direction": ("Are the {0} and the {1} facing the same direction?", 2,
                                    None),
}
_ORIENTED = {"orientation_in_front_of": (1,), "orientation_on_the_left": (1,),
             "orientation_viewpoint": (1,), "multi_object_facing": (1,),
             "multi_object_parallel": (0, 1), "multi_object_same_direction": (0, 1)}


def _camera_pair(room: tuple[float, float, float], rng: np.random.Generator,
                 cfg: SRBenchConfig) -> tuple[Camera, Camera]:
    """A common camera near a wall looking across the room, and an uncommon one of the
    same view (high and steep, near the floor, or rolled)."""
    wd, dp, ht = room
    side = int(rng.integers(4))
    t = rng.uniform(0.3, 0.7)
    xy = [np.array([t * wd, 0.35]), np.array([t * wd, dp - 0.35]), np.array([0.35, t * dp]),
          np.array([wd - 0.35, t * dp])][side]
    target = np.array([wd / 2, dp / 2]) + rng.uniform(-0.5, 0.5, 2)
    yaw = math.atan2(target[1] - xy[1], target[0] - xy[0])
    h = rng.uniform(1.4, 1.8)
    pitch = math.radians(rng.uniform(-25, 5))
    common = Camera((xy[0], xy[1], h), yaw, pitch, 0.0, cfg.width, cfg.height)
    style = int(rng.integers(3))
    if style == 0:  # high up, looking down steeply
        uncommon = Camera((xy[0], xy[1], min(rng.uniform(2.3, 2.7), ht - 0.1)), yaw,
                          math.radians(rng.uniform(-60, -35)), 0.0, cfg.width, cfg.height)
    elif style == 1:  # near the floor, looking up
        uncommon = Camera((xy[0], xy[1], rng.uniform(0.25, 0.45)), yaw,
                          math.radians(rng.uniform(5, 20)), 0.0, cfg.width, cfg.height)
    else:  # strongly rolled
        roll = math.radians(rng.uniform(25, 45)) * (1 if rng.random() < 0.5 else -1)
        uncommon = Camera((xy[0], xy[1], h), yaw, pitch, roll, cfg.width, cfg.height)
    return common, uncommon


def _visible(w: World, cams: tuple[Camera, ...], cfg: SRBenchConfig) -> list[int]:
    """Objects whose centre lies well inside every camera's image, in front of it. (Their
    labels are unique: :func:`srbench_scene` rooms hold one object per label.)"""
    ids = sorted(w.center)
    pts = np.stack([w.center[i] for i in ids])
    ok = np.ones(len(ids), dtype=bool)
    m = 0.06
    for cam in cams:
        p = cam.project(pts)
        ok &= (p[:, 2] > 0.3) & (p[:, 0] > m * cfg.width) & (p[:, 0] < (1 - m) * cfg.width) \
            & (p[:, 1] > m * cfg.height) & (p[:, 1] < (1 - m) * cfg.height)
    return [i for i, k in zip(ids, ok) if k]


def _pick_question(cat: str, visible: list[int], w: World, rng: np.random.Generator,
                   cfg: SRBenchConfig, want: str | None) -> tuple[tuple[int, ...], str] | None:
    """A random object tuple among the visible objects whose answer is ``want`` (any answer
    when None), found by enumerating the candidates."""
    ids = list(visible)
    n = _TEMPLATES[cat][1]
    need = _ORIENTED.get(cat, ())
    cands = []
    for objs in itertools.permutations(ids, n):
        if any(not CATALOG[w.label[objs[k]]].oriented for k in need):
            continue
        if cat == "location_closer_to_camera":
            cands.append((objs, "?"))
            continue
        ans = answer_text(cat, objs, w, Camera((0, 0, 1.5), 0.0), cfg)
        if ans is not None and (want is None or ans == want):
            cands.append((objs, ans))
    if not cands:
        return None
    return cands[int(rng.integers(len(cands)))]


def srbench_scene(rng: np.random.Generator, s: int) -> Scene:
    """Scene ``s`` of a synthetic 3DSRBench drawn from ``rng`` (seeded with a row's
    ``scene_seed``): a room where every label names one object, as the questions need."""
    return generate_room(f"srb{s:04d}_00", rng, label_cap=1)


def _scene_rows(cfg: SRBenchConfig, s: int, renderer: Renderer | None = None
                ) -> tuple[list[dict], list[dict]]:
    """Questions and renders of scene ``s`` (runs in a worker process: see below)."""
    renderer = renderer or Renderer(cfg.width, cfg.height)
    rng = np.random.default_rng([cfg.seed, 77, s])
    scene = srbench_scene(rng, s)
    w = World.from_scene(scene)
    room = tuple(scene.extras["room_size"])
    renderer.set_mesh(scene_mesh_arrays(scene))
    common: list[dict] = []
    uncommon: list[dict] = []
    balance: Counter = Counter()
    per_view = max(1, cfg.questions_per_scene // cfg.views_per_scene)
    # categories in a per-scene random order, cycled: every category is tried in turn, so a
    # few scenes cover all 12 (drawing them independently left 4 of 12 out of 12 scenes)
    order = [cfg.categories[k] for k in rng.permutation(len(cfg.categories))]
    turn = 0
    for v in range(cfg.views_per_scene):
        cams = _camera_pair(room, rng, cfg)
        visible = _visible(w, cams, cfg)
        if len(visible) < 3:
            continue
        images = None
        seen: set[str] = set()
        for _ in range(3 * per_view):
            if len(seen) >= per_view:
                break
            cat = order[turn % len(order)]
            turn += 1
            tmpl, n, opt_fn = _TEMPLATES[cat]
            if opt_fn is None or cat == "multi_object_viewpoint_towards_object":
                pair = ("yes", "no") if opt_fn is None else ("left", "right")
                # ask for the answer this category has had less often in this scene; ties
                # go to "yes"/"left" in even scenes and "no"/"right" in odd ones, so that
                # the answers balance across scenes too (_balance drops the surplus)
                want = min(pair, key=lambda a: (balance[(cat, a)], (pair.index(a) + s) % 2))
            else:
                want = None
            got = _pick_question(cat, visible, w, rng, cfg, want)
            if got is None:
                continue
            objs, _ = got
            answers = [answer_text(cat, objs, w, cam, cfg) for cam in cams]
            # the same question asked of each mirrored render (FlipEval's answer)
            mirrored = [answer_text(cat, objs, mirror_world(w, cam), cam, cfg) for cam in cams]
            labels = [w.label[i] for i in objs]
            question = tmpl.format(*labels)
            if any(a is None for a in answers + mirrored) or question in seen:
                continue
            seen.add(question)
            balance[(cat, answers[0])] += 1
            if images is None:
                images = [png_bytes(renderer.render(cam)) for cam in cams]
            options = opt_fn(labels) if opt_fn else ["yes", "no"]
            options = [options[k] for k in rng.permutation(len(options))]
            # the readable id pairs the two renders; the qid has the real benchmark's form
            readable = f"syn{cfg.seed}-{s:04d}-{v}{len(seen):02d}"
            qid = qid_base(readable)
            for cam, img, ans, mans, out, src in zip(
                    cams, images, answers, mirrored, (common, uncommon),
                    ("synthetic_common", "synthetic_uncommon")):
                meas = cam.measured()
                out.append({
                    "qid": qid, "question": question,
                    "options": list(options), "answer": LETTERS[options.index(ans)],
                    "flip_answer": LETTERS[options.index(mans)],
                    "category": cat, "group": CATEGORIES[cat], "image_bytes": img,
                    "image_source": src, "image_url": "", "base_qid": qid,
                    "circular_group": qid, "flip_group": qid, "shift": 0, "flipped": False,
                    "pair_id": readable, "objects": [int(o) for o in objs],
                    "scene_seed": [cfg.seed, 77, s],
                    "camera": json.dumps({**asdict(cam), **{f"measured_{k}": round(x, 3)
                                                           for k, x in meas.items()}}),
                    **{k: (options[j] if j < len(options) else "") for j, k in enumerate("ABCD")},
                })
    return common, uncommon


def _balance(common: list[dict], uncommon: list[dict]) -> tuple[list[dict], list[dict]]:
    """Drop surplus questions so that yes/no and left/right answers are 50/50 per category
    (on the common split; the uncommon split keeps the same questions)."""
    by: dict[tuple[str, str], list[str]] = {}
    for r in common:
        text = r["options"]["ABCD".index(r["answer"])]
        if text in ("yes", "no", "left", "right"):
            by.setdefault((r["category"], text), []).append(r["qid"])
    drop: set[str] = set()
    for (cat, text), qids in by.items():
        other = {"yes": "no", "no": "yes", "left": "right", "right": "left"}[text]
        keep = len(by.get((cat, other), []))
        drop.update(qids[keep:])
    return ([r for r in common if r["qid"] not in drop],
            [r for r in uncommon if r["qid"] not in drop])


def _worker(args: tuple[SRBenchConfig, int]) -> tuple[list[dict], list[dict]]:
    return _scene_rows(*args)


def generate_srbench(cfg: SRBenchConfig | None = None, *, workers: int = 2,
                     progress: bool = True, timeout_s: float = 300.0) -> dict[str, Any]:
    """Rows of ``synthetic_common`` and ``synthetic_uncommon`` (unexpanded) and stats.

    Each scene renders in its own short-lived process: open3d's offscreen renderer slows
    down by orders of magnitude once geometry has been removed or many meshes were added
    in one process, and hangs when renderers are re-created.
    """
    cfg = cfg or SRBenchConfig()
    common, uncommon = [], []
    ctx = mp.get_context("spawn")
    with ProcessPoolExecutor(max_workers=max(1, workers), mp_context=ctx,
                             max_tasks_per_child=1) as pool:
        futures = [pool.submit(_worker, (cfg, s)) for s in range(cfg.scenes)]
        for f in tqdm(futures, desc="3DSRBench scenes", disable=not progress):
            c, u = f.result(timeout=timeout_s)
            common += c
            uncommon += u
    common, uncommon = _balance(common, uncommon)
    for rows in (common, uncommon):
        for i, r in enumerate(rows):
            r["index"] = i
    ans_counts = Counter(r["options"]["ABCD".index(r["answer"])] for r in common
                         if r["options"][0] in ("yes", "no"))
    stats = {"questions_per_kind": len(common), "categories": dict(Counter(
        r["category"] for r in common)), "yes_no_balance": dict(ans_counts),
        "answer_letters": dict(Counter(r["answer"] for r in common)),
        "margins": {"height_m": cfg.height_margin, "distance_m": cfg.distance_margin,
                    "angle_deg": cfg.angle_margin}}
    return {"synthetic_common": common, "synthetic_uncommon": uncommon, "stats": stats}
