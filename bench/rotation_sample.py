"""The labelled sample of the Real-3DQA release's rotated items: drawing it, and the readers'
agreement.

The sample is a yardstick for ``check-rotations``' verdicts (``bench/verdict_accuracy.py``):
it is drawn uniformly over the release's 2,249 rotated items with a fixed seed, by this
script alone (the standard library, no part of the checker), and labelled by two readers on
their own against the reading rules in ``tests/data/rotation_sample/README.md`` before anyone
looks at the checker's verdicts on it.

    python bench/rotation_sample.py draw [--release ../shared/real/real3dqa]
    python bench/rotation_sample.py agreement      # kappa between readers, the consensus
    python bench/rotation_sample.py draw --sample 8 --corrected OUT   # issue 62's blind sample
    python bench/rotation_sample.py validity --sample 8 --corrected OUT   # its figures, once

Samples 3 to 8 (issue 62) are drawn from a corrected set (``hf-real3d correct-rotations
--dataset ../shared/real/real3dqa --out OUT``): 120 derived items and 30 kept as released,
drawn apart with one seed and shown in one shuffled order, so a reader cannot tell them
apart. Each read the set of the rules of its time (3: commit ca51517, 4: fc4121a, 5: 35e6a31,
6: 31f0326, 7: eaa24b1, 8: aedd11d); the rules were mended after each but the last, and a
later sample's derived items are drawn from those no earlier one read.

``draw`` writes ``tests/data/rotation_sample/items.jsonl``: for each drawn item, the whole
group it belongs to (viewpoint 0 with its alternative situations, and every turned viewpoint),
so a reader sees what the item is turned from and what its sibling viewpoints say.
``agreement`` reads ``labels_reader{1,2,3}.jsonl`` (and ``labels_adjudicated.jsonl`` for
items all three label differently) and writes ``consensus.jsonl`` and ``agreement.json``.
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The project's sample (issue 46) and an independent second one (issue 55), drawn from the
# rotated items the first one left out.
SAMPLES = {1: (ROOT / "tests" / "data" / "rotation_sample", 20261203, 240),
           2: (ROOT / "tests" / "data" / "rotation_sample_2", 20261204, 150),
           3: (ROOT / "tests" / "data" / "corrected_sample", 20261206, 150),
           4: (ROOT / "tests" / "data" / "corrected_sample_2", 20261207, 150),
           5: (ROOT / "tests" / "data" / "corrected_sample_3", 20261208, 150),
           6: (ROOT / "tests" / "data" / "corrected_sample_4", 20261209, 150),
           7: (ROOT / "tests" / "data" / "corrected_sample_5", 20261210, 150),
           8: (ROOT / "tests" / "data" / "corrected_sample_6", 20261211, 150)}
DERIVED, AS_RELEASED = 120, 30  # the corrected set's strata (samples 3 and 4)
CORRECTED = (3, 4, 5, 6, 7, 8)
FOLDER, SEED, SIZE = SAMPLES[1]
TURNED = (90, 180, 270)
LABELS = ("valid", "defect", "ambiguous")


def _items(release: Path) -> dict[int, list[dict]]:
    return {k: json.loads((release / f"rotation_{k}.json").read_text(encoding="utf-8"))["questions"]
            for k in (0, *TURNED)}


def _base(qid: int, k: int) -> int:
    return qid // 100 if k in (90, 270) else qid


def _view(item: dict) -> dict:
    return {"situation": item["situation"], "question": item["question"],
            "answers": [a["answer"] for a in item["answers"]]}


def _drawn(folder: Path) -> set[str]:
    path = folder / "items.jsonl"
    return {json.loads(x)["key"] for x in path.read_text(encoding="utf-8").splitlines()}


def _sources(corrected: Path) -> dict[str, str]:
    """Each turned item's source in a corrected set (``corrections.jsonl``), by key."""
    lines = (corrected / "corrections.jsonl").read_text(encoding="utf-8").splitlines()
    return {f"{r['question_id']}@{r['rotation_deg']}": r["source"] for r in map(json.loads, lines)}


