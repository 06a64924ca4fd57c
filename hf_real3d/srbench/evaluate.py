"""3DSRBench evaluation: vanilla, CircularEval, FlipEval and flip+circular accuracy per
group and category, with exact random / random++ baselines, always-A and a text-only
prior (Tables 2 and 4 of the paper)."""

from __future__ import annotations

import io
import os
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from PIL import Image
from tqdm.auto import tqdm

from hf_real3d._extras import require
from hf_real3d._io import FormatError, atomic_path, write_json
from hf_real3d.scoring import MetricInputError, check_circular_groups, factorize, first_rows
from hf_real3d.specs import check_unique_names
from hf_real3d.srbench.build import load_rows
from hf_real3d.srbench.format import CATEGORIES, GROUPS
from hf_real3d.srbench.predictions import SRBenchAnswers, read_srbench_answers
from hf_real3d.srbench.report import srbench_table, srbench_viewpoint_table
from hf_real3d.srbench.rules import (
    DEFAULT_RULE,
    authors_random,
    check_qids,
    check_rule,
    official_figures,
    rule_hits,
    setting_codes,
    setting_keys,
    settings_table,
)
from hf_real3d.tables import markdown_table

__all__ = ["score_rows", "score_answers", "rows_of", "baselines", "official_table", "prompt_for",
           "model_predictions", "evaluate_dataset"]


def _row_options(r: dict[str, Any]) -> list[str]:
    return [str(o) for o in r["options"]]


def score_rows(rows: Sequence[dict[str, Any]], predictions: Sequence[str | None] | None = None,
               *, rule: str = DEFAULT_RULE, hits: Sequence[float] | None = None
               ) -> dict[str, Any]:
    """Vanilla, circular, flip and flip+circular accuracy (%) under ``rule`` (see
    :mod:`hf_real3d.srbench.rules`), overall / per group / per category, the number of
    answers the rule's extraction could not read, and ``official``: the figures as the
    rule's scorer prints them. ``hits`` (0/1 per row) takes a scorer's hits as given
    (VLMEvalKit's result table, lmms-eval's samples) instead of reading ``predictions``."""
    check_rule(rule)
    qids = [str(r["qid"]) for r in rows]
    cats = [str(r["category"]) for r in rows]
    check_qids(qids, cats, where="3DSRBench")
    if rows and "options" in rows[0]:  # the rule the circular_eval module applies
        codes, keys = factorize(setting_keys(qids)["circular"])
        check_circular_groups(codes, keys, [_row_options(r) for r in rows])
    unparsed = 0
    if hits is None:
        if predictions is None:
            raise MetricInputError("Expected predictions or hits")
        bare = next((i for i, r in enumerate(rows) if not r.get("options")), None)
        if rule != "lmms_eval" and bare is not None:
            raise MetricInputError(
                f"row {bare} (qid {qids[bare]}) has no options, and rule {rule!r} reads option "
                "texts; give `dataset` (lmms-eval's samples do not carry the options) or use "
                "`rule` lmms_eval")
        hits, unparsed = rule_hits(rule, list(predictions), [r["answer"] for r in rows],
                                   [_row_options(r) for r in rows])
    elif len(hits) != len(rows):
        raise MetricInputError(f"Expected one hit per row ({len(rows)}) but got {len(hits)}")
    l2 = [str(r["l2-category"]) for r in rows] if rows and "l2-category" in rows[0] else None
    out: dict[str, Any] = {"n": len(rows), "rule": rule, "unparsed": int(unparsed),
                           "categories": sorted(set(cats))}
    out.update(settings_table(qids, hits, cats))
    out["official"] = official_figures(rule, qids, hits, cats, l2)
    return out


def _chance(rows: Sequence[dict[str, Any]], consistent: bool) -> dict[str, dict[str, Any]]:
    """Expected accuracy (%) per setting of uniform guessing: ``random`` guesses afresh per
    row; ``random++`` keeps one guess per question across its circular orders."""
    codes_of = setting_codes([r["qid"] for r in rows])
    logp = -np.log(np.array([len(r["options"]) for r in rows], dtype=float))
    cats = np.array([r["category"] for r in rows], dtype=object)
    question = codes_of["circular"]  # one question: an image and its text, in any order
    out: dict[str, dict[str, Any]] = {}
    for name, codes in codes_of.items():
        n = int(codes.max()) + 1 if len(codes) else 0
        if consistent:  # count each (group, question) once
            keep = ~pd.Series(codes * (int(question.max()) + 1) + question).duplicated().to_numpy()
        else:
            keep = np.ones(len(rows), bool)
        p = np.exp(np.bincount(codes[keep], weights=logp[keep], minlength=n)) * 100
        gcat = cats[first_rows(codes, n)]
        grp = np.array([CATEGORIES[c] for c in gcat], dtype=object)
        out[name] = {"overall": float(p.mean()), "per_group": {
            g: float(p[grp == g].mean()) for g in GROUPS if (grp == g).any()}}
    return out


