"""``hf-real3d stress-test``: TsT (and IBP with ``prune``) on a dataset, with its outputs.

Writes under ``out``: ``stress_test.json`` (percent; see :func:`run_stress_test`),
``scores.jsonl`` (each item's s(x), held-out prediction and whether it was right),
``stress_test.png`` and ``report.md``. A dataset folder this library built also gets the
scores as its config ``stress_test`` and, with ``prune``, the kept items as
``<config>_tst`` (for Real-3DQA also ``rotations_tst``: the rotation groups of the kept
questions) with a card section on what was removed.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from hf_real3d._extras import require
from hf_real3d._io import atomic_dir, atomic_path, write_json
from hf_real3d.debias.config import StressTestConfig
from hf_real3d.debias.items import Items, load_items
from hf_real3d.debias.stress import StressResult, check_items, prune, stress_test
from hf_real3d.sources import DatasetFolder, Source, SRBenchTSV, resolve
from hf_real3d.tables import markdown_table

__all__ = ["run_stress_test", "exclude_ids", "summary_table"]


def exclude_ids(items: Items, other: str | os.PathLike, config: str | None = None) -> Items:
    """``items`` without the ids that ``other`` (a dataset ``load_items`` reads) holds: the
    questions a filter removed are the full set without the kept ones."""
    drop = set(load_items(other, config=config).ids)
    keep = [i for i, q in enumerate(items.ids) if q not in drop]
    if not keep:
        raise ValueError(f"{other}: holds every item of {items.source}; nothing is left")
    out = items.subset(keep)
    out.source = f"{items.source} without {other}"
    return out


def summary_table(named: dict[str, dict[str, Any]]) -> str:
    """One row per stress-tested set (``{name: stress_test.json}``): n, solvability with its
    interval, the majority and chance baselines, and after pruning what was kept."""
    rows = []
    for name, s in named.items():
        sv, fin = s["solvability"], s.get("final") or {}
        rows.append([name, s["n"], f"{sv['overall']:.1f} [{sv['ci'][0]:.1f}, {sv['ci'][1]:.1f}]",
                     s["majority"], s["chance"], fin.get("kept"),
                     f"{fin['solvability']:.1f} ({fin['majority']:.1f})" if fin else None])
    return markdown_table(["set", "n", "TsT solvability [95% CI]", "majority answer", "chance",
                           "kept by IBP", "TsT after IBP (majority)"], rows)


def _plot(summary: dict[str, Any], rounds: list[dict[str, Any]] | None, path: Path) -> None:
    # matplotlib (~0.5 s) only when a plot is drawn
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after the backend is chosen

    per = summary["solvability"]["per_type"]
    types = sorted(per, key=lambda t: -per[t]["n"])
    fig, axes = plt.subplots(1, 2 if rounds else 1, figsize=(11 if rounds else 7, 4),
                             squeeze=False)
    ax = axes[0][0]
    x = np.arange(len(types))
    ax.bar(x, [per[t]["solvability"] for t in types], color="#c0504d", label="text-only (TsT)")
    ax.scatter(x, [per[t]["majority"] for t in types], color="k", marker="_", s=300,
               label="majority answer", zorder=3)
    ax.scatter(x, [per[t]["chance"] for t in types], color="#4f81bd", marker="_", s=300,
               label="chance", zorder=3)
    ax.set_xticks(x, [f"{t}\n(n={per[t]['n']})" for t in types], rotation=45, ha="right",
                  fontsize=7)
    ax.set_ylabel("held-out accuracy (%)")
    ax.set_title(f"non-visual solvability {summary['solvability']['overall']:.1f}% "
                 f"({summary['diagnostic']}, {summary['folds']} folds)", fontsize=9)
    ax.legend(fontsize=7)
    if rounds:
        ax = axes[0][1]
        ax.plot([r["kept"] for r in rounds], [r["solvability"] for r in rounds], "o-",
                color="#c0504d", label="text-only (TsT)")
        ax.plot([r["kept"] for r in rounds], [r["majority"] for r in rounds], "s--", color="k",
                label="majority answer")
        ax.invert_xaxis()
        ax.set_xlabel("items kept")
        ax.set_ylabel("held-out accuracy (%)")
        ax.set_title("iterative bias pruning", fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)


def _local(path: Path) -> Source | None:
    """What a local input is (:func:`hf_real3d.sources.resolve`); None for a Hub name."""
    return resolve(path) if path.exists() else None


def _write_kept(src: Path, items: Items, keep: list[int], dest: Path, *, split: str,
                config: str | None) -> str | None:
    """The kept items in the input's own form: a ``save_to_disk`` folder (also for a Hub
    dataset), SQA3D files or a 3DSRBench TSV; None for a folder this library built, which
    gets a ``<config>_tst`` config instead."""
    # the datasets stack only when pruning writes what it kept
    import datasets

    kept = sorted(keep)
    if items.kind == "columns":
        if src.exists():  # a folder saved with save_to_disk (load_items resolved it)
            ds = datasets.load_from_disk(str(src))
        else:
            ds = datasets.load_dataset(str(src), config, split=split)
        whole = isinstance(ds, datasets.DatasetDict)
        part = (ds[split] if whole else ds).select(kept)
        with atomic_dir(dest) as tmp:
            (datasets.DatasetDict({split: part}) if whole else part).save_to_disk(str(tmp))
        return str(dest)
    if items.kind == "sqa3d":
        from hf_real3d.sqa3d import split_paths  # each format's reader for its kind of input

        keep_ids = {items.ids[i] for i in kept}
        with atomic_dir(dest) as tmp:
            for path in split_paths(src, split):
                data = json.loads(path.read_text())
                key = "questions" if "questions" in data else "annotations"
                data[key] = [x for x in data[key] if str(x["question_id"]) in keep_ids]
                write_json(tmp / path.name, data)
        return str(dest)
    if items.kind == "srbench" and isinstance(_local(src), SRBenchTSV):
        from hf_real3d.srbench.format import read_tsv, write_tsv  # likewise

        bases = {str(items.rows[i]["base_qid"]) for i in kept}
        rows = [r for r in read_tsv(src, decode_images=False) if str(r["base_qid"]) in bases]
        out = dest.with_suffix(".tsv")
        write_tsv(rows, out)
        return str(out)
    return None


def _report(summary: dict[str, Any], res: StressResult, source: str) -> str:
    s = summary["solvability"]
    md = ["## Test-set stress test (non-visual solvability)", "",
          f"`{source}`: {summary['n']} items, a `{summary['diagnostic']}` text-only diagnostic, "
          f"{summary['folds']}-fold cross-validation grouped by `{summary['group_by']}`. "
          f"Solvability **{s['overall']:.1f}%** [{s['ci'][0]:.1f}, {s['ci'][1]:.1f}] against "
          f"{summary['majority']:.1f}% for the majority answer and {summary['chance']:.1f}% "
          "chance.", "",
          markdown_table(["type", "n", "TsT", "95% CI", "majority", "chance"],
                         [[t, v["n"], v["solvability"], f"[{v['ci'][0]:.1f}, {v['ci'][1]:.1f}]",
                           v["majority"], v["chance"]] for t, v in s["per_type"].items()]),
          "",
          "Per type, majority and chance are those of the type's own answers (its training "
          "items' most frequent answer; a uniform guess among its answers). The question type "
          + ("is one of the diagnostic's inputs (`--type_as_feature`)." if summary.get(
              "type_as_feature") else "is not one of the diagnostic's inputs (add it with "
             "`--type_as_feature`)."), ""]
    if summary.get("note"):
        md += [f"**Note:** {summary['note']}.", ""]
    if res.diagnostic == "lm":
        md += ["The items the language model is surest of (held-out probability of the "
               "right answer):", "",
               markdown_table(["item", "s(x)"], [[t.replace("|", "/"), f"{w:.3f}"]
                                                 for t, w in res.features[:12]])]
    else:
        md += ["What drives the score (" + ("impurity importance" if res.diagnostic == "rf"
                                            else "mean |coefficient|") + "): " +
               ", ".join(f"`{f}` {w:.3f}" for f, w in res.features[:12]) + "."]
    if "rounds" in summary:
        md += ["", "### Iterative bias pruning", "",
               markdown_table(["round", "removed", "kept", "TsT", "majority"],
                              [[r["round"], r["removed"], r["kept"], r["solvability"],
                                r["majority"]] for r in summary["rounds"]]),
               "", f"Stopped: {summary['rounds'][-1].get('stop', '')}. Kept "
               f"{summary['final']['kept']} of {summary['n']}."]
    return "\n".join(md) + "\n"


def _removed_section(items: Items, keep: set[int], config: str) -> str:
    gone = [i for i in range(len(items)) if i not in keep]
    by_type = Counter(items.types[i] for i in gone)
    by_answer = Counter(items.labels[i] for i in gone)
    total = Counter(items.types)
    return ("Iterative bias pruning removed "
            f"{len(gone)} of {len(items)} items of `{config}`.\n\n"
            + markdown_table(["type", "removed", "of"],
                             [[t, c, total[t]] for t, c in by_type.most_common()])
            + "\n\nMost removed answers: "
            + ", ".join(f"`{a}` {c}" for a, c in by_answer.most_common(10)) + ".")


def run_stress_test(config: StressTestConfig, *, write_configs: bool = True,
                    log=print) -> dict[str, Any]:
    """TsT (and IBP with ``prune``) of ``dataset``; returns what ``stress_test.json``
    holds: ``{"n", "solvability": {"overall", "ci", "per_type"}, "majority", "chance",
    "diagnostic", "folds", "group_by", "features"}`` in percent, and with pruning
    ``"rounds"`` and ``"final": {"kept", "solvability"}``. ``diagnostic="lm"`` fine-tunes
    ``lm_path`` (a local causal LM or a saved SceneLM; default: a small Llama from config)
    for ``lm_epochs`` per fold (:mod:`hf_real3d.debias.lm`). ``type_as_feature``: the
    diagnostic also reads each item's question type (off by default: the report says which).
    With ``prune``, the kept items are also written in the input's own form under
    ``out/kept`` (a ``save_to_disk`` folder, SQA3D files, a 3DSRBench TSV). ``config``: the
    settings (:class:`hf_real3d.debias.config.StressTestConfig`, what the command parses)."""
    c = config
    c.check()
    items = load_items(c.dataset, config=c.config, split=c.split,
                       question_columns=c.question_column or None,
                       answer_column=c.answer_column, group_by=c.group_by,
                       type_column=c.type_column, id_column=c.id_column)
    if c.exclude:
        items = exclude_ids(items, c.exclude)
    check_items(items, c.folds)
    lm = _lm_diagnostic(c)
    log(f"stress test: {len(items)} items of {items.source}, {c.diagnostic}, {c.folds} folds")
    res = stress_test(items, diagnostic=c.diagnostic, folds=c.folds, seed=c.seed,
                      progress=lambda m: log("  " + m), lm=lm,
                      type_as_feature=c.type_as_feature)
    summary = _summary(items, res, log)
    keep = None
    if c.prune:
        keep, rounds, last = prune(items, c.pruning(), progress=lambda m: log("  " + m),
                                   lm=lm, first=res)
        summary["rounds"] = rounds
        summary["final"] = {"kept": len(keep), "solvability": last.solvability,
                            "majority": last.majority}
        summary["prune"] = {"round_fraction": c.round_fraction, "margin": c.margin,
                            "budget": c.budget}
    out = Path(c.out)
    out.mkdir(parents=True, exist_ok=True)
    _write_scores(out / "scores.jsonl", items, res, keep)
    _plot(summary, summary.get("rounds"), out / "stress_test.png")
    report = _report(summary, res, items.source)
    if keep is not None:
        report += "\n" + _removed_section(items, set(keep), items.source) + "\n"
        kept_at = _write_kept(Path(c.dataset), items, keep, out / "kept", split=c.split,
                              config=c.config)
        if kept_at:
            summary["kept_written_to"] = kept_at
    with atomic_path(out / "report.md") as tmp:
        Path(tmp).write_text(report)
    folder = Path(c.dataset)
    if write_configs and isinstance(_local(folder), DatasetFolder) and \
            not _local(folder).saved and items.kind != "sqa3d":
        summary["configs"] = _add_configs(folder, c.config, items, res, keep)
    write_json(out / "stress_test.json", summary, indent=2)
    return summary


def _lm_diagnostic(c: StressTestConfig) -> Any:
    """The language-model diagnostic's settings, checked; None for another diagnostic."""
    if c.diagnostic != "lm":
        return None
    require("torch", "transformers", what="the language-model diagnostic (diagnostic='lm')")
    # the LM diagnostic needs torch and transformers (the [train] extra): imported when it is
    # asked for
    from hf_real3d.debias.lm import LMDiagnostic

    lm = LMDiagnostic(lm_path=c.lm_path, epochs=c.lm_epochs, seed=c.seed)
    lm.check()
    return lm


