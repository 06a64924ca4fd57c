"""How much of each kind of rotation mistake `check-rotations` finds: recall per corruption
kind (bench/_corrupt.py) on synthetic rooms rotated from geometry, with the scene
rules (the folder's scenes config) and with the text rules alone (the share called
``defect``, and ``defect`` or ``needs_scene``), and the defects on the uncorrupted
rotations. docs/rotations.md quotes this study's output.

    python bench/study_check_recall.py [--scenes 6] [--questions 60] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from _corrupt import KINDS, corrupt

from hf_real3d.real3dqa import build_real3dqa
from hf_real3d.real3dqa.checker.check import check_set
from hf_real3d.real3dqa.rotation_set import read_rotation_set
from hf_real3d.sqa3d import read_split
from hf_real3d.synth import SynthConfig, build_benchmark
from hf_real3d.tables import markdown_table


def _verdicts(rs, rows, scenes: bool) -> dict:
    res = check_set(type(rs)(rs.source, rs.path, rows, rs.scenes if scenes else None))
    return {(it.question_id, it.rotation_deg): it.verdict.verdict for it in res.items}


def _share(keys, verdicts, ok) -> float:
    return 100 * sum(verdicts[k] in ok for k in keys) / max(len(keys), 1)


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
        clean = {True: _verdicts(rs, rs.rows, True), False: _verdicts(rs, rs.rows, False)}
        defects = {k: sum(v == "defect" for v in c.values()) for k, c in clean.items()}
        rows = [["none (geometry)", items, f"{defects[True]} defect",
                 f"{defects[False]} defect", "-"]]
        out = {"items": items, "clean_defects": {"scenes": defects[True],
                                                 "text": defects[False]}}
        for kind in KINDS:
            # only names that pick out one object of the room: the mistake is then a mistake
            bad, changed = corrupt(rs.rows, kind, seed=args.seed, scenes=rs.scenes)
            rec = {"changed": len(changed)}
            for with_scenes, key in ((True, "scenes"), (False, "text")):
                got = _verdicts(rs, bad, with_scenes)
                rec[f"defect_{key}"] = _share(changed, got, ("defect",))
                rec[f"defect_or_needs_scene_{key}"] = _share(changed, got,
                                                             ("defect", "needs_scene"))
                # beyond those of the uncorrupted rotations
                rec[f"false_defects_{key}"] = sum(
                    v == "defect" and clean[with_scenes][k] != "defect"
                    for k, v in got.items() if k not in changed)
            out[kind] = rec
            rows.append([kind, len(changed), f"{rec['defect_scenes']:.1f}%",
                         f"{rec['defect_text']:.1f}%",
                         f"{rec['defect_or_needs_scene_text']:.1f}%"])
            assert not rec["false_defects_scenes"] and not rec["false_defects_text"], rec
    print(f"synthetic rooms: {args.scenes} scenes x {args.questions} questions, seed "
          f"{args.seed}; {items} rotated items from geometry")
    print(markdown_table(["corruption", "items changed", "defect with the scene",
                          "defect by the text", "defect or needs_scene by the text"], rows))
    print("JSON " + json.dumps(out))


if __name__ == "__main__":
    sys.exit(main())
