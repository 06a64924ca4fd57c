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

The reply must hold one JSON object ``{"situation": ..., "answer": ...}`` (the first one in it
is read; the server is asked for it as structured output, :data:`ROTATION_SCHEMA`). A reply
that does not parse, is cut at ``max_tokens``, leaves a field empty, repeats the original
situation or names no direction is excluded with its reason, never repaired; a question keeps
its rotation group only when every turned viewpoint has one, and the replies of its other
viewpoints are then excluded too, with that reason. A situation that names no direction
(:func:`hf_real3d.real3dqa.mentions.heading_cue`) is asked with a request for a heading cue
when a scene is given, and not asked without one (``no heading cue without a scene``).
The result is a Real-3DQA dataset folder (configs ``real3dqa``, ``rotations`` with ``source``
and ``raw_reply`` columns, ``rotations_excluded``, ``llm_calls`` (every request: seed,
structured output, finish reason, tokens), and ``scenes`` when given), checked at once by
``check-rotations`` (``OUT/checks/``, configs ``rotation_checks`` / ``rotations_checked``), so
the Review tab opens on what it flags and ``export-rotations`` writes the release format.
"""

from __future__ import annotations

import collections
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import datasets

from hf_real3d._io import FormatError, check_out
from hf_real3d.errors import InputError
from hf_real3d.geometry import Pose, quaternion_from_yaw, yaw_from_quaternion
from hf_real3d.hub import ConfigData, load_local, write_dataset_folder
from hf_real3d.llm import (
    PROMPTS,
    Generation,
    LLMClient,
    LLMError,
    PromptTemplate,
    Reply,
    first_json_object,
    offline_step,
    seeded_subset,
    usage_totals,
)
from hf_real3d.real3dqa.build import CITATION
from hf_real3d.real3dqa.check_rotations import check_rotations
from hf_real3d.real3dqa.format import question_row, same_text
from hf_real3d.real3dqa.mentions import HOUR_WORDS, heading_cue
from hf_real3d.real3dqa.rotation import rotate_record, viewpoint_angles
from hf_real3d.scene import Scene
from hf_real3d.schema import (
    fill_rows,
    question_features,
    record_from_row,
    scene_features,
    scene_rows,
)
from hf_real3d.sources import DatasetFolder, SQA3DFolder, resolve, scene_getter
from hf_real3d.spatial import Unanswerable, View
from hf_real3d.sqa3d import SQA3DRecord, read_split
from hf_real3d.tables import markdown_table

__all__ = ["ROTATE_TEMPLATE", "ROTATION_SCHEMA", "scene_graph_text", "parse_rotation",
           "rotate_dataset"]

ROTATE_TEMPLATE = PROMPTS / "rotate.json"
_FIELDS = ("degrees", "situation", "question", "answer")


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


#: the reply's JSON schema, asked as structured output (``response_format``)
ROTATION_SCHEMA = {"title": "rotation", "type": "object",
                   "properties": {"situation": {"type": "string"},
                                  "answer": {"type": "string"}},
                   "required": ["situation", "answer"], "additionalProperties": False}

#: what the prompt adds when a situation names no direction and a scene is given
HEADING_CUE_NOTE = ("The situation names no direction. In the rotated situation, name an "
                    "object that is now in front of the agent or on one side of it (from the "
                    "list above), so that the turned viewpoint can be told from the others.")


def parse_rotation(text: str, original: str, *, cut: bool = False
                   ) -> tuple[dict[str, Any] | None, str | None]:
    """(the rotated ``situation`` and ``answers``, None) or (None, why it is excluded). The
    first JSON object of the reply is read ("Sure! {...}" parses); a reply cut at
    ``max_tokens`` is excluded whatever it holds."""
    if cut:
        return None, "cut at max_tokens"
    try:
        data = first_json_object(text)
    except ValueError:
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
    if not heading_cue(sit):
        return None, "no heading cue in the rotated situation"
    return {"situation": sit.strip(), "answers": [a.strip() for a in ans]}, None


def _turned_rotation(rotation: dict[str, float], degrees: int, item: str) -> dict[str, float]:
    yaw = yaw_from_quaternion(rotation, item=item) - math.radians(degrees)
    x, y, z, w = quaternion_from_yaw(yaw)
    return {"_x": float(x), "_y": float(y), "_z": float(z), "_w": float(w)}


def _inputs(dataset: str | os.PathLike, scenes: str | os.PathLike | None, split: str
            ) -> tuple[list[SQA3DRecord], Callable[[str], Scene | None] | None]:
    """(records, scene getter or None) of an SQA3D folder or a built dataset folder (its
    ``real3dqa`` config, else ``sqa3d``; its ``scenes`` config unless ``scenes`` is given)."""
    src = resolve(dataset, SQA3DFolder, DatasetFolder, what="the questions to rotate")
    path = src.path
    if isinstance(src, SQA3DFolder):
        recs = read_split(path, src.check_split(split))
    else:
        configs = src.configs()
        config = src.first_config(("real3dqa", "sqa3d"))
        if config is None:
            raise FormatError(f"{path}: its card lists configs {configs}, neither real3dqa nor "
                              "sqa3d; build it with hf-real3d build-real3dqa or synth")
        rows = list(load_local(path, config))
        if not any(r.get("semantics") for r in rows):
            rows = _with_semantics(path, configs, rows)
        recs = [record_from_row(r) for r in rows]
    scene = scene_getter(src, scenes=scenes)
    get = None
    if scene is not None:
        def get(sid: str) -> Scene | None:  # a question whose room is absent is left to the LM
            try:
                return scene(sid)
            except KeyError:
                return None
    if not recs:
        raise FormatError(f"{path}: no questions to rotate")
    return recs, get


def _with_semantics(path: Path, configs: list[str], rows: list[dict[str, Any]]
                    ) -> list[dict[str, Any]]:
    """``rows`` with the ``semantics`` another config of the folder records for them (a
    folder built before the real3dqa config kept it: the rotations config's 0-degree rows, or
    the sqa3d config), so that geometry rotates what it rotated when the folder was built."""
    known: dict[int, str] = {}
    for config in ("rotations", "sqa3d"):
        if config not in configs:
            continue
        ds = load_local(path, config)
        if "semantics" not in ds.column_names:
            continue
        degs = ds["rotation_deg"] if "rotation_deg" in ds.column_names else [0] * len(ds)
        for q, d, sem in zip(ds["question_id"], degs, ds["semantics"]):
            if sem and not d:
                known.setdefault(int(q), sem)
    return [dict(r, semantics=known.get(int(r["question_id"]), r.get("semantics") or ""))
            for r in rows] if known else rows


def rotate_dataset(dataset: str | os.PathLike, out: str | os.PathLike, client: LLMClient, *,
                   scenes: str | os.PathLike | None = None,
                   template: str | os.PathLike | None = None, split: str = "test",
                   n_viewpoints: int = 4, progress: bool = True, limit: int | None = None,
                   dry_run: bool = False, batch_out: str | os.PathLike | None = None,
                   batch_in: str | os.PathLike | None = None) -> dict[str, Any]:
    """Rotate every question of ``dataset`` (see the module docstring) into the dataset folder
    ``out`` and check it. Returns the summary. ``limit``: a subset of the questions drawn with
    the decoding seed; ``dry_run``: what would be asked, nothing sent or written;
    ``batch_out``: the requests as a Batch API file, nothing else; ``batch_in``: the replies
    from a batch run's output file."""
    if n_viewpoints < 2:
        raise InputError(f"`viewpoints` {n_viewpoints}: a rotation set needs viewpoint 0 and "
                         "at least one turn; give 2 or more (4: 0, 90, 180, 270)")
    angles = viewpoint_angles(n_viewpoints)
    if Path(out).exists() and not Path(out).is_dir():
        raise FileExistsError(f"`out` {out}: exists and is not a folder; give another `out`")
    cache_folder = client.cache.folder if client.cache is not None else None
    check_out(out, dataset=dataset, scenes=scenes, prompt=template, batch_in=batch_in,
              batch_out=batch_out, llm_cache=cache_folder)
    if batch_out is not None:
        check_out(batch_out, name="batch_out", dataset=dataset, scenes=scenes, prompt=template)
    tpl = PromptTemplate.load(template or ROTATE_TEMPLATE, required=_FIELDS,
                              optional=("scene_graph",))
    recs, get = _inputs(dataset, scenes, split)
    total = len(recs)
    recs = [recs[i] for i in seeded_subset(total, limit, client.decoding.seed)]
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
    excluded: list[dict[str, Any]] = []
    no_cue: list[int] = []
    for rec in recs:
        scene = scene_of(rec.scene_id)
        if scene is not None:
            try:
                rows = rotate_record(rec, scene, angles)
                groups[rec.question_id] = [dict(r, source="geometry") for r in rows]
                continue
            except Unanswerable:
                pass
        cue = heading_cue(rec.situation)
        if not cue:
            no_cue.append(rec.question_id)
            if scene is None:
                excluded += [{"question_id": rec.question_id, "rotation_deg": k,
                              "reason": "no heading cue without a scene", "output": ""}
                             for k in angles[1:]]
                continue
        for k in angles[1:]:
            graph = "(no scene given)"
            if scene is not None:
                graph = scene_graph_text(scene, rec.pose(scene.origin).turned(k))
            asks.append((rec, k))
            prompts.append(tpl.messages(degrees=k, situation=rec.situation,
                                        question=rec.question, answer=rec.answers[0],
                                        scene_graph=graph,
                                        note="" if cue else HEADING_CUE_NOTE))
    names = [f"question_id {rec.question_id} at {k} degrees" for rec, k in asks]

    def check(i: int, reply: Reply) -> str | None:
        return parse_rotation(reply.text, asks[i][0].situation, cut=reply.cut)[1]

    trial = offline_step(client, prompts, names, schema=ROTATION_SCHEMA, check=check,
                         dry_run=dry_run, batch_out=batch_out)
    if trial is not None:
        return {**trial, "questions": len(recs), "geometry_groups": len(groups),
                "no_heading_cue": len(no_cue)}
    results: list[Generation] = []
    if prompts:
        if batch_in is None:
            client.check()
        results = client.generate(prompts, desc="rewriting rotations", items=names,
                                  schema=ROTATION_SCHEMA, check=check, batch_in=batch_in)
        if all(g.text is None for g in results):
            first = next(g for g in results)
            raise LLMError(f"no reply to any of the {len(prompts)} prompts (the first, "
                           f"{names[0]}: {first.error}); nothing written to {out}")
    lm: dict[int, dict[int, dict[str, Any]]] = collections.defaultdict(dict)
    replies: dict[tuple[int, int], str] = {}
    dropped: dict[int, list[int]] = collections.defaultdict(list)
    calls = []
    for (rec, k), g in zip(asks, results):
        for n, a in enumerate(g.attempts):
            calls.append({"question_id": rec.question_id, "rotation_deg": k, "attempt": n,
                          **a.to_dict()})
        if g.text is None:
            excluded.append({"question_id": rec.question_id, "rotation_deg": k,
                             "reason": f"no reply: {g.error}", "output": ""})
            dropped[rec.question_id].append(k)
            continue
        parsed, why = parse_rotation(g.text, rec.situation, cut=g.reply.cut)
        if parsed is None:
            excluded.append({"question_id": rec.question_id, "rotation_deg": k,
                             "reason": why, "output": g.text[:500]})
            dropped[rec.question_id].append(k)
            continue
        lm[rec.question_id][k] = parsed
        replies[(rec.question_id, k)] = g.text
    by_id = {r.question_id: r for r in recs}
    for q, got in lm.items():
        if len(got) < len(angles) - 1:  # a sibling viewpoint was excluded: say so
            for k in sorted(got):
                excluded.append({"question_id": q, "rotation_deg": k,
                                 "reason": "a sibling viewpoint was excluded (rotation_deg "
                                           + ", ".join(map(str, sorted(dropped[q]))) + ")",
                                 "output": replies[(q, k)][:500]})
            continue
        rec = by_id[q]
        rows = [{"question_id": q, "rotation_deg": 0, "situation": rec.situation,
                 "answers": list(rec.answers), "position": dict(rec.position),
                 "rotation": dict(rec.rotation), "source": "original"}]
        for k in angles[1:]:
            rows.append({"question_id": q, "rotation_deg": k, **got[k],
                         "position": dict(rec.position),
                         "rotation": _turned_rotation(rec.rotation, k, f"question_id {q}"),
                         "source": "lm", "raw_reply": replies[(q, k)]})
        groups[q] = rows
    if not groups:
        reasons = collections.Counter(e["reason"].split(":")[0].split(" (")[0]
                                      for e in excluded)
        raise LLMError(f"{dataset}: no rotation group ({len(recs)} questions; excluded turned "
                       "items: " + (", ".join(f"{r}: {n}" for r, n in reasons.most_common())
                                    or "none") + f"); nothing written to {out}")
    rot_f = question_features("kind", "semantics", "source", "raw_reply")
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
            row["raw_reply"] = r.get("raw_reply", "")
            rot_rows.append(row)
    ex_f = datasets.Features({"question_id": datasets.Value("int64"),
                              "rotation_deg": datasets.Value("int32"),
                              "reason": datasets.Value("string"),
                              "output": datasets.Value("string")})
    calls_f = datasets.Features({
        "question_id": datasets.Value("int64"), "rotation_deg": datasets.Value("int32"),
        "attempt": datasets.Value("int32"), "seed": datasets.Value("int64"),
        "structured": datasets.Value("string"), "cached": datasets.Value("bool"),
        "finish_reason": datasets.Value("string"), "prompt_tokens": datasets.Value("int64"),
        "completion_tokens": datasets.Value("int64"), "error": datasets.Value("string"),
        "reason": datasets.Value("string")})
    reasons = collections.Counter(e["reason"].split(":")[0].split(" (")[0] for e in excluded)
    sources = collections.Counter(r["source"] for r in rot_rows if r["rotation_deg"])
    usage = usage_totals(results)
    structured = client.structured_record(bool(prompts))
    base_f = question_features("kind", "semantics")
    configs = [ConfigData("real3dqa", {split: fill_rows([question_row(r) for r in recs],
                                                          base_f)}, base_f,
                          "the questions asked to rotate, at 0 degrees", default=True),
               ConfigData("rotations", {split: fill_rows(rot_rows, rot_f)}, rot_f,
                          f"questions with every viewpoint of {angles}, grouped on "
                          "question_id; `source` says how each was made, `raw_reply` holds "
                          "the model's reply"),
               ConfigData("rotations_excluded", {split: excluded}, ex_f,
                          "turned viewpoints left out, with the reason (a model's reply that "
                          "could not be used, a sibling viewpoint excluded, no heading cue)"),
               ConfigData("llm_calls", {split: calls}, calls_f,
                          "every request for a turned viewpoint (or its cached reply): seed, "
                          "structured output, finish reason, tokens, error, why unusable")]
    if get is not None:
        present = [s for s in (scene_of(sid) for sid in sorted({r.scene_id for r in recs}))
                   if s is not None]
        configs.append(ConfigData("scenes", {split: scene_rows(present)}, scene_features(),
                                  "objects and Nx6 point clouds", rows_per_shard=20))
    described = client.describe()
    finish = ", ".join(f"{k} {v}" for k, v in sorted(usage["finish_reasons"].items()))
    section = ("## How the rotations were made\n\n"
               f"`hf-real3d rotate` on {len(recs)} questions"
               + (f" (of {total}, drawn with --limit {limit}, seed {client.decoding.seed})"
                  if len(recs) < total else "")
               + f" and the turns {angles[1:]}: {len(groups)} rotation groups, "
               + ", ".join(f"{n} turned items from {s}" for s, n in sources.items())
               + f". The language model: {described['model']}"
               + (f" at {described['url']}" if described.get("url") else "")
               + f" (temperature {described['temperature']}, seed {described['seed']}, "
               f"max_tokens {described['max_tokens']}, re-asks {described['reask']}), prompt "
               f"`{tpl.path.name}`; structured output: {structured}; "
               f"{len(prompts)} prompts, {usage['attempts']} replies or failures "
               f"({usage['prompt_tokens']} prompt and {usage['completion_tokens']} completion "
               "tokens" + (f"; finish reasons: {finish}" if finish else "") + "). "
               f"Questions whose situation names no direction: {len(no_cue)}"
               + (" (without a scene they are not asked: `no heading cue without a scene`; "
                  "with one, the prompt asks for a heading cue)" if no_cue else "")
               + f". Excluded turned items: {len(excluded)}"
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
            "no_heading_cue": len(no_cue), "structured": structured, "usage": usage,
            "requests": client.stats.requests, "failed": sum(g.text is None for g in results),
            "check": None if check is None else
            {k: check.get(k) for k in ("items", "verdicts", "group_verdicts")}}