def baselines(rows: Sequence[dict[str, Any]], prior_rows: Sequence[dict[str, Any]] = (), *,
              rule: str = DEFAULT_RULE) -> dict[str, dict[str, Any]]:
    """random / random++ (exact expectations, from option counts), the authors' random
    (one seeded draw of their per-row guess, CircularEval only), always-A, and a text-only
    prior (the most frequent answer text per category in ``prior_rows``)."""
    qids = [str(r["qid"]) for r in rows]
    cats = [str(r["category"]) for r in rows]
    check_qids(qids, cats, where="3DSRBench")
    out: dict[str, dict[str, Any]] = {}
    for name, consistent in (("random", False), ("random++", True)):
        out[name] = {"n": len(rows), **_chance(rows, consistent)}
    drawn = authors_random(qids, [len(r["options"]) for r in rows], cats)
    out["random (authors' draw)"] = {
        "n": len(rows), "rule": "authors", "circular": {"overall": drawn["overall"],
                                     "per_group": {g: drawn[g] for g in GROUPS}},
        "official": drawn}
    out["always-A"] = score_rows(rows, ["A"] * len(rows), rule=rule)
    if prior_rows:
        prior: dict[str, Counter] = {}
        for r in prior_rows:
            if not r["flipped"] and not r["shift"]:
                prior.setdefault(r["category"], Counter())[
                    r["options"]["ABCD".index(r["answer"])]] += 1
        preds = []
        for r in rows:
            best = prior.get(r["category"], Counter()).most_common()
            text = next((t for t, _ in best if t in r["options"]), None)
            preds.append("ABCD"[r["options"].index(text)] if text else "A")
        out["text-only prior"] = score_rows(rows, preds, rule=rule)
    return out


def prompt_for(row: dict[str, Any]) -> str:
    """VLMEvalKit-style multiple-choice prompt."""
    opts = "\n".join(f"{k}. {o}" for k, o in zip("ABCD", row["options"]))
    return (f"Question: {row['question']}\nOptions:\n{opts}\n"
            "Answer with the option's letter from the given choices directly.")


def model_predictions(rows: Sequence[dict[str, Any]], model: str | Callable, *,
                      max_new_tokens: int = 8, progress: bool = True) -> list[str]:
    """Answers of a local image-text-to-text model (a folder path, loaded with the
    ``image-text-to-text`` pipeline) or of a callable ``(PIL image, prompt) -> str``."""
    if isinstance(model, str | os.PathLike):
        require("torch", "transformers", what="answering with a local model (--model)")
        # transformers' pipelines import the whole model stack (the [train] extra): only when
        # a model is asked for
        from transformers import pipeline

        pipe = pipeline("image-text-to-text", model=str(model))

        def model(image, prompt):  # noqa: F811 - the loaded pipeline as a callable
            msgs = [{"role": "user", "content": [{"type": "image", "image": image},
                                                 {"type": "text", "text": prompt}]}]
            out = pipe(text=msgs, max_new_tokens=max_new_tokens, return_full_text=False)
            return out[0]["generated_text"]

    preds = []
    for r in tqdm(rows, desc="3DSRBench answers", disable=not progress):
        img = r["image"]
        if isinstance(img, dict):
            img = Image.open(io.BytesIO(img["bytes"]))
        preds.append(str(model(img, prompt_for(r))))
    return preds


def _given_hits(answers: SRBenchAnswers, rule: str) -> bool:
    """Whether a file's hits are the rule's own (taken as given, as that scorer would)."""
    mine = {"vlmevalkit": ("vlmevalkit", "authors"), "lmms_eval": ("lmms_eval",)}
    return rule in mine.get(answers.kind, ()) and bool(answers.table.hit.notna().all())


