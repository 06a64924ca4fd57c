"""Scoring Real-ScanQA: EM / refined EM (the Real-3DQA rules) and ScanQA's captioning
metrics, for ``hf-real3d evaluate-real-scanqa``."""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from hf_real3d.hub import load_frame
from hf_real3d.real_scanqa.format import CAPTION_METRICS
from hf_real3d.real_scanqa.predictions import read_predictions
from hf_real3d.real_scanqa.report import write_report
from hf_real3d.scanqa import read_scanqa, require_answers
from hf_real3d.scoring import MetricInputError, answer_correctness
from hf_real3d.specs import check_unique_names, parse_prediction_spec

__all__ = ["caption_metrics", "score_real_scanqa", "evaluate_real_scanqa"]


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
        meteor = _meteor_score(Meteor, gts, res)
    vals = [*bleu, rouge, meteor, cider]
    return {k: float(v) * 100 for k, v in zip(CAPTION_METRICS, vals)}


_METEOR: list = []  # the one METEOR process of this Python process, once started


def _meteor_score(meteor_class, gts, res) -> float:
    """METEOR through one Java process kept for the whole run: its first score loads the
    paraphrase tables, which every later call then reuses. A process that died, or a score
    that failed midway (its lock may still be held), is replaced."""
    if not _METEOR or _METEOR[0].meteor_p.poll() is not None:
        _METEOR[:] = [meteor_class()]
    try:
        return _METEOR[0].compute_score(gts, res)[0]
    except BaseException:
        stale = _METEOR.pop()
        with contextlib.suppress(Exception):
            stale.meteor_p.kill()
        raise


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
    df = load_frame(folder, config)
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
        preds = pd.concat([read_predictions(f, name) for f in files], ignore_index=True)
        row: dict[str, Any] = {"model": name}
        for config, refs in sets.items():
            ids = set(refs.question_id)
            row[config] = score_real_scanqa(refs, preds[preds.question_id.isin(ids)],
                                            name=name, leo_compatible=leo_compatible,
                                            captions=captions)
        results.append(row)
    write_report(out, results, sets, leo_compatible=leo_compatible, captions=captions)
    return results
