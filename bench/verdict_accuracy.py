"""How right are `check-rotations`' verdicts on the real release? Precision and recall against
the labelled sample (tests/data/rotation_sample: 240 rotated items drawn with a fixed seed,
labelled by three readers on their own before anyone looked at the verdicts; the consensus
is the yardstick).

    python bench/verdict_accuracy.py [--release ../shared/real/real3dqa]

Prints, with n and a Wilson 95% interval:

* the precision of ``defect``, on the items the consensus decided (valid or defect), and
  counting the consensus's ``ambiguous`` items as not defects;
* recall: the share of defective items called ``defect`` or ``needs_scene`` (and ``defect``
  alone);
* the share of valid items called ``defect`` (and ``needs_scene``);
* the same figures against each reader alone, and the confusion table.

Targets (issue 46): precision >= 90%, recall >= 85%, valid called defect <= 10%.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
from pathlib import Path

from _common import report

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "tests" / "data" / "rotation_sample"


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of k successes in n trials, in percent."""
    if n == 0:
        return float("nan"), float("nan")
    p = k / n
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return 100 * (mid - half), 100 * (mid + half)


def share(k: int, n: int) -> dict:
    lo, hi = wilson(k, n)
    return {"k": k, "n": n, "pct": round(100 * k / n, 1) if n else None,
            "ci95": [round(lo, 1), round(hi, 1)]}


def figures(labels: dict[str, str], verdicts: dict[str, str]) -> dict:
    """The figures of one labelling against the verdicts."""
    keys = list(labels)
    said_defect = [k for k in keys if verdicts[k] == "defect"]
    decided = [k for k in said_defect if labels[k] in ("valid", "defect")]
    defects = [k for k in keys if labels[k] == "defect"]
    valid = [k for k in keys if labels[k] == "valid"]
    return {
        "precision_defect_on_decided": share(sum(labels[k] == "defect" for k in decided),
                                             len(decided)),
        "precision_defect_all": share(sum(labels[k] == "defect" for k in said_defect),
                                      len(said_defect)),
        "recall_defect_or_needs_scene": share(sum(verdicts[k] != "pass" for k in defects),
                                              len(defects)),
        "recall_defect_only": share(sum(verdicts[k] == "defect" for k in defects), len(defects)),
        "valid_called_defect": share(sum(verdicts[k] == "defect" for k in valid), len(valid)),
        "valid_called_needs_scene": share(sum(verdicts[k] == "needs_scene" for k in valid),
                                          len(valid)),
        "confusion": {f"{lab} -> {v}": n for (lab, v), n in sorted(collections.Counter(
            (labels[k], verdicts[k]) for k in keys).items())},
    }


def _line(name: str, s: dict) -> str:
    return f"{name:<34} {s['pct']:>5}%  ({s['k']}/{s['n']}, 95% CI {s['ci95'][0]}-{s['ci95'][1]})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--release", default=str(ROOT.parent / "shared/real/real3dqa"))
    args = ap.parse_args()
    if not Path(args.release).is_dir():
        print(f"no release files at {args.release}: nothing to measure")
        return
    from hf_real3d.real3dqa.check_rotations import check_set
    from hf_real3d.real3dqa.rotation_set import read_rotation_set

    result = check_set(read_rotation_set(args.release))
    verdicts = {f"{it.question_id}@{it.rotation_deg}": it.verdict.verdict for it in result.items}
    consensus = {r["key"]: r["label"] for r in map(json.loads, (SAMPLE / "consensus.jsonl")
                                                   .read_text().splitlines())}
    out = {"sample": len(consensus), "consensus": figures(consensus, verdicts), "readers": {}}
    for path in sorted(SAMPLE.glob("labels_reader*.jsonl")):
        labels = {r["key"]: r["label"] for r in map(json.loads, path.read_text().splitlines())}
        out["readers"][path.stem.removeprefix("labels_")] = figures(labels, verdicts)
    c = out["consensus"]
    print(f"check-rotations' verdicts on the labelled sample ({len(consensus)} rotated items, "
          "consensus of three readers):")
    for name, key in (("precision of defect (decided)", "precision_defect_on_decided"),
                      ("precision of defect (all)", "precision_defect_all"),
                      ("recall (defect or needs_scene)", "recall_defect_or_needs_scene"),
                      ("recall (defect only)", "recall_defect_only"),
                      ("valid items called defect", "valid_called_defect"),
                      ("valid items called needs_scene", "valid_called_needs_scene")):
        print("  " + _line(name, c[key]))
    for reader, f in out["readers"].items():
        print(f"  against {reader} alone: precision {f['precision_defect_on_decided']['pct']}%, "
              f"recall {f['recall_defect_or_needs_scene']['pct']}%, valid called defect "
              f"{f['valid_called_defect']['pct']}%")
    print("  confusion (consensus -> verdict): " + ", ".join(
        f"{k}: {n}" for k, n in c["confusion"].items()))
    v = result.summary()["verdicts"]
    p, r = c["precision_defect_on_decided"], c["recall_defect_or_needs_scene"]
    print(f"\n{v['defect']:,} of {len(result.items):,} items are defects (precision {p['pct']}%, "
          f"recall {r['pct']}% on a labelled sample of {len(consensus)}); {v['needs_scene']:,} "
          "need the scene.")
    (SAMPLE / "verdict_accuracy.json").write_text(json.dumps(out, indent=1) + "\n")
    report("check-rotations defect precision on the labelled sample (%)", p["pct"], "%",
           target=">= 90", ok=p["pct"] >= 90, n=p["n"])
    report("check-rotations recall (defect or needs_scene) on the sample (%)", r["pct"], "%",
           target=">= 85", ok=r["pct"] >= 85, n=r["n"])
    fp = c["valid_called_defect"]
    report("check-rotations valid items called defect on the sample (%)", fp["pct"], "%",
           target="<= 10", ok=fp["pct"] is not None and fp["pct"] <= 10, n=fp["n"])


if __name__ == "__main__":
    main()