def rows_of(answers: SRBenchAnswers) -> list[dict[str, Any]]:
    """The items a VLMEvalKit table or lmms-eval samples file carries, as rows
    :func:`score_rows` takes (options kept at their letters; none when the file has none)."""
    if not answers.has_items():
        raise FormatError(f"{answers.name}: its file carries no items (answer, category); give "
                          "`dataset` to score it")
    t = answers.table
    letters = [k for k in "ABCD" if k in t.columns]
    rows = []
    for i, r in enumerate(t.to_dict("records")):
        opts = [r[k] for k in letters]
        while opts and not opts[-1]:
            opts.pop()
        rows.append({"qid": r["qid"], "question": r.get("question", ""), "options": opts,
                     "answer": r["answer"], "category": r["category"],
                     **({"l2-category": r["l2-category"]} if "l2-category" in t else {})})
        if r["category"] not in CATEGORIES:
            raise FormatError(f"{answers.name} row {i} (qid {r['qid']}): category "
                              f"{r['category']!r} is not one of the 12 3DSRBench categories")
    return rows


def score_answers(rows: Sequence[dict[str, Any]], answers: SRBenchAnswers, config: str | None,
                  rule: str = DEFAULT_RULE) -> dict[str, Any]:
    """One model's file scored on ``rows`` (matched by qid; rows of ``config`` first)."""
    table = answers.table
    index = {(c, q): i for i, (c, q) in enumerate(zip(table.config, table.qid))}
    at = [index.get((config, r["qid"]), index.get((None, r["qid"]))) for r in rows]
    missing = [r["qid"] for r, i in zip(rows, at) if i is None]
    if missing:
        raise ValueError(f"{answers.name}: no prediction for {len(missing)} {config or ''} rows, "
                         f"e.g. qid {missing[0]}")
    if _given_hits(answers, rule):
        return score_rows(rows, rule=rule, hits=table.hit.to_numpy()[at])
    preds = table.prediction.to_numpy(dtype=object)[at]
    return score_rows(rows, [p if p is not None else "" for p in preds], rule=rule)


def _present(column: str, categories: Sequence[str]) -> bool:
    """Whether a scorer's column (a category, a group, ``<...>_accuracy``) has items."""
    name = column.removesuffix("_accuracy")
    if name in CATEGORIES:
        return name in categories
    if name in GROUPS:
        return any(c in categories for c in GROUPS[name])
    return True  # overall figures


def official_table(results: dict[str, dict[str, Any]], rule: str) -> str:
    """The figures as the rule's scorer prints them, one row per model (VLMEvalKit: one row
    per model and setting), in its units (VLMEvalKit and lmms-eval: fractions, 4 decimals;
    the authors: %, one decimal). A category or group with no items shows ``-``."""
    rows, header = [], None
    for name, res in results.items():
        off = res.get("official")
        if not off or res.get("rule") != rule:
            continue
        cats = res.get("categories", CATEGORIES)
        if rule == "vlmevalkit":
            for setting, vals in off.items():
                header = header or ["Model", "setting", *vals]
                rows.append([name, setting, *[vals.get(k) if _present(k, cats) else None
                                              for k in header[2:]]])
        else:
            header = header or ["Model", *off]
            rows.append([name, *[off.get(k) if _present(k, cats) else None
                                 for k in header[1:]]])
    return markdown_table(header, rows, digits=1 if rule == "authors" else 4) if rows else ""


def unread_lines(results: dict[str, dict[str, Any]], rule: str) -> list[str]:
    """One line per model whose answers the rule's extraction could not all read."""
    return [f"- {name}: {r['unparsed']} of {r['n']} answers could not be read under rule "
            f"`{rule}` and count as wrong." for name, r in results.items()
            if r.get("unparsed")]


