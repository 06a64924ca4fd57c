"""How right are `check-rotations`' verdicts on the real release? Precision and recall against
a labelled sample: `--sample 1` (tests/data/rotation_sample: 240 rotated items drawn with a
fixed seed, labelled by three readers on their own before anyone looked at the verdicts) or
`--sample 2` (tests/data/rotation_sample_2: 150 other items, two readers and an
adjudicator; scored once its consensus.jsonl is there). The consensus is the yardstick. The
verdicts are the default command's: with the other questions at each pose when SQA3D's files
lie beside the release.

    python bench/verdict_accuracy.py [--sample 1|2] [--release ../shared/real/real3dqa]

Prints, with n and a Wilson 95% interval:

* the precision of ``defect``, on the items the consensus decided (valid or defect), and
  counting the consensus's ``ambiguous`` items as not defects;
* recall: the share of defective items called ``defect`` or ``needs_scene`` (and ``defect``
  alone);
* the share of valid items called ``defect`` (and ``needs_scene``);
* per verdict, what the labels say of the items it is given (``pass``: valid / (valid +
  defect) must be >= 90%, issue 55);
* the same figures against each reader alone, and the confusion table.

Targets: precision >= 90%, recall >= 85%, valid called defect <= 10% (issue 46); pass valid
>= 90% and defect alone finding >= 75% of the defects at >= 95% precision (issue 55).
"""

from __future__ import annotations

import argparse
import collections
import json
import math
from pathlib import Path

from _common import report

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = {1: ROOT / "tests" / "data" / "rotation_sample",
           2: ROOT / "tests" / "data" / "rotation_sample_2"}
LABELS = ("valid", "defect", "ambiguous")


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
    per_verdict = {}
    for v in ("pass", "defect", "needs_scene"):
        given = [k for k in keys if verdicts[k] == v]
        per_verdict[v] = {lab: share(sum(labels[k] == lab for k in given), len(given))
                          for lab in LABELS}
        sure = [k for k in given if labels[k] in ("valid", "defect")]
        right = "defect" if v == "defect" else "valid"
        per_verdict[v]["right_on_decided"] = share(sum(labels[k] == right for k in sure),
                                                   len(sure))
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
        "per_verdict": per_verdict,
        "confusion": {f"{lab} -> {v}": n for (lab, v), n in sorted(collections.Counter(
            (labels[k], verdicts[k]) for k in keys).items())},
    }


def decided_by(it) -> list[str]:
    """What decides an item's verdict: the rules of its defect hits (``pose questions`` where
    a hit names a question at the pose), or ``pose questions`` for a pass they support."""
    if it.verdict.verdict == "pass":
        return ["pose questions"] if it.verdict.evidence else []
    if it.verdict.verdict != "defect":
        return []
    hits = [h for h in it.verdict.hits if not h.needs_scene]
    pose = ["pose questions"] if any(" at this pose: " in p for h in hits for p in h.phrases) \
        else []
    return sorted({h.rule for h in hits}) + pose


def per_rule(labels: dict[str, str], verdicts: dict[str, str], deciders: dict[str, list[str]]
             ) -> dict[str, dict[str, int]]:
    """Per rule, the sample items whose verdict it decides, those the consensus decided, and
    those it gets right (issue 55: each new rule's precision, measured)."""
    out: dict[str, dict[str, int]] = {}
    for k, lab in labels.items():
        for rule in deciders[k]:
            f = out.setdefault(rule, {"items": 0, "decided": 0, "right": 0})
            f["items"] += 1
            if lab in ("valid", "defect"):
                f["decided"] += 1
                f["right"] += lab == ("defect" if verdicts[k] == "defect" else "valid")
    return dict(sorted(out.items()))