def _population(files: dict[int, list[dict]], sample: int, seed: int, size: int,
                corrected: Path | None) -> list[tuple[int, int]]:
    """The drawn (viewpoint, base id) pairs, in the order the readers see them."""
    population = [(k, _base(it["question_id"], k)) for k in TURNED for it in files[k]]
    rng = random.Random(seed)
    if sample in CORRECTED:
        source = _sources(corrected)
        # a later sample reads derived items the earlier ones did not (the rules were mended
        # after each)
        read = {k for n in CORRECTED if n < sample for k in _drawn(SAMPLES[n][0])}
        strata = [sorted(p for p in population if source[f"{p[1]}@{p[0]}"] == s
                         and (s == "release" or f"{p[1]}@{p[0]}" not in read))
                  for s in ("derived", "release")]
        picked = [p for stratum, n in zip(strata, (DERIVED, AS_RELEASED))
                  for p in rng.sample(stratum, n)]
        rng.shuffle(picked)
        return picked
    if sample == 2:
        taken = _drawn(SAMPLES[1][0])
        population = [(k, b) for k, b in population if f"{b}@{k}" not in taken]
    return [population[i] for i in sorted(rng.sample(range(len(population)), size))]


def draw(release: Path, sample: int = 1, corrected: Path | None = None) -> Path:
    """Draw a sample's rotated items uniformly (its seed and size) and write them with their
    groups. Sample 2 is drawn from the items sample 1 did not draw; samples 3 and 4 from the
    ``corrected`` set (which then stands in for the release), 4's derived items from those 3
    did not draw."""
    folder, seed, size = SAMPLES[sample]
    files = _items(corrected if sample in CORRECTED else release)
    by = {k: {_base(it["question_id"], k): it for it in files[k]} for k in files}
    picked = _population(files, sample, seed, size, corrected)
    folder.mkdir(parents=True, exist_ok=True)
    out = folder / "items.jsonl"
    with open(out, "w", encoding="utf-8") as f:
        for n, (k, base) in enumerate(picked):
            v0 = by[0][base]
            line = {"n": n + 1, "key": f"{base}@{k}", "question_id": base, "rotation_deg": k,
                    "scene_id": v0["scene_id"],
                    "viewpoint_0": {**_view(v0),
                                    "alternative_situation": list(v0.get("alternative_situation")
                                                                  or [])},
                    "item": _view(by[k][base]),
                    "other_views": {str(j): _view(by[j][base]) for j in TURNED
                                    if j != k and base in by[j]}}
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    print(f"drew {len(picked)} rotated items (seed {seed}) into {out}")
    return out


def _read(path: Path) -> dict[str, dict]:
    out = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        r = json.loads(line)
        if r.get("label") not in LABELS:
            sys.exit(f"{path}:{n}: label {r.get('label')!r} is not one of {LABELS}")
        out[r["key"]] = r
    return out


def kappa(a: list[str], b: list[str]) -> float:
    """Cohen's kappa of two readings of the same items."""
    n = len(a)
    observed = sum(x == y for x, y in zip(a, b)) / n
    ca, cb = collections.Counter(a), collections.Counter(b)
    expected = sum(ca[c] * cb[c] for c in set(ca) | set(cb)) / n / n
    return (observed - expected) / (1 - expected) if expected < 1 else 1.0


READERS = {1: ("reader1", "reader2", "reader3"),
           **{n: ("reader1", "reader2") for n in (2, *CORRECTED)}}


