"""Real-ScanQA: ScanQA filtered by the Real-3DQA pipeline, published and scored.

The paper builds its second de-biased benchmark from ScanQA with the same filter as
Real-3DQA (a question goes when a (full, blind) pair answers it both with and without 3D,
or a text-only judge answers it). ScanQA has no situation or agent pose, so there is no
rotation: the scores are EM / refined EM (the Real-3DQA rules, including the
reproduce-official switch) and ScanQA's captioning metrics.

Captioning metrics: BLEU-1..4, ROUGE-L, METEOR and CIDEr from ``pycocoevalcap`` (the
package ScanQA's own evaluation uses), tokenised by its PTB tokenizer; the tokenizer and
METEOR run Java (a JRE). SPICE is left out: it downloads Stanford CoreNLP models at first
use, which this library never does at run time.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import datasets
import pandas as pd

from hf_real3d._io import FormatError, atomic_dir, write_json
from hf_real3d.hub import ConfigData, load_local, push_folder, write_dataset_folder
from hf_real3d.predictions import (
    check_unique_names,
    parse_prediction_spec,
    read_prediction_columns,
)
from hf_real3d.real3dqa.filtering import filter_questions
from hf_real3d.real3dqa.judge import judge_card_lines
from hf_real3d.scanqa import read_scanqa, require_answers
from hf_real3d.scoring import MetricInputError, answer_correctness
from hf_real3d.tables import markdown_table

__all__ = ["build_real_scanqa", "score_real_scanqa", "caption_metrics", "evaluate_real_scanqa",
           "CAPTION_METRICS", "CITATION"]

CITATION = """@inproceedings{ma2026real3dqa,
  title={Do 3D Large Language Models Really Understand 3D Spatial Relationships?},
  author={Ma, Xianzheng and others},
  booktitle={ICLR},
  year={2026}
}
@inproceedings{azuma2022scanqa,
  title={ScanQA: 3D Question Answering for Spatial Scene Understanding},
  author={Azuma, Daichi and Miyanishi, Taiki and Kurita, Shuhei and Kawanabe, Motoaki},
  booktitle={CVPR},
  year={2022}
}"""
CAPTION_METRICS = ("bleu_1", "bleu_2", "bleu_3", "bleu_4", "rouge_l", "meteor", "cider")


def _features():
    return datasets.Features({
        "question_id": datasets.Value("string"), "scene_id": datasets.Value("string"),
        "question": datasets.Value("string"), "answers": [datasets.Value("string")],
        "object_ids": [datasets.Value("int64")], "object_names": [datasets.Value("string")],
        "question_type": datasets.Value("string")})


def _rows(df: pd.DataFrame, **extra: Sequence) -> list[dict[str, Any]]:
    cols = ["question_id", "scene_id", "question", "answers", "object_ids", "object_names",
            "question_type"]
    rows = df[cols].to_dict("records")
    for k, vals in extra.items():
        for r, v in zip(rows, vals):
            r[k] = v
    return rows


def _predictions(p: Any, what: str) -> pd.DataFrame:
    """A (question_id, prediction[, log_prob]) table from a table or a predictions file (read
    by :func:`~hf_real3d.predictions.read_prediction_columns`: JSONL, JSON rows with any of its
    answer keys, or a ``{question_id: answer}`` object); ScanQA ids stay strings."""
    if isinstance(p, pd.DataFrame):
        df = p.copy()
    else:
        path = Path(p)
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such predictions file ({what})")
        df = read_prediction_columns(path).to_frame()
    if "question_id" not in df or "prediction" not in df:
        raise FormatError(f"{what}: predictions need question_id and prediction")
    df["question_id"] = df.question_id.astype(str)
    df["prediction"] = [p[0] if isinstance(p, list) and p else p for p in df.prediction]
    return df


def build_real_scanqa(scanqa_json: str | os.PathLike, out: str | os.PathLike, *,
                      pairs: list[tuple[str, Any, Any]], judges: list[tuple[str, Any]] = (),
                      push_to_hub: str | None = None, license: str = "other"
                      ) -> dict[str, Any]:
    """ScanQA JSON + (full, blind) prediction pairs (+ text-only judges) -> a dataset folder
    with configs ``scanqa`` (all questions), ``real_scanqa`` (kept, default) and
    ``filtered_out`` (removed, with reasons). ``license``: the card's license identifier
    (default ``other``: ScanQA's own terms apply). Predictions are paths or tables
    (question_id, prediction[, log_prob])."""
    qs = read_scanqa(scanqa_json)
    require_answers(qs, "filtered")
    refs = qs[["question_id", "answers"]]
    result = filter_questions(refs, [(n, _predictions(f, f"pair {n!r} (full)"),
                                      _predictions(b, f"pair {n!r} (blind)"))
                                     for n, f, b in pairs],
                              [(n, _predictions(j, f"judge {n!r}")) for n, j in judges])
    info = result.table.set_index("question_id")
    kept = qs[info.kept.reindex(qs.question_id).to_numpy()]
    removed = qs[~info.kept.reindex(qs.question_id).to_numpy()]
    feats = _features()
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
        [ConfigData("scanqa", {"test": _rows(qs)}, feats, "all input ScanQA questions"),
         ConfigData("real_scanqa", {"test": _rows(kept)}, feats,
                    "questions no blind model or judge answers", default=True),
         ConfigData("filtered_out", {"test": _rows(
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
    summary = {"questions": len(qs), "kept": len(kept), "removed": len(removed),
               "filter_stats": result.stats(), "per_type": {r[0]: {"questions": r[1],
                                                                   "kept": r[2]}
                                                            for r in type_rows}}
    if push_to_hub:
        summary["url"] = push_folder(out, push_to_hub)
    return summary


def caption_metrics(predictions: Sequence[str], references: Sequence[Sequence[str]]
                    ) -> dict[str, float]:
    """BLEU-1..4, ROUGE-L, METEOR and CIDEr (x100) of answers against the reference lists,
    with pycocoevalcap's PTB tokenizer, as ScanQA's evaluation computes them."""
    try:
        # optional: pycocoevalcap (the [scanqa] extra) and a Java runtime
        from pycocoevalcap.bleu.bleu import Bleu
        from pycocoevalcap.cider.cider import Cider
        from pycocoevalcap.meteor.meteor import Meteor
        from pycocoevalcap.rouge.rouge import Rouge
        from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer
    except ImportError as err:
        raise ImportError("captioning metrics need pycocoevalcap: pip install "
                          "'hf-real3d[scanqa]' (and a Java runtime)") from err
    if len(predictions) != len(references):
        raise MetricInputError(f"Expected as many predictions as references but got "
                               f"{len(predictions)} and {len(references)}")
    if not predictions:
        return {k: 0.0 for k in CAPTION_METRICS}
    gts = {str(i): [{"caption": a} for a in refs] for i, refs in enumerate(references)}
    res = {str(i): [{"caption": p or ""}] for i, p in enumerate(predictions)}
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        tok = PTBTokenizer()
        gts, res = tok.tokenize(gts), tok.tokenize(res)
        bleu, _ = Bleu(4).compute_score(gts, res)
        rouge, _ = Rouge().compute_score(gts, res)
        cider, _ = Cider().compute_score(gts, res)
        meteor_scorer = Meteor()
        try:
            meteor, _ = meteor_scorer.compute_score(gts, res)
        finally:
            with contextlib.suppress(Exception):
                meteor_scorer.close()
    vals = [*bleu, rouge, meteor, cider]
    return {k: float(v) * 100 for k, v in zip(CAPTION_METRICS, vals)}


def score_real_scanqa(refs: pd.DataFrame, preds: pd.DataFrame, *, name: str = "model",
                      leo_compatible: bool = False, captions: bool = True) -> dict[str, Any]:
    """EM / refined EM (overall and per question type) and the captioning metrics of one
    model's predictions against ``refs`` (question_id, answers, question_type)."""
    require_answers(refs, "scored")
    p = preds.drop_duplicates()
    dup = p.question_id.duplicated()
    if dup.any():
        raise MetricInputError(f"{name}: question_id {p.question_id[dup].iloc[0]} has two "
                               "different predictions; keep one")
    p = p.set_index("question_id")
    missing = pd.Index(refs.question_id).difference(p.index)
    if len(missing):
        raise MetricInputError(f"{name}: predictions missing for {len(missing)} of "
                               f"{len(refs)} questions, e.g. question_id {missing[0]}")
    pred = p.prediction.reindex(refs.question_id).tolist()
    em, emr = answer_correctness(pred, refs.answers.tolist(), leo_compatible=leo_compatible)
    out: dict[str, Any] = {"model": name, "n": len(refs), "em": float(em.mean() * 100),
                           "em_refined": float(emr.mean() * 100)}
    types = refs.question_type.to_numpy()
    out["per_type"] = {t: {"n": int((types == t).sum()), "em": float(em[types == t].mean() * 100),
                           "em_refined": float(emr[types == t].mean() * 100)}
                       for t in sorted(set(types))}
    if captions:
        out.update(caption_metrics([str(x) for x in pred], refs.answers.tolist()))
    return out


def _load(dataset: str | os.PathLike, config: str) -> pd.DataFrame | None:
    folder = Path(dataset)
    if folder.is_file():  # a ScanQA JSON file
        return read_scanqa(folder) if config == "scanqa" else None
    if not (folder / config).is_dir():
        return None
    df = load_local(folder, config).to_pandas()
    df["answers"] = [list(a) for a in df.answers]
    df.attrs["has_answers"] = True
    return df


def evaluate_real_scanqa(dataset: str | os.PathLike, predictions: Sequence[str],
                         out: str | os.PathLike, *, leo_compatible: bool = False,
                         captions: bool = True) -> list[dict[str, Any]]:
    """``hf-real3d evaluate-real-scanqa``: each ``NAME=FILE`` scored on the ``scanqa`` and
    ``real_scanqa`` configs of a built folder (or a ScanQA JSON file); writes
    ``metrics.json`` and ``report.md`` under ``out`` once everything is scored."""
    check_unique_names(predictions)
    sets = {c: _load(dataset, c) for c in ("scanqa", "real_scanqa")}
    sets = {c: d for c, d in sets.items() if d is not None}
    if not sets:
        raise FileNotFoundError(f"{dataset}: neither a Real-ScanQA folder (scanqa/, "
                                "real_scanqa/) nor a ScanQA JSON file")
    results = []
    for spec in predictions:
        name, files = parse_prediction_spec(spec)
        name = name or Path(files[0]).stem
        preds = pd.concat([_predictions(f, name) for f in files], ignore_index=True)
        row: dict[str, Any] = {"model": name}
        for config, refs in sets.items():
            ids = set(refs.question_id)
            row[config] = score_real_scanqa(refs, preds[preds.question_id.isin(ids)],
                                            name=name, leo_compatible=leo_compatible,
                                            captions=captions)
        results.append(row)
    cols = ["em", "em_refined", *(CAPTION_METRICS if captions else ())]
    md = ["# Real-ScanQA evaluation", "", "ScanQA has no agent pose: no rotation, no VRS. EM / "
          "refined EM as for Real-3DQA" + (" (official matching)" if leo_compatible else "")
          + ("; captioning metrics (x100) from pycocoevalcap." if captions else "."), ""]
    for config in sets:
        md += [f"## {config} ({len(sets[config])} questions)", "",
               markdown_table(["model", *cols],
                              [[r["model"], *(f"{r[config][c]:.1f}" for c in cols)]
                               for r in results]), ""]
    with atomic_dir(out) as tmp:
        write_json(Path(tmp) / "metrics.json", results, indent=2)
        (Path(tmp) / "report.md").write_text("\n".join(md), encoding="utf-8")
    return results

