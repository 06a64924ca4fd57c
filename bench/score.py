"""Scoring speed: vectorised hf_real3d.scoring against a straightforward per-item loop.

* 1,000,000 predictions (250,000 questions x 4 viewpoints) through refined EM + VRS;
* 100,000 3DSRBench-style rows through VLMEvalKit's answer reading, CircularEval, FlipEval
  and flip+circular, against VLMEvalKit's own way (a read per row, a hit map per setting).

Target (metrics issue): at least 20x faster than the per-item loop, identical numbers.

    python bench/score.py [--rows N]
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict

import numpy as np
from _common import report

from hf_real3d.answers import match
from hf_real3d.scoring import answer_correctness, vrs
from hf_real3d.srbench.rules import rule_hits, settings_table, vlmevalkit_choice

VOCAB = ("chair table left right forward backward two three four one zero yes no window door "
         "bed couch desk lamp monitor brown white black gray cabinet sink toilet trash can "
         "bookshelf picture pillow backpack box plant piano refrigerator").split()


def make_answers(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    vocab = np.array(VOCAB + [f"{a} {b}" for a in VOCAB[:20] for b in VOCAB[20:40]], dtype=object)
    refs = vocab[rng.integers(0, len(vocab), n)]
    preds = refs.copy()
    wrong = rng.random(n) < 0.45
    preds[wrong] = vocab[rng.integers(0, len(vocab), wrong.sum())]
    styled = rng.random(n) < 0.2
    preds[styled] = ["The " + p.capitalize() + "." for p in preds[styled]]
    return preds.tolist(), [[r] for r in refs]


def loop_em_vrs(preds, refs, gids, rots):
    per_group = defaultdict(int)
    n_ref = 0
    for p, r, g in zip(preds, refs, gids):
        _, ok = match(p, r)
        n_ref += ok
        per_group[g] += ok
    counts = list(per_group.values())
    ps = [100 * sum(c >= k for c in counts) / len(counts) for k in range(1, 5)]
    return 100 * n_ref / len(preds), ps, sum(ps) / 4


def fast_em_vrs(preds, refs, gids, rots):
    _, ok = answer_correctness(preds, refs)
    v = vrs(ok, gids, rots)
    return ok.mean() * 100, [v[f"p_at_least_{k}"] for k in range(1, 5)], v["vrs"]


def make_mc(n: int, seed: int = 1):
    """Raw model outputs for 2-option questions, each asked in 2 option orders x (original,
    mirrored image), with qids of the real benchmark's form."""
    rng = np.random.default_rng(seed)
    q = n // 4
    refs = np.where(rng.random(n) < 0.5, "A", "B")
    options = [["left", "right"] if r == "A" else ["right", "left"] for r in refs]
    right = rng.random(n) < 0.7
    pred_letter = np.where(right, refs, np.where(refs == "A", "B", "A"))
    style = rng.integers(0, 5, n)
    preds = []
    for letter, o, s in zip(pred_letter.tolist(), options, style.tolist()):
        text = o["AB".index(letter)]
        preds.append([letter, f"({letter})", f"The answer is {letter}.",
                      f"the {text}", "I cannot tell."][s] if s < 4 or rng.random() < 0.5
                     else letter)
    suffix = ["", "-1", "-flip", "-flip-1"]
    qids = [f"{b:08d}{suffix[k]}" for b in range(q) for k in range(4)]
    cats = ["orientation_on_the_left"] * (4 * q)
    return preds, refs[: 4 * q].tolist(), options[: 4 * q], qids, cats


def loop_mc(preds, refs, options, qids, cats):
    """VLMEvalKit's way: an answer read per row, then a hit map per setting."""
    hits = [int(vlmevalkit_choice(p, dict(zip("AB", o))) == r)
            for p, o, r in zip(preds, options, refs)]
    out = []
    for key in (lambda x: x[:8] if "-flip" not in x else x[:13],
                lambda x: x.replace("-flip", ""), lambda x: x[:8]):
        keys = [key(x) for x in qids]
        heads = set(keys)
        hit_map = {x: h for x, h in zip(qids, hits) if x in heads}
        for k, h in zip(keys, hits):
            hit_map[k] *= h
        vals = [hit_map[x] for x in qids if x in heads]
        out.append(100 * sum(vals) / len(vals))
    return tuple(out)


def fast_mc(preds, refs, options, qids, cats):
    hits, _ = rule_hits("vlmevalkit", preds, refs, options)
    t = settings_table(qids, hits, cats)
    return t["circular"]["overall"], t["flip"]["overall"], t["flip_circular"]["overall"]


def timed(fn, *args):
    t0 = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t0, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--mc-rows", type=int, default=100_000)
    args = ap.parse_args()
    preds, refs = make_answers(args.rows)
    gids = np.repeat(np.arange(args.rows // 4 + 1), 4)[: args.rows].tolist()
    rots = np.tile([0, 90, 180, 270], args.rows // 4 + 1)[: args.rows].tolist()
    t_fast, fast = timed(fast_em_vrs, preds, refs, gids, rots)
    t_loop, loop = timed(loop_em_vrs, preds, refs, gids, rots)
    same = np.allclose(fast[0], loop[0]) and np.allclose(fast[1], loop[1])
    print(f"EM_R + VRS, {args.rows} rows: vectorised {t_fast:.2f} s, loop {t_loop:.2f} s, "
          f"x{t_loop / t_fast:.1f}, identical={same}  (EM_R {fast[0]:.2f}, VRS {fast[2]:.2f})")
    report("EM_R+VRS 1M rows (loop / vectorised)", t_loop / t_fast, "x", target=">= 20x",
           ok=bool(t_loop / t_fast >= 20 and same), seconds=round(t_fast, 3),
           baseline_seconds=round(t_loop, 3), identical=bool(same))
    mc = make_mc(args.mc_rows)
    t_fast, fast = timed(fast_mc, *mc)
    t_loop, loop = timed(loop_mc, *mc)
    same = np.allclose(fast, loop)
    print(f"parse + circular + flip + flip_circular, {args.mc_rows} rows: "
          f"vectorised {t_fast:.3f} s, "
          f"loop {t_loop:.3f} s, x{t_loop / t_fast:.1f}, identical={same}  {fast}")
    report("parse+circular+flip 100k rows (loop/vectorised)", t_loop / t_fast, "x",
           target=">= 20x", ok=bool(t_loop / t_fast >= 20 and same),
           seconds=round(t_fast, 3), baseline_seconds=round(t_loop, 3), identical=bool(same))


if __name__ == "__main__":
    main()
