"""``hf-real3d judge``: the text-only filter of Real-3DQA (section 3.1, Table 7), asked of any
model a lab has through :class:`hf_real3d.llm.LLMClient`.

The judge sees each question's situation and question, never the scene, with the prompt of
``hf_real3d/prompts/judge.json`` (or a file of the same shape: ``--prompt``). What it answers
correctly is what ``build-real3dqa --judge`` and ``build-real-scanqa --judge`` remove. It
writes a predictions file (JSONL rows ``question_id``, ``prediction``, with the reply's
``finish_reason`` and token counts) and beside it ``<file stem>.judge.json``: the model, the
prompt, the decoding, the counts and the tokens, which the built dataset's card quotes. An
item the model could not answer (no reply, or its first line cut at ``max_tokens``) is written
with an empty prediction (counted as not answered, so the question is not removed) and its
reason. A run in which no question was answered writes nothing and fails; ``build-real3dqa
--judge`` refuses a file in which more than a tenth failed (:func:`refuse_failed_judges`).
"""

from __future__ import annotations

import collections
import json
import os
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from hf_real3d._io import (
    FormatError,
    atomic_path,
    check_out,
    read_json,
    read_jsonl,
    write_json,
)
from hf_real3d.llm import (
    PROMPTS,
    LLMClient,
    LLMError,
    PromptTemplate,
    Reply,
    offline_step,
    seeded_subset,
    usage_totals,
)
from hf_real3d.real3dqa.runs import JudgeRun, Trial
from hf_real3d.sources import DatasetFolder, ScanQAFile, SQA3DFolder, read_questions, resolve

__all__ = ["JUDGE_TEMPLATE", "run_judge", "judge_meta", "judge_card_lines",
           "refuse_failed_judges"]

JUDGE_TEMPLATE = PROMPTS / "judge.json"


def _meta_path(out: Path) -> Path:
    return out.with_name(out.stem + ".judge.json")


def _judge_check(i: int, reply: Reply) -> str | None:
    """Why a judge's reply cannot be used: its answer (the first line) was cut."""
    if reply.cut and "\n" not in reply.text:
        return "cut at max_tokens (raise --max_tokens)"
    return None


def run_judge(dataset: str | os.PathLike, out: str | os.PathLike, client: LLMClient, *,
              template: str | os.PathLike | None = None, split: str = "test",
              limit: int | None = None, dry_run: bool = False) -> JudgeRun | Trial:
    """Ask ``client`` every question of ``dataset`` (``limit``: a subset drawn with the
    decoding seed) from its text alone; write the predictions to ``out`` and the record beside
    it (both atomically). Returns the record. ``dry_run``: what would be asked, nothing sent
    or written; a client with ``batch_out`` writes the requests as a Batch API file, nothing
    else (either returns a :class:`Trial`). A run with no answered question writes nothing and
    raises :class:`LLMError`."""
    out = Path(out)
    if out.is_dir():
        raise FileExistsError(f"`out` {out}: a folder; give a predictions file (.jsonl)")
    batch_in, batch_out = client.config.batch_in, client.config.batch_out
    check_out(out, dataset=dataset, prompt=template, batch_in=batch_in, batch_out=batch_out)
    if batch_out is not None:
        check_out(batch_out, name="batch_out", dataset=dataset, prompt=template)
    tpl = PromptTemplate.load(template or JUDGE_TEMPLATE, required=("question",),
                              optional=("situation",))
    # the questions before any filter: an SQA3D folder's split, a ScanQA file, or a dataset
    # folder's sqa3d or scanqa config (else its real3dqa or real_scanqa)
    questions = read_questions(resolve(dataset, SQA3DFolder, DatasetFolder, ScanQAFile,
                                       what="the questions"), split, before_filtering=True,
                               validate_poses=False)
    if not questions:
        raise FormatError(f"{dataset}: no questions to judge")
    questions = [questions[i] for i in seeded_subset(len(questions), limit,
                                                     client.decoding.seed)]
    prompts = [tpl.messages(situation=q.situation, question=q.question) for q in questions]
    names = [f"question_id {q.question_id}" for q in questions]
    trial = offline_step(client, prompts, names, check=_judge_check, dry_run=dry_run)
    if trial is not None:
        return Trial.of({**trial, "questions": len(questions)})
    results = client.generate(prompts, desc="judging", items=names, check=_judge_check)
    failed = [{"question_id": q.question_id, "reason": g.error or g.reason}
              for q, g in zip(questions, results) if not g.ok]
    if len(failed) == len(questions):
        reasons = collections.Counter(_reason_kind(f["reason"]) for f in failed)
        raise LLMError(f"{dataset}: no question answered ({len(failed)} failed: "
                       + ", ".join(f"{n} {r}" for r, n in reasons.most_common(3))
                       + f"; the first, question_id {failed[0]['question_id']}: "
                       f"{failed[0]['reason']}); nothing written to {out}")
    with atomic_path(out) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            for q, g in zip(questions, results):
                row = {"question_id": q.question_id,
                       "prediction": _first_line(g.text) if g.ok else ""}
                if not g.ok:
                    row["error"] = g.error or g.reason
                if g.reply is not None:
                    row.update(finish_reason=g.finish_reason, **g.usage)
                f.write(json.dumps(row) + "\n")
    run = JudgeRun(
        str(dataset), len(questions), answered=len(questions) - len(failed), failed=len(failed),
        cached=sum(g.cached for g in results), limit=limit, judge=client.describe(),
        prompt={"file": tpl.path.name, "system": tpl.system, "user": tpl.user},
        usage=usage_totals(results), this_run=client.stats.as_dict(),
        failure_reasons=dict(collections.Counter(_reason_kind(f["reason"]) for f in failed)),
        failures=failed[:50])
    write_json(_meta_path(out), asdict(run), indent=2)
    return run


