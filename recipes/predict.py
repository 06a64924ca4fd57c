"""Predictions of a trained SceneLM in the format the metrics read (JSONL with
question_id, rotation_deg, prediction, log_prob), for the original view and every rotated
viewpoint, with optional input ablations and the attention-to-3D diagnostic.

    python recipes/predict.py --model outputs/recipes/sft --data_dir outputs/recipes/synth \
        --out outputs/recipes/preds [--ablations no_3d shuffle_3d no_situation no_question]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

__all__ = ["main", "make_parser"]


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True, help="saved SceneLM folder (with its tokenizer)")
    p.add_argument("--data_dir", required=True, help="benchmark folder (sqa3d/ + scans/)")
    p.add_argument("--out", required=True, help="folder for the prediction files")
    p.add_argument("--split", default="test")
    p.add_argument("--viewpoints", type=int, default=4, help="0 or 1: original view only")
    p.add_argument("--ablations", nargs="*", default=[],
                   choices=["no_3d", "shuffle_3d", "no_situation", "no_question"])
    p.add_argument("--attention", action="store_true", help="attention-to-3D diagnostic")
    p.add_argument("--batch_size", type=int, default=128)
    return p


def main(args: argparse.Namespace) -> dict:
    from transformers import AutoTokenizer

    from hf_real3d.modeling import SceneLM, qa_rows
    from hf_real3d.rotation import rotate_records
    from hf_real3d.training.pipeline import (
        attention_to_3d,
        load_benchmark,
        predict_rows,
        write_jsonl,
    )

    model = SceneLM.from_pretrained(args.model)
    tok = AutoTokenizer.from_pretrained(args.model)
    records, scenes, bank = load_benchmark(args.data_dir, (args.split,),
                                           model.config.max_objects,
                                           model.config.points_per_object)
    recs = records[args.split]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = qa_rows(recs)
    summary = {"model": args.model, "files": {}}
    preds = predict_rows(model, tok, bank, rows, batch_size=args.batch_size)
    write_jsonl(out / "original.jsonl", preds)
    summary["files"]["original"] = str(out / "original.jsonl")
    if args.viewpoints > 1:
        rot = rotate_records(recs, scenes, n_viewpoints=args.viewpoints)
        rrows = [dict(r, alternative_situation=[]) for r in rot.rows]
        write_jsonl(out / "rotations.jsonl", predict_rows(model, tok, bank, rrows,
                                                          batch_size=args.batch_size))
        summary["files"]["rotations"] = str(out / "rotations.jsonl")
    for ab in args.ablations:
        write_jsonl(out / f"ablation_{ab}.jsonl",
                    predict_rows(model, tok, bank, rows, ablation=ab, batch_size=args.batch_size))
        summary["files"][ab] = str(out / f"ablation_{ab}.jsonl")
    if args.attention:
        summary["attention_to_3d"] = attention_to_3d(model, tok, bank, rows)
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


if __name__ == "__main__":
    print(json.dumps(main(make_parser().parse_args()), indent=2))
