"""Building Real-ScanQA: ScanQA filtered by the Real-3DQA pipeline, as a dataset folder."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import datasets
import pandas as pd

from hf_real3d.hub import ConfigData, push_folder, write_dataset_folder
from hf_real3d.real3dqa.filtering import filter_questions
from hf_real3d.real3dqa.judge import judge_card_lines, refuse_failed_judges
from hf_real3d.real_scanqa.format import CITATION, features, rows
from hf_real3d.real_scanqa.predictions import read_predictions
from hf_real3d.scanqa import read_scanqa, require_answers
from hf_real3d.tables import markdown_table

__all__ = ["ScanQABuildRun", "build_real_scanqa"]


@dataclass
class ScanQABuildRun:
    """``hf-real3d build-real-scanqa``: the filter's counts, overall and per question type."""

    questions: int
    kept: int
    removed: int
    filter_stats: list[dict[str, Any]]
    per_type: dict[str, dict[str, int]]
    url: str | None = None  # where it was published

    def lines(self, out: str) -> list[str]:
        return [f"wrote {out}: {self.questions} questions, {self.kept} kept, {self.removed} "
                "removed" + (f"; {self.url}" if self.url else "")]


def build_real_scanqa(scanqa_json: str | os.PathLike, out: str | os.PathLike, *,
                      pairs: list[tuple[str, Any, Any]], judges: list[tuple[str, Any]] = (),
                      push_to_hub: str | None = None, license: str = "other",
                      allow_judge_failures: bool = False) -> ScanQABuildRun:
    """ScanQA JSON + (full, blind) prediction pairs (+ text-only judges) -> a dataset folder
    with configs ``scanqa`` (all questions), ``real_scanqa`` (kept, default) and
    ``filtered_out`` (removed, with reasons). ``license``: the card's license identifier
    (default ``other``: ScanQA's own terms apply). Predictions are paths or tables
    (question_id, prediction[, log_prob]). A judge file in which more than a tenth of the
    questions failed is refused unless ``allow_judge_failures``."""
    refuse_failed_judges(judges, allow=allow_judge_failures)
    qs = read_scanqa(scanqa_json)
    require_answers(qs, "filtered")
    refs = qs[["question_id", "answers"]]
    result = filter_questions(refs, [(n, read_predictions(f, f"pair {n!r} (full)"),
                                      read_predictions(b, f"pair {n!r} (blind)"))
                                     for n, f, b in pairs],
                              [(n, read_predictions(j, f"judge {n!r}")) for n, j in judges])
    info = result.table.set_index("question_id")
    kept = qs[info.kept.reindex(qs.question_id).to_numpy()]
    removed = qs[~info.kept.reindex(qs.question_id).to_numpy()]
    feats = features()
    out_feats = feats.copy()
    out_feats["reasons"] = [datasets.Value("string")]
    out_feats["dependency"] = datasets.Value("float64")
    dep = info.dependency.to_dict()
    by_type = pd.DataFrame({"type": qs.question_type, "kept": info.kept.reindex(
        qs.question_id).to_numpy()}).groupby("type").kept.agg(["size", "sum"])
    type_rows = [[t, int(r["size"]), int(r["sum"]), int(r["size"] - r["sum"])]
                 for t, r in by_type.sort_values("size", ascending=False).iterrows()]
    section = ("## How it was built\n\nFiltering (a question is removed when a (full, blind) "
               "pair answers it both with and without 3D, or a text-only judge answers it; "
               "refined EM):\n\n" + result.stats_markdown()
               + "".join(f"\n{line}" for line in judge_card_lines(list(judges),
                                                                    result.removed_by()))
               + "\n\nPer question type (the "
               "first word):\n\n" + markdown_table(["type", "questions", "kept", "removed"],
                                                  type_rows)
               + "\n\nScanQA has no situation or agent pose: there is no rotation and no "
               "VRS; score EM / refined EM and the captioning metrics "
               "(`hf-real3d evaluate-real-scanqa`).")
    write_dataset_folder(
        out,
        [ConfigData("scanqa", {"test": rows(qs)}, feats, "all input ScanQA questions"),
         ConfigData("real_scanqa", {"test": rows(kept)}, feats,
                    "questions no blind model or judge answers", default=True),
         ConfigData("filtered_out", {"test": rows(
             removed, reasons=[list(info.reasons[q]) for q in removed.question_id],
             dependency=[None if dep[q] != dep[q] else float(dep[q])
                         for q in removed.question_id])}, out_feats,
                    "removed questions with the filters that removed them")],
        pretty_name="Real-ScanQA (built with hf_real3d)",
        summary=("ScanQA questions that no blind model or text-only judge answers: the "
                 "Real-3DQA filter applied to ScanQA. No rotation (ScanQA has no agent pose)."),
        license=license, citation=CITATION, extra_sections=[section],
        license_note=("Built by the user with hf_real3d from ScanQA-format questions: ScanQA's "
                      "own license and the ScanNet Terms of Use apply to real data. Set the "
                      "license of your build with --license."))
    return ScanQABuildRun(len(qs), len(kept), len(removed), result.stats(),
                          {r[0]: {"questions": r[1], "kept": r[2]} for r in type_rows},
                          push_folder(out, push_to_hub) if push_to_hub else None)