def _reason_kind(reason: str | None) -> str:
    """A failure's kind, for counts: the text before its first colon."""
    return str(reason).split(":")[0]


def _first_line(text: str) -> str:
    return text.strip().split("\n")[0].strip()


def judge_meta(predictions: str | os.PathLike) -> dict[str, Any] | None:
    """The record ``hf-real3d judge`` wrote beside a predictions file (None for other files)."""
    if not isinstance(predictions, str | os.PathLike):
        return None
    path = _meta_path(Path(predictions))
    return read_json(path) if path.is_file() else None


#: the share of failed questions above which a judge file is refused
JUDGE_FAILURE_LIMIT = 0.1


def refuse_failed_judges(judges: Sequence[tuple[str, Any]], *, allow: bool = False) -> None:
    """Refuse, before any work, a judge file in which more than a tenth of the questions
    failed (its ``.judge.json``, else its rows with an ``error``): a judge that did not answer
    filters nothing. ``allow`` (``--allow_judge_failures``) lets it through."""
    if allow:
        return
    for name, file in judges:
        if not isinstance(file, str | os.PathLike) or not Path(file).is_file():
            continue
        meta = judge_meta(file)
        if meta is not None:
            failed, total = int(meta.get("failed", 0)), int(meta.get("questions", 0))
            where = f"{file} (its record {_meta_path(Path(file)).name})"
        else:
            if Path(file).suffix != ".jsonl":
                continue
            rows = [r for _, r in read_jsonl(file)]
            failed, total = sum(bool(r.get("error")) for r in rows), len(rows)
            where = str(file)
        if total and failed > JUDGE_FAILURE_LIMIT * total:
            raise FormatError(f"`judge` {name}={file}: {failed} of {total} questions failed "
                              f"in {where}; run hf-real3d judge again (answered questions come "
                              "from the cache) or pass `allow_judge_failures`")


def judge_card_lines(judges: list[tuple[str, Any]], removed: dict[str, int]) -> list[str]:
    """Card lines for the judges ``hf-real3d judge`` made: model, prompt and removals."""
    lines = []
    for name, file in judges:
        m = judge_meta(file)
        if m is None:
            continue
        j = m["judge"]
        where = f" at {j['url']}" if j.get("url") else ""
        lines.append(f"- judge `{name}`: {j['model']}{where} ({j['route']}; temperature "
                     f"{j['temperature']}, seed {j['seed']}), prompt `{m['prompt']['file']}` "
                     f"(user template: `{m['prompt']['user']!r}`); removed "
                     f"{removed.get(f'judge:{name}', 0)} question(s); {m['failed']} of "
                     f"{m['questions']} unanswered (errors), counted as not answered"
                     + _usage_text(m.get("usage")) + ".")
    return lines


def _usage_text(u: dict[str, Any] | None) -> str:
    if not u:
        return ""
    finish = ", ".join(f"{k} {v}" for k, v in sorted(u.get("finish_reasons", {}).items()))
    return (f"; tokens: {u.get('prompt_tokens', 0)} prompt, {u.get('completion_tokens', 0)} "
            f"completion" + (f"; finish reasons: {finish}" if finish else ""))
