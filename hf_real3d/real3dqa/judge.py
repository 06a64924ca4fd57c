"""``hf-real3d judge``: the text-only filter of Real-3DQA (section 3.1, Table 7), asked of any
model a lab has through :class:`hf_real3d.llm.LLMClient`.

The judge sees each question's situation and question, never the scene, with the prompt of
``hf_real3d/prompts/judge.json`` (or a file of the same shape: ``--prompt``). What it answers
correctly is what ``build-real3dqa --judge`` and ``build-real-scanqa --judge`` remove. It
writes a predictions file (JSONL rows ``question_id``, ``prediction``) and beside it
``<file stem>.judge.json``: the model, the prompt, the decoding and the counts, which the
built dataset's card quotes. An item the model could not answer is written with an empty
prediction (counted as not answered, so the question is not removed) and its reason.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from hf_real3d._io import FormatError, atomic_path, read_json, write_json
from hf_real3d.llm import PROMPTS, LLMClient, PromptTemplate
from hf_real3d.sqa3d import read_split, split_paths

__all__ = ["JUDGE_TEMPLATE", "read_questions", "run_judge", "judge_meta", "judge_card_lines"]

JUDGE_TEMPLATE = PROMPTS / "judge.json"


def read_questions(dataset: str | os.PathLike, split: str = "test") -> list[dict[str, Any]]:
    """(question_id, situation, question) of an SQA3D folder, a ScanQA JSON file (or a folder
    holding one), or a dataset folder this library built (its ``sqa3d``, ``scanqa``,
    ``real3dqa`` or ``real_scanqa`` config, the first it has)."""
    path = Path(dataset)
    if path.is_dir() and split_paths(path, split)[0].is_file():
        return [{"question_id": r.question_id, "situation": r.situation,
                 "question": r.question} for r in read_split(path, split, validate_poses=False)]
    if path.is_dir() and (path / "README.md").is_file():
        # datasets (through hub) only for a dataset folder
        from hf_real3d.hub import card_configs, load_local

        configs = card_configs(path)
        config = next((c for c in ("sqa3d", "scanqa", "real3dqa", "real_scanqa")
                       if c in configs), None)
        if config is None:
            raise FormatError(f"{path}: its card lists configs {configs}, none of sqa3d, "
                              "scanqa, real3dqa or real_scanqa")
        ds = load_local(path, config)
        return [{"question_id": r["question_id"], "situation": r.get("situation") or "",
                 "question": r["question"]} for r in ds]
    files = [path] if path.suffix == ".json" else sorted(path.glob("*.json")) \
        if path.is_dir() else []
    if len(files) == 1 and files[0].is_file():
        # the ScanQA reader only for a ScanQA file
        from hf_real3d.scanqa import read_scanqa

        df = read_scanqa(files[0])
        return [{"question_id": q, "situation": "", "question": t}
                for q, t in zip(df.question_id, df.question)]
    raise FileNotFoundError(f"{path}: not an SQA3D folder (v1_balanced_questions_{split}_..."
                            ".json), a ScanQA JSON file or a dataset folder")


def _meta_path(out: Path) -> Path:
    return out.with_name(out.stem + ".judge.json")


def run_judge(dataset: str | os.PathLike, out: str | os.PathLike, client: LLMClient, *,
              template: str | os.PathLike | None = None, split: str = "test") -> dict[str, Any]:
    """Ask ``client`` every question of ``dataset`` from its text alone; write the
    predictions to ``out`` and the record beside it (both atomically). Returns the record."""
    out = Path(out)
    if out.is_dir():
        raise FileExistsError(f"--out {out}: a folder; give a predictions file (.jsonl)")
    tpl = PromptTemplate.load(template or JUDGE_TEMPLATE, required=("question",),
                              optional=("situation",))
    questions = read_questions(dataset, split)
    if not questions:
        raise FormatError(f"{dataset}: no questions to judge")
    client.check()
    prompts = [tpl.messages(situation=q["situation"], question=q["question"])
               for q in questions]
    results = client.generate(prompts, desc="judging")
    failed = [{"question_id": q["question_id"], "reason": g.error}
              for q, g in zip(questions, results) if g.text is None]
    with atomic_path(out) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            for q, g in zip(questions, results):
                row = {"question_id": q["question_id"],
                       "prediction": _first_line(g.text) if g.text is not None else ""}
                if g.text is None:
                    row["error"] = g.error
                f.write(json.dumps(row) + "\n")
    meta = {"dataset": str(dataset), "questions": len(questions),
            "answered": len(questions) - len(failed), "failed": len(failed),
            "cached": sum(g.cached for g in results), "judge": client.describe(),
            "prompt": {"file": tpl.path.name, "system": tpl.system, "user": tpl.user},
            "failures": failed[:50]}
    write_json(_meta_path(out), meta, indent=2)
    return meta


def _first_line(text: str) -> str:
    return text.strip().split("\n")[0].strip()


def judge_meta(predictions: str | os.PathLike) -> dict[str, Any] | None:
    """The record ``hf-real3d judge`` wrote beside a predictions file (None for other files)."""
    if not isinstance(predictions, str | os.PathLike):
        return None
    path = _meta_path(Path(predictions))
    return read_json(path) if path.is_file() else None


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
                     f"{m['questions']} unanswered (errors), counted as not answered.")
    return lines
