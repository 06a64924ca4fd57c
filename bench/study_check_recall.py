"""How much of each kind of rotation mistake `check-rotations` finds: recall per corruption
kind (hf_real3d.real3dqa.corrupt) on synthetic rooms rotated from geometry, with the scene
rules (the folder's scenes config) and with the text rules alone, and the flags on the
uncorrupted rotations. The README quotes this study's output.

    python bench/study_check_recall.py [--scenes 6] [--questions 60] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from hf_real3d.real3dqa import build_real3dqa
from hf_real3d.real3dqa.check_run import check_set, read_rotation_set
from hf_real3d.real3dqa.corrupt import KINDS, corrupt
from hf_real3d.sqa3d import read_split
from hf_real3d.synth import SynthConfig, build_benchmark
from hf_real3d.tables import markdown_table


def _flagged(rs, rows, scenes: bool) -> set:
    res = check_set(type(rs)(rs.source, rs.path, rows, rs.scenes if scenes else None))
    return {(it.question_id, it.rotation_deg) for it in res.items if it.hits}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenes", type=int, default=6)
    ap.add_argument("--questions", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build_benchmark(root / "synth", SynthConfig(
            seed=args.seed, scenes={"train": 0, "val": 0, "test": args.scenes},
            questions_per_scene={"test": args.questions}), workers=1, progress=False)
        recs = read_split(root / "synth/sqa3d", "test")
        full, blind = root / "full.jsonl", root / "blind.jsonl"
        full.write_text("\n".join(json.dumps({"question_id": r.question_id,
                                              "prediction": r.answers[0]}) for r in recs))
        blind.write_text("\n".join(json.dumps({"question_id": r.question_id,
                                               "prediction": "zzz"}) for r in recs))
        build_real3dqa(root / "synth/sqa3d", root / "synth/scans", root / "r3",
                       pairs=[("all", str(full), str(blind))], progress=False)
        rs = read_rotation_set(root / "r3")
        items = sum(1 for r in rs.rows if r["rotation_deg"])
        clean = {True: _flagged(rs, rs.rows, True), False: _flagged(rs, rs.rows, False)}
        rows = [["none (geometry)", items, f"{len(clean[True])} flagged",
                 f"{len(clean[False])} flagged"]]
        out = {"items": items, "clean_flags": {"scenes": len(clean[True]),
                                               "text": len(clean[False])}}
        for kind in KINDS:
            # only names that pick out one object of the room: the mistake is then a mistake
            bad, changed = corrupt(rs.rows, kind, seed=args.seed, scenes=rs.scenes)
            rec = {"changed": len(changed)}
            for with_scenes, key in ((True, "scenes"), (False, "text")):
                # recall over the changed items the clean rotation did not already flag
                new = _flagged(rs, bad, with_scenes) - clean[with_scenes]
                base = changed - clean[with_scenes]
                rec[f"recall_{key}"] = len(new & base) / len(base) * 100
                rec[f"false_flags_{key}"] = len(new - changed)
            out[kind] = rec
            rows.append([kind, len(changed), f"{rec['recall_scenes']:.1f}%",
                         f"{rec['recall_text']:.1f}%"])
            assert not rec["false_flags_scenes"] and not rec["false_flags_text"], rec
    print(f"synthetic rooms: {args.scenes} scenes x {args.questions} questions, seed "
          f"{args.seed}; {items} rotated items from geometry")
    print(markdown_table(["corruption", "items changed", "found with the scene",
                          "found by the text rules"], rows))
    print("JSON " + json.dumps(out))


if __name__ == "__main__":
    sys.exit(main())
