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
(:func:`hf_real3d.english.mentions.heading_cue`) is asked with a request for a heading cue
when a scene is given, and not asked without one (``no heading cue without a scene``).
The result is a Real-3DQA dataset folder (configs ``real3dqa``, ``rotations`` with ``source``
and ``raw_reply`` columns, ``rotations_excluded``, ``llm_calls`` (every request: seed,
structured output, finish reason, tokens), and ``scenes`` when given), its rows checked in
memory before the write, through the checker's one door (:func:`~hf_real3d.real3dqa.checker.
check.check_set` with the options given and the SQA3D records read as evidence, kept as the
``sqa3d`` config: ``OUT/checks/``, configs ``rotation_checks`` / ``rotations_checked``), so a
later ``check-rotations`` of ``OUT`` gives the same verdicts and the Review tab opens on what
it flags.
"""

from __future__ import annotations

import collections
import functools
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import datasets

from hf_real3d._io import FormatError, atomic_dir, check_out
from hf_real3d.english.mentions import HOUR_WORDS, heading_cue
from hf_real3d.errors import InputError
from hf_real3d.geometry import Pose, quaternion_from_yaw, yaw_from_quaternion
from hf_real3d.hub import ConfigData, write_dataset_files
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
from hf_real3d.real3dqa.checker.check import CheckOptions, check_set
from hf_real3d.real3dqa.checker.evidence import TEXTS_CONFIG, evidence_of
from hf_real3d.real3dqa.checker.outputs import check_configs, write_check_folder
from hf_real3d.real3dqa.format import CITATION, question_row, same_text
from hf_real3d.real3dqa.rotation import rotate_record, viewpoint_angles
from hf_real3d.real3dqa.rotation_set import RotationSet
from hf_real3d.real3dqa.runs import RotateRun, Trial
from hf_real3d.scene import Scene
from hf_real3d.schema import (
    fill_rows,
    question_features,
    scene_features,
    scene_rows,
)
from hf_real3d.sources import DatasetFolder, SQA3DFolder, read_questions, resolve, scene_getter
from hf_real3d.spatial import Unanswerable, View
from hf_real3d.sqa3d import SQA3DRecord
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
    ``real3dqa`` config, else ``sqa3d``: :func:`hf_real3d.sources.read_questions`; its
    ``scenes`` config unless ``scenes`` is given)."""
    src = resolve(dataset, SQA3DFolder, DatasetFolder, what="the questions to rotate")
    recs = read_questions(src, split, situated=True)
    scene = scene_getter(src, scenes=scenes)
    get = None
    if scene is not None:
        def get(sid: str) -> Scene | None:  # a question whose room is absent is left to the LM
            try:
                return scene(sid)
            except KeyError:
                return None
    if not recs:
        raise FormatError(f"{src.path}: no questions to rotate")
    return recs, get


def _excluded(question_id: int, degrees: int, reason: str, output: str = "") -> dict[str, Any]:
    return {"question_id": question_id, "rotation_deg": degrees, "reason": reason,
            "output": output[:500]}


def _reason_counts(excluded: list[dict[str, Any]]) -> collections.Counter:
    """Exclusions per reason (the text before its first colon or parenthesis)."""
    return collections.Counter(e["reason"].split(":")[0].split(" (")[0] for e in excluded)


@dataclass
class _Plan:
    """The questions to rotate and what happened to each: the groups turned (from geometry,
    then from the model's replies), the (record, turn) pairs asked with their prompts, the
    turned viewpoints excluded with the reason, and the questions with no heading cue."""

    recs: list[SQA3DRecord]
    angles: list[int]
    groups: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    asks: list[tuple[SQA3DRecord, int]] = field(default_factory=list)
    prompts: list[list[dict[str, str]]] = field(default_factory=list)
    excluded: list[dict[str, Any]] = field(default_factory=list)
    no_cue: list[int] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        return [f"question_id {rec.question_id} at {k} degrees" for rec, k in self.asks]

    def check(self, i: int, reply: Reply) -> str | None:
        """Why the reply to prompt ``i`` cannot be used (None: it can)."""
        return parse_rotation(reply.text, self.asks[i][0].situation, cut=reply.cut)[1]


def _plan(recs: list[SQA3DRecord], scene_of: Callable[[str], Scene | None],
          angles: list[int], tpl: PromptTemplate) -> _Plan:
    """The geometry route where a scene answers, else one prompt per turn (with what the
    agent sees after it, given a scene); a situation with no heading cue and no scene is not
    asked."""
    plan = _Plan(recs, angles)
    for rec in recs:
        scene = scene_of(rec.scene_id)
        if scene is not None:
            try:
                rows = rotate_record(rec, scene, angles)
                plan.groups[rec.question_id] = [dict(r, source="geometry") for r in rows]
                continue
            except Unanswerable:
                pass
        cue = heading_cue(rec.situation)
        if not cue:
            plan.no_cue.append(rec.question_id)
            if scene is None:
                plan.excluded += [_excluded(rec.question_id, k, "no heading cue without a scene")
                                  for k in angles[1:]]
                continue
        for k in angles[1:]:
            graph = "(no scene given)" if scene is None else \
                scene_graph_text(scene, rec.pose(scene.origin).turned(k))
            plan.asks.append((rec, k))
            plan.prompts.append(tpl.messages(degrees=k, situation=rec.situation,
                                             question=rec.question, answer=rec.answers[0],
                                             scene_graph=graph,
                                             note="" if cue else HEADING_CUE_NOTE))
    return plan


def _ask(client: LLMClient, plan: _Plan, out: str | os.PathLike) -> list[Generation]:
    """The model's reply to every prompt; a run in which none came raises LLMError."""
    if not plan.prompts:
        return []
    results = client.generate(plan.prompts, desc="rewriting rotations", items=plan.names,
                              schema=ROTATION_SCHEMA, check=plan.check)
    if all(g.text is None for g in results):
        raise LLMError(f"no reply to any of the {len(plan.prompts)} prompts (the first, "
                       f"{plan.names[0]}: {results[0].error}); nothing written to {out}")
    return results


def _parse(plan: _Plan, results: list[Generation]) -> list[dict[str, Any]]:
    """Each reply parsed into its turned viewpoint, or excluded with the reason; a question
    keeps the model's group only when every turn parsed (else its parsed turns are excluded
    too). Adds the groups to ``plan``; returns every attempt, for the ``llm_calls`` config."""
    lm: dict[int, dict[int, dict[str, Any]]] = collections.defaultdict(dict)
    dropped: dict[int, list[int]] = collections.defaultdict(list)
    calls = []
    for (rec, k), g in zip(plan.asks, results):
        q = rec.question_id
        calls += [{"question_id": q, "rotation_deg": k, "attempt": n, **a.to_dict()}
                  for n, a in enumerate(g.attempts)]
        parsed, why = (None, f"no reply: {g.error}") if g.text is None else \
            parse_rotation(g.text, rec.situation, cut=g.reply.cut)
        if parsed is None:
            plan.excluded.append(_excluded(q, k, why, g.text or ""))
            dropped[q].append(k)
        else:
            lm[q][k] = dict(parsed, raw_reply=g.text)
    by_id = {r.question_id: r for r in plan.recs}
    for q, got in lm.items():
        if len(got) < len(plan.angles) - 1:  # a sibling viewpoint was excluded: say so
            why = ("a sibling viewpoint was excluded (rotation_deg "
                   + ", ".join(map(str, sorted(dropped[q]))) + ")")
            plan.excluded += [_excluded(q, k, why, got[k]["raw_reply"]) for k in sorted(got)]
            continue
        rec = by_id[q]
        plan.groups[q] = [{"rotation_deg": 0, "situation": rec.situation,
                           "answers": list(rec.answers), "position": dict(rec.position),
                           "rotation": dict(rec.rotation)}]
        plan.groups[q] += [{"rotation_deg": k, **got[k], "position": dict(rec.position),
                            "rotation": _turned_rotation(rec.rotation, k, f"question_id {q}"),
                            "source": "lm"} for k in plan.angles[1:]]
    return calls


def _rotation_rows(plan: _Plan) -> list[dict[str, Any]]:
    """The rows of the ``rotations`` config: each group's viewpoints, in question order."""
    by_id = {r.question_id: r for r in plan.recs}
    rows = []
    for q in sorted(plan.groups):
        base = question_row(by_id[q])
        for r in plan.groups[q]:
            row = dict(base)
            row.update({k: r[k] for k in ("situation", "answers", "position", "rotation",
                                          "rotation_deg")})
            row["alternative_situation"] = [] if r["rotation_deg"] else \
                base["alternative_situation"]
            row["source"] = r.get("source", "geometry") if r["rotation_deg"] else "original"
            row["raw_reply"] = r.get("raw_reply", "")
            rows.append(row)
    return rows


#: the columns of the ``rotations`` config ``rotate`` writes
ROTATIONS_FEATURES = question_features("kind", "semantics", "source", "raw_reply")
_EXCLUDED_FEATURES = datasets.Features({
    "question_id": datasets.Value("int64"), "rotation_deg": datasets.Value("int32"),
    "reason": datasets.Value("string"), "output": datasets.Value("string")})
_CALLS_FEATURES = datasets.Features({
    "question_id": datasets.Value("int64"), "rotation_deg": datasets.Value("int32"),
    "attempt": datasets.Value("int32"), "seed": datasets.Value("int64"),
    "structured": datasets.Value("string"), "cached": datasets.Value("bool"),
    "finish_reason": datasets.Value("string"), "prompt_tokens": datasets.Value("int64"),
    "completion_tokens": datasets.Value("int64"), "error": datasets.Value("string"),
    "reason": datasets.Value("string")})


def _configs(plan: _Plan, rows: list[dict[str, Any]], calls: list[dict[str, Any]],
             split: str, evidence: list[SQA3DRecord]) -> list[ConfigData]:
    """The dataset folder's configs: the questions, their rotations, the exclusions, the
    model's calls, and the SQA3D records of their scenes (``evidence``)."""
    base_f = question_features("kind", "semantics")
    return [ConfigData("real3dqa", {split: fill_rows([question_row(r) for r in plan.recs],
                                                     base_f)}, base_f,
                       "the questions asked to rotate, at 0 degrees", default=True),
            ConfigData(TEXTS_CONFIG, {split: fill_rows([question_row(r) for r in evidence],
                                                       base_f)},
                       base_f, "every question read of the rotated questions' scenes: what "
                       "the checker reads as evidence at each pose"),
            ConfigData("rotations", {split: rows}, ROTATIONS_FEATURES,
                       f"questions with every viewpoint of {plan.angles}, grouped on "
                       "question_id; `source` says how each was made, `raw_reply` holds the "
                       "model's reply"),
            ConfigData("rotations_excluded", {split: plan.excluded}, _EXCLUDED_FEATURES,
                       "turned viewpoints left out, with the reason (a model's reply that "
                       "could not be used, a sibling viewpoint excluded, no heading cue)"),
            ConfigData("llm_calls", {split: calls}, _CALLS_FEATURES,
                       "every request for a turned viewpoint (or its cached reply): seed, "
                       "structured output, finish reason, tokens, error, why unusable")]


def _card_section(s: dict[str, Any], plan: _Plan, limited: str, client: LLMClient,
                  tpl: PromptTemplate) -> str:
    """The card's section on how the rotations were made (``limited``: how the questions
    were drawn, or empty)."""
    d = client.describe()
    usage = s["usage"]
    finish = ", ".join(f"{k} {v}" for k, v in sorted(usage["finish_reasons"].items()))
    return ("## How the rotations were made\n\n"
            f"`hf-real3d rotate` on {s['questions']} questions{limited} and the turns "
            f"{plan.angles[1:]}: {s['groups']} rotation groups, "
            + ", ".join(f"{n} turned items from {src}" for src, n in s["sources"].items())
            + f". The language model: {d['model']}" + (f" at {d['url']}" if d.get("url") else "")
            + f" (temperature {d['temperature']}, seed {d['seed']}, max_tokens "
            f"{d['max_tokens']}, re-asks {d['reask']}), prompt `{tpl.path.name}`; structured "
            f"output: {s['structured']}; {s['asked']} prompts, {usage['attempts']} replies or "
            f"failures ({usage['prompt_tokens']} prompt and {usage['completion_tokens']} "
            "completion tokens" + (f"; finish reasons: {finish}" if finish else "") + "). "
            f"Questions whose situation names no direction: {s['no_heading_cue']}"
            + (" (without a scene they are not asked: `no heading cue without a scene`; "
               "with one, the prompt asks for a heading cue)" if plan.no_cue else "")
            + f". Excluded turned items: {s['excluded']}"
            + (" (" + ", ".join(f"{r}: {n}" for r, n in
                          collections.Counter(s["reasons"]).most_common()) + ")"
               if plan.excluded else "") + ".\n\n"
            + markdown_table(["source", "turned items"], [[src, n] for src, n in
                                                          s["sources"].items()]))


def _write(out: str | os.PathLike, configs: list[ConfigData], rows: list[dict[str, Any]],
           section: str, scenes: list[Scene] | None, split: str, check: _Check
           ) -> dict[str, Any]:
    """Check the rotation ``rows`` in memory (``check``: the options and the evidence), then
    write the dataset folder ``out`` with ``configs``, the checks (``OUT/checks``, configs
    ``rotation_checks``, ``rotations_checked``) and the ``scenes`` config when scenes were
    given, at once. Returns the checks' summary."""
    if scenes is not None:
        configs = configs + [ConfigData("scenes", {split: scene_rows(scenes)}, scene_features(),
                                        "objects and Nx6 point clouds", rows_per_shard=20)]
    rs = RotationSet("folder", Path(out), rows, None if scenes is None else
                     {s.scene_id: s for s in scenes}.__getitem__,
                     "the folder's scenes config" if scenes else "", split=split)
    result = check_set(rs, check.options, evidence=evidence_of(check.evidence, str(out)),
                       progress=check.progress)
    with atomic_dir(out) as tmp:
        summary = write_check_folder(result, tmp / "checks", dataset=str(out), source="folder",
                                     scenes_from=rs.scenes_from)
        checked = check_configs(result, summary, rows, ROTATIONS_FEATURES, split)
        write_dataset_files(
            tmp, configs + checked, extra_sections=[section],
            pretty_name="Real-3DQA rotations (built with hf_real3d rotate)",
            summary=("Situated questions from turned viewpoints, made from scene geometry "
                     "where it applies and by a language model elsewhere; check and review "
                     "before use."), license="other", citation=CITATION,
            license_note="Built by the user with hf_real3d from their own SQA3D-format data.")
    return summary


@dataclass(frozen=True)
class _Check:
    """How ``rotate`` checks its rows: the checker's options, the SQA3D records it read (the
    evidence at each pose), and whether to show progress."""

    options: CheckOptions
    evidence: list[SQA3DRecord]
    progress: bool = True


def _refuse_before_work(dataset: str | os.PathLike, out: str | os.PathLike, client: LLMClient,
                        scenes: str | os.PathLike | None, template: str | os.PathLike | None,
                        n_viewpoints: int) -> list[int]:
    """The viewpoints' angles, once every argument is known to be usable."""
    if n_viewpoints < 2:
        raise InputError(f"`viewpoints` {n_viewpoints}: a rotation set needs viewpoint 0 and "
                         "at least one turn; give 2 or more (4: 0, 90, 180, 270)")
    if Path(out).exists() and not Path(out).is_dir():
        raise FileExistsError(f"`out` {out}: exists and is not a folder; give another `out`")
    batch_out = client.config.batch_out
    check_out(out, dataset=dataset, scenes=scenes, prompt=template,
              batch_in=client.config.batch_in, batch_out=batch_out,
              llm_cache=client.cache.folder if client.cache is not None else None)
    if batch_out is not None:
        check_out(batch_out, name="batch_out", dataset=dataset, scenes=scenes, prompt=template)
    return viewpoint_angles(n_viewpoints)


def rotate_dataset(dataset: str | os.PathLike, out: str | os.PathLike, client: LLMClient, *,
                   scenes: str | os.PathLike | None = None,
                   template: str | os.PathLike | None = None, split: str = "test",
                   n_viewpoints: int = 4, limit: int | None = None, dry_run: bool = False,
                   check: CheckOptions | None = None) -> RotateRun | Trial:
    """Rotate every question of ``dataset`` (see the module docstring) into the dataset folder
    ``out``, checked before it is written. Returns a :class:`RotateRun`. ``limit``: a subset of the
    questions drawn with the decoding seed; ``dry_run``: what would be asked, nothing sent or
    written; a client with ``batch_out`` writes the requests as a Batch API file, nothing
    else."""
    angles = _refuse_before_work(dataset, out, client, scenes, template, n_viewpoints)
    tpl = PromptTemplate.load(template or ROTATE_TEMPLATE, required=_FIELDS,
                              optional=("scene_graph",), output=("situation", "answer"))
    recs, get = _inputs(dataset, scenes, split)
    total, read = len(recs), recs
    recs = [recs[i] for i in seeded_subset(total, limit, client.decoding.seed)]
    scene_of = functools.cache(get) if get is not None else lambda sid: None
    plan = _plan(recs, scene_of, angles, tpl)
    trial = offline_step(client, plan.prompts, plan.names, schema=ROTATION_SCHEMA,
                         check=plan.check, dry_run=dry_run)
    if trial is not None:
        return Trial.of({**trial, "questions": len(recs), "geometry_groups": len(plan.groups),
                         "no_heading_cue": len(plan.no_cue)})
    results = _ask(client, plan, out)
    calls = _parse(plan, results)
    if not plan.groups:
        raise LLMError(f"{dataset}: no rotation group ({len(recs)} questions; excluded turned "
                       "items: " + (", ".join(f"{r}: {n}" for r, n in
                                              _reason_counts(plan.excluded).most_common())
                                    or "none") + f"); nothing written to {out}")
    rows = fill_rows(_rotation_rows(plan), ROTATIONS_FEATURES)
    s = {"questions": len(recs), "groups": len(plan.groups),
         "sources": dict(collections.Counter(r["source"] for r in rows if r["rotation_deg"])),
         "asked": len(plan.prompts), "cached": sum(g.cached for g in results),
         "excluded": len(plan.excluded), "reasons": dict(_reason_counts(plan.excluded)),
         "no_heading_cue": len(plan.no_cue), "usage": usage_totals(results),
         "structured": client.formats.record(bool(plan.prompts)),
         "requests": client.stats.requests, "failed": sum(g.text is None for g in results)}
    limited = f" (of {total}, drawn with --limit {limit}, seed {client.decoding.seed})" \
        if len(recs) < total else ""
    present = None if get is None else \
        [x for x in map(scene_of, sorted({r.scene_id for r in recs})) if x is not None]
    kept = {r.scene_id for r in recs}
    evidence = [r for r in read if r.scene_id in kept]
    checked = _write(out, _configs(plan, rows, calls, split, evidence), rows,
                     _card_section(s, plan, limited, client, tpl), present, split,
                     _Check(check or CheckOptions(), evidence, client.progress))
    return RotateRun.of({**s, "check": {k: checked.get(k) for k in ("items", "verdicts",
                                                                     "group_verdicts")}})