def _line(name: str, s: dict) -> str:
    return f"{name:<34} {s['pct']:>5}%  ({s['k']}/{s['n']}, 95% CI {s['ci95'][0]}-{s['ci95'][1]})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--release", default=str(ROOT.parent / "shared/real/real3dqa"))
    ap.add_argument("--sample", type=int, choices=sorted(SAMPLES), default=1)
    args = ap.parse_args()
    sample = SAMPLES[args.sample]
    if not Path(args.release).is_dir():
        print(f"no release files at {args.release}: nothing to measure")
        return
    if not (sample / "consensus.jsonl").is_file():
        print(f"{sample}/consensus.jsonl: not labelled yet; nothing to measure")
        return
    from hf_real3d.real3dqa.checker.run import check_with_evidence
    from hf_real3d.real3dqa.rotation_set import read_rotation_set

    result = check_with_evidence(read_rotation_set(args.release))
    folder = result.evidence
    verdicts = {f"{it.question_id}@{it.rotation_deg}": it.verdict.verdict for it in result.items}
    deciders = {f"{it.question_id}@{it.rotation_deg}": decided_by(it) for it in result.items}
    consensus = {r["key"]: r["label"] for r in map(json.loads, (sample / "consensus.jsonl")
                                                   .read_text().splitlines())}
    out = {"sample": len(consensus), "pose_questions_from": Path(folder).name if folder else None,
           "consensus": figures(consensus, verdicts), "readers": {},
           "per_rule": per_rule(consensus, verdicts, deciders)}
    for path in sorted(sample.glob("labels_reader*.jsonl")):
        labels = {r["key"]: r["label"] for r in map(json.loads, path.read_text().splitlines())}
        out["readers"][path.stem.removeprefix("labels_")] = figures(labels, verdicts)
    c = out["consensus"]
    print(f"check-rotations' verdicts on labelled sample {args.sample} ({len(consensus)} rotated "
          "items, the readers' consensus):")
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
    for v, f in c["per_verdict"].items():
        print(f"  called {v:<11}: " + ", ".join(f"{lab} {f[lab]['k']}/{f[lab]['n']}"
                                                for lab in LABELS)
              + f"; right on the decided {f['right_on_decided']['pct']}%")
    print("  the items each rule decides (right / decided by the consensus, of all): " + ", ".join(
        f"{rule} {f['right']}/{f['decided']} of {f['items']}"
        for rule, f in out["per_rule"].items()))
    print("  confusion (consensus -> verdict): " + ", ".join(
        f"{k}: {n}" for k, n in c["confusion"].items()))
    v = result.summary()["verdicts"]
    p, r = c["precision_defect_on_decided"], c["recall_defect_or_needs_scene"]
    print(f"\n{v['defect']:,} of {len(result.items):,} items are defects (precision {p['pct']}%, "
          f"recall {r['pct']}% on a labelled sample of {len(consensus)}); {v['needs_scene']:,} "
          "need the scene.")
    (sample / "verdict_accuracy.json").write_text(json.dumps(out, indent=1) + "\n")
    report("check-rotations defect precision on the labelled sample (%)", p["pct"], "%",
           target=">= 90", ok=p["pct"] >= 90, n=p["n"])
    report("check-rotations recall (defect or needs_scene) on the sample (%)", r["pct"], "%",
           target=">= 85", ok=r["pct"] >= 85, n=r["n"])
    fp = c["valid_called_defect"]
    report("check-rotations valid items called defect on the sample (%)", fp["pct"], "%",
           target="<= 10", ok=fp["pct"] is not None and fp["pct"] <= 10, n=fp["n"])
    ok = c["per_verdict"]["pass"]["right_on_decided"]
    report("check-rotations pass items valid (valid / valid + defect) on the sample (%)",
           ok["pct"] if ok["pct"] is not None else float("nan"), "%", target=">= 90",
           ok=ok["pct"] is not None and ok["pct"] >= 90,
           n=ok["n"])
    d, pd = c["recall_defect_only"], c["precision_defect_on_decided"]
    report("check-rotations defects found by defect alone on the sample (%)", d["pct"], "%",
           target=">= 75 at >= 95 precision",
           ok=d["pct"] is not None and d["pct"] >= 75 and pd["pct"] >= 95, n=d["n"])


if __name__ == "__main__":
    main()