def _summary(items: Items, res: StressResult, log) -> dict[str, Any]:
    summary = res.summary()
    if len(set(items.labels)) == 1:
        summary["note"] = (f"every item has the same answer ({items.labels[0]!r}): any "
                           "predictor is always right, so solvability, majority and chance say "
                           "nothing about shortcuts; check --answer-column")
        log(f"note: {summary['note']}")
    summary["group_by"] = items.group_by
    summary["features"] = [{"feature": f, "weight": w} for f, w in res.features]
    summary["source"] = items.source
    return summary


def _write_scores(path: Path, items: Items, res: StressResult, keep: list[int] | None) -> None:
    with atomic_path(path) as tmp:
        kept = set(keep) if keep is not None else None
        Path(tmp).write_text("".join(json.dumps(
            {"id": q, "type": t, "answer": a, "predicted": p, "score": float(s),
             "correct": bool(c), **({"kept": i in kept} if kept is not None else {})}) + "\n"
            for i, (q, t, a, p, s, c) in enumerate(zip(items.ids, items.types, items.labels,
                                                       res.predicted, res.score, res.correct))))


def _add_configs(folder: Path, config: str | None, items: Items, res: StressResult,
                 keep: list[int] | None) -> list[str]:
    # datasets and the Hub client only when a folder gets configs
    import datasets

    from hf_real3d.hub import ConfigData, add_config, card_configs, load_local  # likewise

    feats = datasets.Features({"id": datasets.Value("string"),
                               "score": datasets.Value("float32"),
                               "correct": datasets.Value("bool"),
                               "predicted": datasets.Value("string"),
                               "type": datasets.Value("string")})
    rows = [{"id": q, "score": float(s), "correct": bool(c), "predicted": p, "type": t}
            for q, s, c, p, t in zip(items.ids, res.score, res.correct, res.predicted,
                                     items.types)]
    base = config or items.source.rsplit("(", 1)[-1].rstrip(")")
    add_config(folder, ConfigData("stress_test", {"test": rows}, feats,
                                  f"per-item bias score s(x) of `{base}` from a "
                                  f"{res.diagnostic} text-only diagnostic ({res.folds}-fold, "
                                  "grouped): the held-out probability of the right answer"))
    written = ["stress_test"]
    if keep is None:
        return written
    kept_rows = [items.rows[i] for i in keep]
    ds = load_local(folder, base)
    add_config(folder, ConfigData(f"{base}_tst", {"test": kept_rows}, ds.features,
                                  f"`{base}` after iterative bias pruning"),
               _removed_section(items, set(keep), base))
    written.append(f"{base}_tst")
    if items.kind == "real3dqa" and "rotations" in card_configs(folder):
        kept_ids = {str(items.ids[i]) for i in keep}
        rot = load_local(folder, "rotations")
        rot_rows = [dict(r) for r in rot if str(r["question_id"]) in kept_ids]
        add_config(folder, ConfigData("rotations_tst", {"test": rot_rows}, rot.features,
                                      "the rotation groups of the questions kept by "
                                      "iterative bias pruning"))
        written.append("rotations_tst")
    return written