def agreement(sample: int = 1) -> dict:
    """Cohen's kappa for each pair of readers (on all items, and on the items both decided)
    and the consensus: the label at least two readers gave (of the first sample's three, or
    both of the second's), or the adjudicated one where they differ."""
    FOLDER, SEED, _ = SAMPLES[sample]  # noqa: N806 - the module's names, for one sample
    readers = READERS[sample]
    keys = [json.loads(x)["key"] for x in (FOLDER / "items.jsonl").read_text().splitlines()]
    readings = {r: _read(FOLDER / f"labels_{r}.jsonl") for r in readers}
    for r, got in readings.items():
        missing = [k for k in keys if k not in got]
        if missing:
            sys.exit(f"labels_{r}.jsonl lacks {len(missing)} items, first {missing[0]}")
    adj_path = FOLDER / "labels_adjudicated.jsonl"
    adj = _read(adj_path) if adj_path.is_file() else {}
    labels = {r: [readings[r][k]["label"] for k in keys] for r in readers}
    pairs = {}
    for i, a in enumerate(readers):
        for b in readers[i + 1:]:
            both = [(x, y) for x, y in zip(labels[a], labels[b])
                    if "ambiguous" not in (x, y)]
            pairs[f"{a}/{b}"] = {
                "agreement": round(sum(x == y for x, y in zip(labels[a], labels[b]))
                                   / len(keys), 4),
                "kappa": round(kappa(labels[a], labels[b]), 4),
                "both_decided": len(both),
                "kappa_both_decided": round(kappa([x for x, _ in both], [y for _, y in both]),
                                            4)}
    consensus, undecided = [], []
    for n, k in enumerate(keys):
        votes = collections.Counter(labels[r][n] for r in readers)
        label, count = votes.most_common(1)[0]
        if count >= 2:
            kinds = sorted({x for r in readers if readings[r][k]["label"] == label
                            for x in readings[r][k].get("kinds") or []})
            how = "unanimous" if count == len(readers) else "majority"
        elif k in adj:
            label, kinds, how = adj[k]["label"], adj[k].get("kinds") or [], "adjudicated"
        else:
            undecided.append(k)
            continue
        consensus.append({"key": k, "label": label, "kinds": kinds, "how": how})
    if undecided:
        (FOLDER / "to_adjudicate.txt").write_text("\n".join(undecided) + "\n")
        sys.exit(f"{len(undecided)} items have no majority label and no adjudicated one "
                 f"(labels_adjudicated.jsonl); their keys are in to_adjudicate.txt")
    with open(FOLDER / "consensus.jsonl", "w", encoding="utf-8") as f:
        for r in consensus:
            f.write(json.dumps(r) + "\n")
    stats = {
        "items": len(keys), "seed": SEED,
        "labels": {r: dict(collections.Counter(labels[r])) for r in readers},
        "pairs": pairs,
        "how": dict(collections.Counter(r["how"] for r in consensus)),
        "consensus": dict(collections.Counter(r["label"] for r in consensus)),
    }
    (FOLDER / "agreement.json").write_text(json.dumps(stats, indent=1) + "\n")
    print(json.dumps(stats, indent=1))
    return stats


def _interval(k: int, n: int) -> list[float]:
    """Wilson's 95% interval of k / n, in percent."""
    if not n:
        return [0.0, 100.0]
    z, p = 1.959964, k / n
    mid, half = p + z * z / (2 * n), z * ((p * (1 - p) + z * z / (4 * n)) / n) ** 0.5
    den = 1 + z * z / n
    return [round(100 * (mid - half) / den, 1), round(100 * (mid + half) / den, 1)]


def validity(corrected: Path, sample: int = 8) -> dict:
    """A corrected set's sample's figures, read once: of the derived items and of those kept
    as released, how many the consensus calls valid, defect and ambiguous, with intervals.
    ``corrected`` is the set the sample was drawn from."""
    folder = SAMPLES[sample][0]
    source = _sources(corrected)
    consensus = [json.loads(x) for x in (folder / "consensus.jsonl").read_text().splitlines()]
    out = {}
    for s in ("derived", "release"):
        labels = collections.Counter(r["label"] for r in consensus if source[r["key"]] == s)
        decided = labels["valid"] + labels["defect"]
        out[s] = {"items": sum(labels.values()), **{k: labels[k] for k in LABELS},
                  "valid_of_decided": round(100 * labels["valid"] / max(decided, 1), 1),
                  "valid_interval": _interval(labels["valid"], decided),
                  "defect_of_all": round(100 * labels["defect"] / max(sum(labels.values()), 1),
                                         1),
                  "defect_interval": _interval(labels["defect"], sum(labels.values()))}
    (folder / "validity.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("step", choices=("draw", "agreement", "validity"))
    ap.add_argument("--release", default=str(ROOT.parent / "shared/real/real3dqa"))
    ap.add_argument("--sample", type=int, choices=sorted(SAMPLES), default=1,
                    help="which sample: 1, the project's; 2, the independent one; 3 to 8, "
                         "the corrected set's (issue 62; each after the rules were mended)")
    ap.add_argument("--corrected", default=None,
                    help="a corrected set (hf-real3d correct-rotations OUT), for samples 3 "
                         "to 8")
    args = ap.parse_args()
    if args.step == "draw":
        draw(Path(args.release), args.sample,
             Path(args.corrected) if args.corrected else None)
    elif args.step == "agreement":
        agreement(args.sample)
    else:
        validity(Path(args.corrected), args.sample)


if __name__ == "__main__":
    main()
