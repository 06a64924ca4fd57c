"""The official Real-3DQA rotation scorer's algorithm, restated for the benchmark baseline.

Behaviour of ``evaluate_rotation_robustness.py`` (Real-3DQA repository), step for step and
at its cost: read the four per-viewpoint JSON lists; when file 0 and file 1 share no id but
file 1's ids with the last two digits dropped are file 0 ids, drop the last two digits of
every id in files 1-3; clean every reference and prediction string with the LEO rules, one
string at a time, each rule a ``re.sub`` call with the pattern given as a string (so every
call looks the compiled pattern up in ``re``'s cache, as the script does: about twice the
cost of calling precompiled patterns); the refined match of the first reference that is
equal or a substring (spaces removed) decides; keep the questions present in every file;
P_k = share answered right in at least k viewpoints, VRS = mean of P_1..P_4.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict

from hf_real3d.answers import _RULES

# the LEO cleaning rules as (pattern string, replacement) pairs, in the script's order (the
# library keeps the same rules precompiled; tests/test_bench_smoke.py checks they agree)
RULES = [(pat.pattern, rep) for pat, rep in _RULES]


def clean_answer(data):
    if isinstance(data, list):
        return [clean_answer(d) for d in data]
    data = data.lower()
    for pattern, rep in RULES:
        data = re.sub(pattern, rep, data)
    return data


def _single_match(pred: str, gts: list[str]) -> tuple[int, int]:
    for gt in gts:
        if pred == gt:
            return 1, 1
        if "".join(pred.split()) in "".join(gt.split()):
            return 0, 1
        if "".join(gt.split()) in "".join(pred.split()):
            return 0, 1
    return 0, 0


def _match(pred, gts) -> tuple[int, int]:
    if not isinstance(pred, list):
        return _single_match(pred, gts)
    best = (0, 0)
    for p in pred:
        em, rel = _single_match(p, gts)
        if em > best[0] or (em == best[0] and rel > best[1]):
            best = (em, rel)
    return best


def official_scores(paths: list[str]) -> dict[str, float]:
    """The script end to end: read the files, then score them."""
    files = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            files.append(json.load(f))
    return official_scoring(files)


def official_scoring(files: list[list[dict]]) -> dict[str, float]:
    """The script's scoring of already-loaded per-viewpoint lists (ids may be rewritten)."""
    ids = [{p["question_id"] for p in preds} for preds in files]
    if not ids[0] & ids[1] and {str(q)[:-2] for q in ids[1]} <= {str(q) for q in ids[0]}:
        for preds in files[1:]:
            for p in preds:
                p["question_id"] = int(str(p["question_id"])[:-2])
    correct: dict = defaultdict(dict)
    for view, preds in enumerate(files):
        for p in preds:
            gts = [clean_answer(g) for g in p["response_gt"]]
            raw = p.get("response_pred", "")
            pred = [clean_answer(x) for x in raw] if isinstance(raw, list) else clean_answer(raw)
            correct[p["question_id"]][view] = _match(pred, gts)[1]
    valid = [q for q, c in correct.items() if len(c) == len(files)]
    counts = [sum(1 for v in correct[q].values() if v) for q in valid]
    out = {f"p_at_least_{k}": 100 * sum(c >= k for c in counts) / len(valid)
           for k in range(1, 5)}
    out["vrs"] = sum(out.values()) / 4
    out["groups"] = len(valid)
    return out
