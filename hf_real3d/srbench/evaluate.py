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
from PIL import Image
from tqdm.auto import tqdm

from hf_real3d._io import atomic_path, write_json
from hf_real3d.choices import choice_correctness
from hf_real3d.predictions import check_unique_names, load_srbench_predictions
from hf_real3d.report import srbench_table, srbench_viewpoint_table
from hf_real3d.scoring import (
    MetricInputError,
    chance_accuracy,
    check_circular_groups,
    check_flip_groups,
    factorize,
    group_all_correct,
)
from hf_real3d.srbench.build import load_rows
from hf_real3d.srbench.format import CATEGORIES, GROUPS

__all__ = ["score_rows", "baselines", "prompt_for", "model_predictions", "evaluate_dataset"]


def score_rows(rows: Sequence[dict[str, Any]], predictions: Sequence[str]) -> dict[str, Any]:
    """Vanilla, circular, flip and flip+circular accuracy (%), overall / per group / per
    category, and the number of unparsed answers."""
    if len(predictions) != len(rows):
        raise MetricInputError(f"Expected one prediction per row ({len(rows)}) but got "
                               f"{len(predictions)}")
    correct, unparsed = choice_correctness(list(predictions), [r["answer"] for r in rows],
                                           [r["options"] for r in rows])
    ok = np.array(correct, dtype=bool)
    shift = np.array([int(r["shift"]) for r in rows])
    flipped = np.array([bool(r["flipped"]) for r in rows])
    cat = np.array([r["category"] for r in rows], dtype=object)
    circ = np.array([r["circular_group"] for r in rows], dtype=object)
    flipg = np.array([r["flip_group"] for r in rows], dtype=object)

    # the rules the circular_eval / flip_eval modules apply, on the same rows
    codes, keys = factorize(circ)
    check_circular_groups(codes, keys, [r["options"] for r in rows])
    if flipped.any():
        check_flip_groups(*factorize(flipg[shift == 0]), flipped[shift == 0])
        check_flip_groups(*factorize(flipg), flipped, circular=True)

    def grouped(mask, groups):
        if not mask.any():
            return None, None
        allok, keys = group_all_correct(ok[mask], groups[mask])
        first = {}
        for g, c in zip(groups[mask], cat[mask]):
            first.setdefault(g, c)
        return allok, np.array([first[k] for k in keys], dtype=object)

    variants = {
        "vanilla": (ok[(shift == 0) & ~flipped], cat[(shift == 0) & ~flipped]),
        "circular": grouped(~flipped, circ),
        "flip": grouped(shift == 0, flipg) if flipped.any() else (None, None),
        "flip_circular": grouped(np.ones(len(rows), bool), flipg) if flipped.any()
        else (None, None),
    }
    out: dict[str, Any] = {"n": len(rows), "unparsed": unparsed}
    for name, (vals, cats) in variants.items():
        if vals is None or len(vals) == 0:
            continue
        group_of = np.array([CATEGORIES[c] for c in cats], dtype=object)
        out[name] = {
            "overall": float(vals.mean() * 100),
            "per_group": {g: float(vals[group_of == g].mean() * 100) for g in GROUPS
                          if (group_of == g).any()},
            "per_category": {c: float(vals[cats == c].mean() * 100)
                             for c in sorted(set(cats.tolist()))},
        }
    return out


def baselines(rows: Sequence[dict[str, Any]], prior_rows: Sequence[dict[str, Any]] = ()
              ) -> dict[str, dict[str, Any]]:
    """random / random++ (exact, from option counts), always-A, and a text-only prior
    (the most frequent answer text per category in ``prior_rows``)."""
    groups: dict[str, dict[str, int]] = {}
    for r in rows:
        if not r["flipped"]:
            groups.setdefault(r["circular_group"], {"n": len(r["options"]),
                                                    "cat": r["category"]})
    out: dict[str, dict[str, Any]] = {}
    # passes per group for each metric (n = option count): vanilla 1, circular n,
    # flip 2 (original + flipped), flip+circular 2n
    passes = {"vanilla": lambda n: 1, "circular": lambda n: n, "flip": lambda n: 2,
              "flip_circular": lambda n: 2 * n}
    for name, consistent in (("random", False), ("random++", True)):
        out[name] = {"n": len(rows)}
        for metric, k in passes.items():
            def acc(ns, k=k, consistent=consistent):
                return chance_accuracy(ns, passes=[k(n) for n in ns], consistent=consistent)

            ns_all = [v["n"] for v in groups.values()]
            out[name][metric] = {"overall": acc(ns_all), "per_group": {
                g: acc([v["n"] for v in groups.values() if CATEGORIES[v["cat"]] == g])
                for g in GROUPS if any(CATEGORIES[v["cat"]] == g for v in groups.values())}}
    out["always-A"] = score_rows(rows, ["A"] * len(rows))
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
        out["text-only prior"] = score_rows(rows, preds)
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
        # transformers' pipelines import the whole model stack: only when a model is asked for
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


def evaluate_dataset(
    dataset: str | os.PathLike,
    out: str | os.PathLike,
    *,
    configs: Sequence[str] = ("synthetic_common", "synthetic_uncommon"),
    predictions: Sequence[str] = (),
    models: Sequence[str] = (),
    prior_rows: Sequence[dict[str, Any]] = (),
) -> str:
    """``hf-real3d evaluate-3dsrbench``: baselines plus every model (``NAME=FILE``
    predictions, ``NAME=PATH`` local models) on each config; writes ``metrics.json`` and
    ``report.md`` under ``out`` once everything is scored, and returns the Markdown."""
    check_unique_names([*predictions, *models], "--predictions / --model")
    preds = [load_srbench_predictions(spec) for spec in predictions]
    results: dict[str, Any] = {}
    md = ["# 3DSRBench evaluation", ""]
    for config in configs:
        rows = load_rows(dataset, config)
        res = dict(baselines(rows, prior_rows))
        for name, table in preds:
            missing = [r["qid"] for r in rows if (config, r["qid"]) not in table
                       and (None, r["qid"]) not in table]
            if missing:
                raise ValueError(f"{name}: no prediction for {len(missing)} {config} rows, e.g. "
                                 f"qid {missing[0]}")
            res[name] = score_rows(rows, [table.get((config, r["qid"]),
                                                    table.get((None, r["qid"]))) for r in rows])
        for spec in models:
            name, _, path = spec.partition("=")
            res[name] = score_rows(rows, model_predictions(rows, path))
        results[config] = res
        md += [f"## {config} (CircularEval, Table 2 shape)", "", srbench_table(res), "",
               f"## {config}: vanilla / circular / flip / flip+circular", ""]
        for metric in ("vanilla", "flip", "flip_circular"):
            md += [f"### {metric}", "", srbench_table(res, metric), ""]
    if "synthetic_common" in results and "synthetic_uncommon" in results:
        md += ["## Common vs uncommon viewpoints (Table 4 shape)", "",
               srbench_viewpoint_table(results["synthetic_common"],
                                       results["synthetic_uncommon"]), ""]
    out = Path(out)
    write_json(out / "metrics.json", results, indent=2)
    with atomic_path(out / "report.md") as tmp:
        tmp.write_text("\n".join(md) + "\n")
    return "\n".join(md)
