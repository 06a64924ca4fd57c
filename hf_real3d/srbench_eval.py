"""3DSRBench as a dataset folder, and its evaluation with baselines (Tables 2 and 4 shape)."""

from __future__ import annotations

import io
import json
import os
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hf_real3d.choices import choice_correctness
from hf_real3d.report import markdown_table
from hf_real3d.scoring import chance_accuracy, group_all_correct
from hf_real3d.srbench import GROUPS, circular_expand, flip_expand, rows_to_dataset

__all__ = ["expand", "build_srbench", "load_rows", "score_rows", "baselines", "prompt_for",
           "model_predictions", "table2", "table4"]

CITATION = """@article{ma20243dsrbench,
  title={3DSRBench: A Comprehensive 3D Spatial Reasoning Benchmark},
  author={Ma, Wufei and others},
  journal={arXiv preprint arXiv:2412.07825},
  year={2024}
}"""


def expand(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """FlipEval copies of every question, then every circular shift of both."""
    return circular_expand(flip_expand(rows))


def build_srbench(out: str | os.PathLike, *, tsv: str | None = None, synthetic=None,
                  export_tsv: bool = False, push_to_hub: str | None = None) -> dict[str, Any]:
    """Folder with configs ``real`` (from an official TSV), ``synthetic_common`` and
    ``synthetic_uncommon`` (from :func:`generate_srbench` output, expanded)."""
    from hf_real3d.hub import ConfigData, push_folder, write_dataset_folder
    from hf_real3d.srbench import read_tsv, write_tsv

    configs, counts = [], {}
    if tsv:
        real = read_tsv(tsv)
        data, feats = rows_to_dataset(real)
        configs.append(ConfigData("real", {"test": data}, feats, "official 3DSRBench rows",
                                  default=True, rows_per_shard=2000))
        counts["real"] = len(real)
    expanded = {}
    if synthetic:
        for name in ("synthetic_common", "synthetic_uncommon"):
            expanded[name] = expand(synthetic[name])
            data, feats = rows_to_dataset(expanded[name])
            configs.append(ConfigData(name, {"test": data}, feats,
                                      f"renders from {name.split('_')[1]} viewpoints, expanded "
                                      "with circular shifts and flips", default=not configs,
                                      rows_per_shard=2000))
            counts[name] = len(expanded[name])
    if not configs:
        raise ValueError("Expected an official TSV, synthetic rows, or both")
    stats = synthetic.get("stats", {}) if synthetic else {}
    section = ("## Columns\n\n`options` (A..D), `answer` (letter), `category` (12) and `group` "
               "(4), `circular_group` (rows that are circular shifts of one question), "
               "`flip_group` (original and flipped, all shifts), `shift`, `flipped`, "
               "`pair_id` (the same question in synthetic_common and synthetic_uncommon), "
               "`camera` (JSON: pose and measured roll/pitch/height).\n\n"
               f"Synthetic generation: {json.dumps(stats)}")
    write_dataset_folder(out, configs, pretty_name="3DSRBench (hf_real3d)",
                         summary="3D spatial reasoning VQA: height, location, orientation and "
                                 "multi-object questions, scored with CircularEval and FlipEval.",
                         license="cc-by-4.0", citation=CITATION, extra_sections=[section],
                         tags=("3d", "visual-question-answering", "spatial-reasoning"))
    if export_tsv:
        for name, rows in expanded.items():
            write_tsv(rows, Path(out) / "tsv" / f"{name}.tsv")
    summary = {"counts": counts}
    if push_to_hub:
        summary["url"] = push_folder(out, push_to_hub)
    return summary


def load_rows(folder: str | os.PathLike, config: str) -> list[dict[str, Any]]:
    """Rows of one config of a built folder (images as PIL)."""
    from hf_real3d.hub import load_local

    return list(load_local(folder, config))


def score_rows(rows: Sequence[dict[str, Any]], predictions: Sequence[str]) -> dict[str, Any]:
    """Vanilla, circular, flip and flip+circular accuracy (%), overall / per group / per
    category, and the number of unparsed answers."""
    correct, unparsed = choice_correctness(list(predictions), [r["answer"] for r in rows],
                                           [r["options"] for r in rows])
    ok = np.array(correct, dtype=bool)
    shift = np.array([int(r["shift"]) for r in rows])
    flipped = np.array([bool(r["flipped"]) for r in rows])
    cat = np.array([r["category"] for r in rows], dtype=object)
    circ = np.array([r["circular_group"] for r in rows], dtype=object)
    flipg = np.array([r["flip_group"] for r in rows], dtype=object)

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
        group_of = np.array([_group(c) for c in cats], dtype=object)
        out[name] = {
            "overall": float(vals.mean() * 100),
            "per_group": {g: float(vals[group_of == g].mean() * 100) for g in GROUPS
                          if (group_of == g).any()},
            "per_category": {c: float(vals[cats == c].mean() * 100)
                             for c in sorted(set(cats.tolist()))},
        }
    return out


def _group(category: str) -> str:
    from hf_real3d.srbench import CATEGORIES

    return CATEGORIES[category]


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
        out[name] = {}
        for metric, k in passes.items():
            def acc(ns, k=k, consistent=consistent):
                return chance_accuracy(ns, passes=[k(n) for n in ns], consistent=consistent)

            ns_all = [v["n"] for v in groups.values()]
            out[name][metric] = {"overall": acc(ns_all), "per_group": {
                g: acc([v["n"] for v in groups.values() if _group(v["cat"]) == g])
                for g in GROUPS if any(_group(v["cat"]) == g for v in groups.values())}}
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
    from PIL import Image
    from tqdm.auto import tqdm

    if isinstance(model, str | os.PathLike):
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


def table2(results: dict[str, dict[str, Any]], metric: str = "circular") -> str:
    """Rows = models and baselines; columns = overall and the 4 groups (``metric``)."""
    header = ["Model", "Overall", "Height", "Location", "Orientation", "Multi-Object"]
    rows = []
    for name, r in results.items():
        m = r.get(metric, {})
        rows.append([name, m.get("overall")] + [m.get("per_group", {}).get(g)
                                                for g in ("height", "location", "orientation",
                                                          "multi_object")])
    return markdown_table(header, rows)


def table4(common: dict[str, dict], uncommon: dict[str, dict], metric: str = "circular") -> str:
    """Common vs uncommon viewpoints per model: overall and per group, with the drop."""
    header = ["Model", "Viewpoint", "Overall", "Height", "Location", "Orientation",
              "Multi-Object"]
    rows = []
    for name in common:
        for view, res in (("common", common[name]), ("uncommon", uncommon.get(name, {}))):
            m = res.get(metric, {})
            rows.append([name, view, m.get("overall")] + [
                m.get("per_group", {}).get(g) for g in ("height", "location", "orientation",
                                                        "multi_object")])
    return markdown_table(header, rows)
