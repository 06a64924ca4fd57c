"""The ``hf-real3d`` command line."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence

__all__ = ["main", "make_parser"]


def _add_synth_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--train-scenes", type=int, default=200)
    p.add_argument("--val-scenes", type=int, default=20)
    p.add_argument("--test-scenes", type=int, default=40)
    p.add_argument("--questions-per-scene", type=int, default=None,
                   help="questions per scene for every split (default: 100 train/val, 88 test)")
    p.add_argument("--guessable-fraction", type=float, default=0.5,
                   help="share of questions a text-only model can answer from language priors")
    p.add_argument("--workers", type=int, default=None, help="processes (default: up to 2)")
    p.add_argument("--no-scenes", action="store_true", help="write only the question files")


def _synth_config(args: argparse.Namespace):
    from hf_real3d.synth import SynthConfig

    cfg = SynthConfig(
        seed=args.seed,
        scenes={"train": args.train_scenes, "val": args.val_scenes, "test": args.test_scenes},
        guessable_fraction=args.guessable_fraction,
    )
    if args.questions_per_scene is not None:
        cfg.questions_per_scene = {s: args.questions_per_scene for s in cfg.scenes}
    return cfg


def _print_summary(summary: dict) -> None:
    head = (f"{'split':<6} {'questions':>9} {'scenes':>6} {'guessable':>9}  "
            "types (what/is/how/can/which/other)")
    print(head)
    for split, s in summary.items():
        t = "/".join(str(v) for v in s["question_types"].values())
        print(f"{split:<6} {s['questions']:>9} {s['scenes']:>6} {s['guessable_share']:>9.1%}  {t}")


def cmd_synth(args: argparse.Namespace) -> int:
    from hf_real3d.synth import build_benchmark

    t0 = time.perf_counter()
    summary = build_benchmark(args.out, _synth_config(args), write_scenes=not args.no_scenes,
                              workers=args.workers)
    _print_summary(summary)
    print(f"wrote {args.out} in {time.perf_counter() - t0:.1f} s")
    if args.json:
        print(json.dumps(summary, indent=2))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """The main job on the embedded benchmark: see hf_real3d.demo."""
    from hf_real3d.demo import DemoConfig, run_demo

    cfg = DemoConfig(out=args.out, seeds=args.seeds)
    for key in ("train_scenes", "test_scenes", "questions_per_scene", "epochs",
                "srbench_scenes", "guessable_fraction"):
        value = getattr(args, key)
        if value is not None:
            setattr(cfg, key, value)
    report = run_demo(cfg)
    print(report.read_text())
    return 0


def _model_predictions(spec: str):
    """``[NAME=]file[,file...]`` -> one predictions table named NAME (default: first stem)."""
    import pandas as pd

    from hf_real3d.evaluation import load_predictions

    name, _, files = spec.rpartition("=") if "=" in spec else ("", "", spec)
    frames = [load_predictions(f) for f in files.split(",") if f]
    df = pd.concat(frames, ignore_index=True)
    df.attrs["name"] = name or frames[0].attrs["name"]
    return df


def cmd_evaluate(args: argparse.Namespace) -> int:
    from hf_real3d.evaluation import load_references, score_predictions
    from hf_real3d.report import results_table, write_report

    refs = load_references(args.dataset)
    results = []
    for spec in args.predictions:
        scores = score_predictions(refs, _model_predictions(spec),
                                   leo_compatible=args.leo_compatible,
                                   allow_missing=args.allow_missing)
        results.append(scores.metrics)
    notes = []
    if "report" in refs.attrs:
        rot = refs.attrs["report"]["rotations"]
        notes.append(f"references: {rot['groups']} rotation groups, {rot['complete_groups']} "
                     f"complete; incomplete groups are left out of P_k/VRS: "
                     f"{rot['incomplete_groups']}")
    files = write_report(results, args.out, notes)
    print(results_table(results))
    print("wrote " + ", ".join(files.values()))
    return 0


def cmd_publish_metrics(args: argparse.Namespace) -> int:
    from hf_real3d.hub import publish_metrics

    for url in publish_metrics(args.namespace, private=args.private, token=args.token):
        print(url)
    return 0


def cmd_build_real3dqa(args: argparse.Namespace) -> int:
    from hf_real3d.real3dqa import build_real3dqa

    summary = build_real3dqa(
        args.sqa3d, args.scenes, args.out, pairs=[tuple(p) for p in args.pair or []],
        judges=[tuple(j) for j in args.judge or []], split=args.split,
        n_viewpoints=args.viewpoints, push_to_hub=args.push_to_hub)
    print(f"{summary['questions']} questions -> {summary['kept']} kept "
          f"({summary['removed']} filtered out); rotations: {summary['rotation']}")
    print(f"wrote {args.out}" + (f", pushed to {summary['url']}" if "url" in summary else ""))
    return 0


def cmd_import_real3dqa(args: argparse.Namespace) -> int:
    from hf_real3d.hub import push_folder
    from hf_real3d.real3dqa import import_release

    rep = import_release(args.release, args.out)
    print(json.dumps(rep["rotations"], indent=2))
    if args.push_to_hub:
        print("pushed to", push_folder(args.out, args.push_to_hub))
    return 0


def cmd_draw(args: argparse.Namespace) -> int:
    """Top-down picture of one question from every viewpoint of its group."""
    import textwrap

    from hf_real3d.report import plot_topdown
    from hf_real3d.rotation import rotate_record, viewpoint_angles
    from hf_real3d.scene import read_scannet
    from hf_real3d.sqa3d import read_split
    from hf_real3d.synth.questions import Unanswerable

    recs = {r.question_id: r for r in read_split(args.sqa3d, args.split)}
    if args.question_id not in recs:
        raise KeyError(f"question_id {args.question_id} is not in {args.sqa3d} ({args.split})")
    rec = recs[args.question_id]
    scene = read_scannet(args.scenes, rec.scene_id)
    try:
        rows = rotate_record(rec, scene, viewpoint_angles(args.viewpoints))
    except Unanswerable as err:
        print(f"question_id {rec.question_id} cannot be rotated ({err}); drawing the original")
        rows = [{"rotation_deg": 0, "situation": rec.situation, "answers": rec.answers}]
    pose0 = rec.pose(scene.origin)
    meta = rec.extra.get("synth", {})
    highlight = set(meta.get("objects", []))
    panels = [{"pose": pose0.turned(r["rotation_deg"]), "highlight": highlight,
               "label": "\n".join([f"{r['rotation_deg']} deg: answer {r['answers'][0]!r}",
                                   *textwrap.wrap(r["situation"], 60)])} for r in rows]
    plot_topdown(scene, panels, args.out, title=f"{rec.question_id}: {rec.question}")
    print(f"wrote {args.out}")
    return 0


def cmd_build_3dsrbench(args: argparse.Namespace) -> int:
    from hf_real3d.srbench_eval import build_srbench
    from hf_real3d.synth.srbench_gen import SRBenchConfig, generate_srbench

    synthetic = None
    t0 = time.perf_counter()
    if args.scenes > 0:
        cfg = SRBenchConfig(seed=args.seed, scenes=args.scenes,
                            questions_per_scene=args.questions_per_scene)
        synthetic = generate_srbench(cfg, workers=args.workers)
        print(json.dumps(synthetic["stats"]))
    summary = build_srbench(args.out, tsv=args.tsv, synthetic=synthetic,
                            export_tsv=args.export_tsv, push_to_hub=args.push_to_hub)
    print(f"wrote {args.out}: {summary['counts']} in {time.perf_counter() - t0:.1f} s")
    return 0


def _srb_predictions(spec: str) -> tuple[str, dict]:
    """NAME=FILE with JSONL rows {config?, qid, prediction}."""
    name, _, path = spec.partition("=")
    preds: dict = {}
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            if not line.strip():
                continue
            r = json.loads(line)
            if "qid" not in r or not isinstance(r.get("prediction"), str):
                raise ValueError(f"{path}: line {i + 1} needs qid and a string prediction")
            preds[(r.get("config"), str(r["qid"]))] = r["prediction"]
    return name, preds


def cmd_evaluate_3dsrbench(args: argparse.Namespace) -> int:
    from pathlib import Path

    from hf_real3d._io import atomic_path, write_json
    from hf_real3d.srbench_eval import (
        baselines,
        load_rows,
        model_predictions,
        score_rows,
        table2,
        table4,
    )

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    prior = []
    if args.prior_scenes > 0:
        from hf_real3d.srbench_eval import expand
        from hf_real3d.synth.srbench_gen import SRBenchConfig, generate_srbench

        gen = generate_srbench(SRBenchConfig(seed=args.seed + 1000, scenes=args.prior_scenes),
                               progress=False)
        prior = expand(gen["synthetic_common"])
    results: dict = {}
    md = ["# 3DSRBench evaluation", ""]
    for config in args.configs:
        rows = load_rows(args.dataset, config)
        res = dict(baselines(rows, prior))
        for spec in args.predictions or []:
            name, preds = _srb_predictions(spec)
            missing = [r["qid"] for r in rows if (config, r["qid"]) not in preds
                       and (None, r["qid"]) not in preds]
            if missing:
                raise ValueError(f"{name}: no prediction for {len(missing)} {config} rows, e.g. "
                                 f"qid {missing[0]}")
            res[name] = score_rows(rows, [preds.get((config, r["qid"]),
                                                    preds.get((None, r["qid"]))) for r in rows])
        for spec in args.model or []:
            name, _, path = spec.partition("=")
            res[name] = score_rows(rows, model_predictions(rows, path))
        results[config] = res
        md += [f"## {config} (CircularEval, Table 2 shape)", "", table2(res), "",
               f"## {config}: vanilla / circular / flip / flip+circular", ""]
        for metric in ("vanilla", "flip", "flip_circular"):
            md += [f"### {metric}", "", table2(res, metric), ""]
    if "synthetic_common" in results and "synthetic_uncommon" in results:
        md += ["## Common vs uncommon viewpoints (Table 4 shape)", "",
               table4(results["synthetic_common"], results["synthetic_uncommon"]), ""]
    write_json(out / "metrics.json", results, indent=2)
    with atomic_path(out / "report.md") as tmp:
        tmp.write_text("\n".join(md) + "\n")
    print("\n".join(md))
    return 0


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hf-real3d", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("synth", help="generate the embedded synthetic benchmark")
    p.add_argument("--out", required=True)
    p.add_argument("--json", action="store_true", help="also print the summary as JSON")
    _add_synth_args(p)
    p.set_defaults(func=cmd_synth)
    p = sub.add_parser("demo", help="run the main job on the embedded benchmark")
    p.add_argument("--out", default="outputs/demo")
    p.add_argument("--seeds", type=int, default=1, help="repeat with seeds 0..N-1")
    p.add_argument("--train-scenes", type=int, default=None)
    p.add_argument("--test-scenes", type=int, default=None)
    p.add_argument("--questions-per-scene", type=int, default=None)
    p.add_argument("--epochs", type=float, default=None)
    p.add_argument("--srbench-scenes", type=int, default=None)
    p.add_argument("--guessable-fraction", type=float, default=None)
    p.set_defaults(func=cmd_demo)
    p = sub.add_parser("evaluate", help="score prediction files: EM, refined EM, P_k, VRS")
    p.add_argument("--dataset", required=True,
                   help="Real-3DQA release folder, built dataset folder, or SQA3D folder")
    p.add_argument("--predictions", nargs="+", required=True, metavar="[NAME=]FILE[,FILE]",
                   help="one entry per model; several files (viewpoints) joined by commas")
    p.add_argument("--out", required=True, help="folder for metrics.json, report.md, plots")
    p.add_argument("--leo-compatible", action="store_true",
                   help="reproduce the published LEO/Real-3DQA matching exactly")
    p.add_argument("--allow-missing", action="store_true",
                   help="score missing predictions as wrong instead of failing")
    p.set_defaults(func=cmd_evaluate)
    p = sub.add_parser("build-real3dqa", help="filter + rotate SQA3D-format data into Real-3DQA")
    p.add_argument("--sqa3d", required=True, help="folder with SQA3D question/annotation files")
    p.add_argument("--scenes", required=True, help="folder of ScanNet-format scene folders")
    p.add_argument("--out", required=True)
    p.add_argument("--pair", nargs=3, action="append", metavar=("NAME", "FULL", "BLIND"),
                   help="predictions of a model with and without 3D (repeatable)")
    p.add_argument("--judge", nargs=2, action="append", metavar=("NAME", "PREDICTIONS"),
                   help="predictions of a text-only judge (repeatable)")
    p.add_argument("--split", default="test")
    p.add_argument("--viewpoints", type=int, default=4)
    p.add_argument("--push-to-hub", default=None, metavar="ORG/NAME")
    p.set_defaults(func=cmd_build_real3dqa)
    p = sub.add_parser("import-real3dqa", help="the official Real-3DQA release as a dataset")
    p.add_argument("--release", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--push-to-hub", default=None, metavar="ORG/NAME")
    p.set_defaults(func=cmd_import_real3dqa)
    p = sub.add_parser("draw", help="top-down PNG of a question from each viewpoint")
    p.add_argument("--sqa3d", required=True)
    p.add_argument("--scenes", required=True)
    p.add_argument("--question-id", type=int, required=True)
    p.add_argument("--split", default="test")
    p.add_argument("--viewpoints", type=int, default=4)
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_draw)
    p = sub.add_parser("build-3dsrbench", help="3DSRBench dataset: official TSV and/or "
                                              "synthetic common/uncommon renders")
    p.add_argument("--out", required=True)
    p.add_argument("--tsv", default=None, help="official VLMEvalKit TSV")
    p.add_argument("--scenes", type=int, default=150, help="synthetic scenes (0: none)")
    p.add_argument("--questions-per-scene", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--export-tsv", action="store_true", help="also write VLMEvalKit TSVs")
    p.add_argument("--push-to-hub", default=None, metavar="ORG/NAME")
    p.set_defaults(func=cmd_build_3dsrbench)
    p = sub.add_parser("evaluate-3dsrbench", help="vanilla/circular/flip accuracy + baselines")
    p.add_argument("--dataset", required=True, help="folder built by build-3dsrbench")
    p.add_argument("--configs", nargs="+", default=["synthetic_common", "synthetic_uncommon"])
    p.add_argument("--predictions", nargs="*", metavar="NAME=FILE",
                   help="JSONL rows {config?, qid, prediction}")
    p.add_argument("--model", nargs="*", metavar="NAME=PATH",
                   help="local image-text-to-text model folder")
    p.add_argument("--prior-scenes", type=int, default=10,
                   help="synthetic scenes (other seed) for the text-only prior baseline")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_evaluate_3dsrbench)
    p = sub.add_parser("publish-metrics", help="upload the metric modules as Hub Spaces")
    p.add_argument("--namespace", required=True)
    p.add_argument("--private", action="store_true")
    p.add_argument("--token", default=None)
    p.set_defaults(func=cmd_publish_metrics)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, FileNotFoundError, KeyError) as err:
        print(f"hf-real3d {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
