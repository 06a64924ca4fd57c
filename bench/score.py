"""Scoring speed: vectorised hf_real3d.scoring against a straightforward per-item loop.

* 1,000,000 predictions (250,000 questions x 4 viewpoints) through refined EM + VRS;
* 100,000 3DSRBench-style rows through CircularEval + FlipEval + flip+circular.

Target (metrics issue): at least 20x faster than the per-item loop, identical numbers.

    python bench/score.py [--rows N]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import report  # noqa: E402

from hf_real3d.answers import match  # noqa: E402
from hf_real3d.choices import extract_choice, extract_choices  # noqa: E402
from hf_real3d.scoring import answer_correctness, circular_eval, flip_eval, vrs  # noqa: E402

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
    """Raw model outputs for 2-option questions, each asked in 2 shifts x (original, flip)."""
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
                      f"It is on the {text}.", "I cannot tell."][s] if s < 4 or rng.random() < 0.5
                     else letter)
    base = np.repeat(np.arange(q), 4)
    flipped = np.tile([False, False, True, True], q)
    shift = np.tile([0, 1, 0, 1], q)
    circ = [f"q{b}{'-flip' if f else ''}" for b, f in zip(base.tolist(), flipped.tolist())]
    flipg = [f"q{b}-s{s}" for b, s in zip(base.tolist(), shift.tolist())]
    allg = [f"q{b}" for b in base.tolist()]
    return preds, refs.tolist(), options, circ, flipg, allg, flipped.tolist(), shift.tolist()


def loop_mc(preds, refs, options, circ, flipg, allg, flipped, shift):
    correct = [extract_choice(p, o).letter == r for p, o, r in zip(preds, options, refs)]

    def all_ok(groups):
        d = defaultdict(lambda: True)
        for c, g in zip(correct, groups):
            d[g] = d[g] and c
        return 100 * sum(d.values()) / len(d)

    return all_ok(circ), all_ok(flipg), all_ok(allg)


def fast_mc(preds, refs, options, circ, flipg, allg, flipped, shift):
    letters, _ = extract_choices(preds, options)
    correct = [p == r for p, r in zip(letters, refs)]
    return (circular_eval(correct, circ, shifts=shift)["circular"],
            flip_eval(correct, flipg, flipped)["flip"],
            flip_eval(correct, allg, flipped, circular=True)["flip_circular"])


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