def evaluate_dataset(
    dataset: str | os.PathLike | None,
    out: str | os.PathLike,
    *,
    configs: Sequence[str] = ("synthetic_common", "synthetic_uncommon"),
    predictions: Sequence[str] = (),
    models: Sequence[str] = (),
    prior_rows: Sequence[dict[str, Any]] = (),
    rule: str = DEFAULT_RULE,
    text_only: Callable[[list[dict[str, Any]]], list[str]] | None = None,
    text_only_name: str = "text-only (stress test)",
) -> str:
    """``hf-real3d evaluate-3dsrbench``: baselines plus every model (``NAME=FILE``
    predictions, ``NAME=PATH`` local models) on each config, under ``rule``; writes
    ``metrics.json`` and ``report.md`` under ``out`` once everything is scored, and returns
    the Markdown. Without ``dataset``, each predictions file is scored on the items it
    carries (VLMEvalKit's tables, lmms-eval's samples), under the config name ``file``.

    ``text_only``: rows -> one option letter per row, the text-only baseline computed on
    the scored set itself (``hf-real3d evaluate-3dsrbench`` passes the stress test's
    held-out answers, :func:`hf_real3d.debias.baseline.text_only_answers`), reported as
    ``text_only_name``; a set it cannot handle (a ValueError) gets a note instead.
    ``prior_rows``: the demo's synthetic prior (other rooms' most frequent answers)."""
    check_rule(rule)
    check_unique_names([*predictions, *models], "--predictions / --model")
    answers = [read_srbench_answers(spec) for spec in predictions]
    if dataset is None and (models or not answers):
        raise ValueError("Give `dataset` (a folder built by build-3dsrbench), or `predictions` "
                         "files that carry their items (VLMEvalKit tables, lmms-eval samples)")
    results: dict[str, Any] = {}
    notes: list[str] = []
    md = ["# 3DSRBench evaluation", "",
          f"Rule: `{rule}` (see `hf_real3d.srbench.rules`): CircularEval counts the mirrored "
          "images as circular groups of their own; FlipEval pairs each option order with its "
          "mirror; vanilla is the mean over every row.", "",
          "Legend: **vanilla** = accuracy over every row; **circular** = a question counts "
          "when every circular order of its options is answered right; **flip** = the "
          "original and its mirrored image both right; **flip_circular** = every order of "
          "both. The first tables are percentages; the rule's own table uses its scorer's "
          "units. `-`: no items.", ""]
    for config in (configs if dataset is not None else ["file"]):
        if dataset is not None:
            rows = load_rows(dataset, config)
            res = dict(baselines(rows, prior_rows, rule=rule))
            if text_only is not None:
                try:
                    res[text_only_name] = score_rows(rows, text_only(rows), rule=rule)
                except ValueError as err:
                    notes.append(f"{config}: no {text_only_name} row: {err}")
            for a in answers:
                res[a.name] = score_answers(rows, a, config, rule)
            for spec in models:
                name, _, path = spec.partition("=")
                res[name] = score_rows(rows, model_predictions(rows, path), rule=rule)
        else:
            res = _file_results(answers, rule)
        results[config] = res
        md += _config_section(config, res, rule)
    if "synthetic_common" in results and "synthetic_uncommon" in results:
        md += ["## Common vs uncommon viewpoints (Table 4 shape)", "",
               srbench_viewpoint_table(results["synthetic_common"],
                                       results["synthetic_uncommon"]), ""]
    if notes:
        md += ["## Notes", "", *(f"- {n}" for n in notes), ""]
    out = Path(out)
    write_json(out / "metrics.json", {"rule": rule, **results}, indent=2)
    with atomic_path(out / "report.md") as tmp:
        tmp.write_text("\n".join(md) + "\n")
    return "\n".join(md)


def _file_results(answers: Sequence[SRBenchAnswers], rule: str) -> dict[str, Any]:
    """Each predictions file scored on the items it carries, with the baselines of the
    first file whose rows all have options."""
    res: dict[str, Any] = {}
    for a in answers:
        own = rows_of(a)
        if not res and all(r["options"] for r in own):
            res.update(baselines(own, rule=rule))
        res[a.name] = score_answers(own, a, None, rule)
    return res


def _config_section(config: str, res: dict[str, Any], rule: str) -> list[str]:
    """The report's tables of one config: each metric, the rule's own table, unread answers."""
    md = [f"## {config} (CircularEval, Table 2 shape)", "", srbench_table(res), "",
          f"## {config}: vanilla / circular / flip / flip+circular", ""]
    for metric in ("vanilla", "flip", "flip_circular"):
        md += [f"### {metric}", "", srbench_table(res, metric), ""]
    md += [f"### {config}: as `{rule}` prints it", "", official_table(res, rule), ""]
    unread = unread_lines(res, rule)
    md += (["Answers the rule could not read:", "", *unread, ""] if unread else
           [f"Every answer was read under rule `{rule}`.", ""])
    return md
