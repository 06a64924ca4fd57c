import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hf_real3d.answers import match
from hf_real3d.scoring import (
    MetricInputError,
    answer_correctness,
    bootstrap_ci,
    chance_accuracy,
    circular_eval,
    em_scores,
    flip_circular_eval,
    flip_eval,
    vrs,
    vrs_from_counts,
)

WORDS = ["chair", "the chair", "armchair", "two", "2", "left", "", "Left.", "none", "zero",
         "brown chair", "tv", "a TV"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.sampled_from(WORDS), st.lists(st.sampled_from(WORDS),
                                                                     min_size=1, max_size=3)),
                          st.lists(st.sampled_from(WORDS), min_size=1, max_size=3)),
                min_size=1, max_size=30), st.booleans())
def test_vectorised_equals_per_item(rows, leo):
    preds = [p for p, _ in rows]
    refs = [r for _, r in rows]
    em, ref = answer_correctness(preds, refs, leo_compatible=leo)
    expect = [match(p, r, leo_compatible=leo) for p, r in rows]
    assert em.tolist() == [e for e, _ in expect]
    assert ref.tolist() == [r for _, r in expect]


def test_em_scores_per_type():
    out = em_scores(["chair", "two", "x"], [["chair"], ["2"], ["y"]],
                    question_types=["what", "how", "what"])
    assert out["em"] == pytest.approx(200 / 3)
    assert out["per_type"]["what"]["em"] == 50.0 and out["per_type"]["how"]["n"] == 1


# paper Table 3 P_k rows -> VRS as printed (one decimal)
@pytest.mark.parametrize("p, printed", [
    ((46.9, 8.1, 1.6, 0.4), 14.3),
])
def test_vrs_of_paper_rows(p, printed):
    assert round(sum(p) / 4 + 1e-9, 1) == printed


def test_vrs_from_counts_exact():
    # 1000 groups whose counts reproduce P = 46.9 / 8.1 / 1.6 / 0.4
    counts = np.array([4] * 4 + [3] * 12 + [2] * 65 + [1] * 388 + [0] * 531)
    out = vrs_from_counts(counts, 4)
    assert [out[f"p_at_least_{k}"] for k in range(1, 5)] == pytest.approx([46.9, 8.1, 1.6, 0.4])
    assert out["vrs"] == pytest.approx(14.25)


def _rot_rows(n_groups, rng):
    gid, rot, ok = [], [], []
    for g in range(n_groups):
        for r in (0, 90, 180, 270):
            gid.append(f"q{g}")
            rot.append(r)
            ok.append(rng.random() < 0.5)
    return gid, rot, ok


def test_vrs_properties():
    rng = random.Random(0)
    gid, rot, ok = _rot_rows(200, rng)
    base = vrs(ok, gid, rot)
    ps = [base[f"p_at_least_{k}"] for k in range(1, 5)]
    assert ps == sorted(ps, reverse=True)
    # permuting rows changes nothing
    perm = list(range(len(gid)))
    rng.shuffle(perm)
    again = vrs([ok[i] for i in perm], [gid[i] for i in perm], [rot[i] for i in perm])
    assert again["vrs"] == base["vrs"]
    # monotone: making a wrong row right never lowers VRS
    i = ok.index(False)
    better = list(ok)
    better[i] = True
    assert vrs(better, gid, rot)["vrs"] >= base["vrs"]
    assert vrs([True] * len(ok), gid, rot)["vrs"] == 100.0
    lo, hi = vrs(ok, gid, rot, ci=True)["vrs_ci"]
    assert lo < base["vrs"] < hi


def test_vrs_bad_groups():
    with pytest.raises(MetricInputError, match=r"question_id 7: rotation has 3 of 4 viewpoints "
                                               r"\(missing 270\)"):
        vrs([1, 1, 1, 1, 1, 1, 1], [5, 5, 5, 5, 7, 7, 7], [0, 90, 180, 270, 0, 90, 180])
    out = vrs([1, 1, 1, 1, 1, 1, 1], [5, 5, 5, 5, 7, 7, 7], [0, 90, 180, 270, 0, 90, 180],
              incomplete="drop")
    assert out["groups"] == 1 and out["incomplete_groups"] == 1 and out["incomplete_ids"] == ["7"]
    with pytest.raises(MetricInputError, match="viewpoint 90 appears 2 times"):
        vrs([1, 1], [5, 5], [90, 90])
    with pytest.raises(MetricInputError, match="equal length"):
        vrs([1, 1], [5], [0, 90])


def test_metric_input_errors():
    with pytest.raises(MetricInputError, match="equal length"):
        answer_correctness(["a"], [["a"], ["b"]])
    with pytest.raises(MetricInputError, match=r"predictions\[1\] is int"):
        answer_correctness(["a", 3], [["a"], ["b"]])


def test_circular_and_flip():
    # two questions, 2 options each, two shifts each
    correct = [True, True, True, False]
    gid = ["a", "a", "b", "b"]
    out = circular_eval(correct, gid, options=[["x", "y"], ["y", "x"], ["p", "q"], ["q", "p"]],
                        shifts=[0, 1, 0, 1], categories=["height"] * 4)
    # vanilla: every row (the field's 3DSRBench scorers); vanilla_unshifted: original order
    assert out["circular"] == 50.0 and out["vanilla"] == 75.0
    assert out["vanilla_unshifted"] == 100.0
    assert out["vanilla_per_category"] == {"height": 75.0}
    assert out["vanilla_unshifted_per_category"] == {"height": 100.0}
    assert out["circular"] <= out["vanilla"]
    with pytest.raises(MetricInputError, match="circular group 'a'"):
        circular_eval(correct, gid, options=[["x", "y"], ["x", "z"], ["p", "q"], ["q", "p"]])
    f = flip_eval([True, True, True, False], ["a", "a", "b", "b"], [False, True, False, True])
    assert f["flip"] == 50.0
    with pytest.raises(MetricInputError, match="unpaired flip item"):
        flip_eval([True, True, True], ["a", "a", "b"], [False, True, False])
    fc = flip_circular_eval([True] * 4, ["a"] * 4, [False, False, True, True])
    assert fc["flip_circular"] == 100.0


@settings(max_examples=40, deadline=None)
@given(st.lists(st.booleans(), min_size=4, max_size=40))
def test_circular_le_vanilla(bits):
    n = len(bits) // 2 * 2
    bits = bits[:n]
    gid = [i // 2 for i in range(n)]
    out = circular_eval(bits, gid, shifts=[i % 2 for i in range(n)])
    assert out["circular"] <= out["vanilla"] + 1e-9
    assert out["circular"] <= out["vanilla_unshifted"] + 1e-9


def test_chance_baselines_paper_table2():
    # orientation: a third with 4 options, the rest 2 -> 16.8 / 41.7
    n = [4] * 100 + [2] * 200
    assert round(chance_accuracy(n), 1) == 16.8
    assert round(chance_accuracy(n, consistent=True), 1) == 41.7
    assert chance_accuracy([2] * 10) == 25.0
    assert chance_accuracy([2] * 10, consistent=True) == 50.0
    # flip + circular doubles the passes
    assert chance_accuracy([2], passes=[4]) == pytest.approx(6.25)
    assert chance_accuracy([2], passes=[4], consistent=True) == 25.0


def test_bootstrap_ci_covers_mean():
    v = np.random.default_rng(0).random(500) < 0.3
    lo, hi = bootstrap_ci(v)
    assert lo < v.mean() * 100 < hi and hi - lo < 10


def test_bootstrap_of_few_values_matches_row_resampling():
    """Few distinct values: drawn as multinomial counts, the same distribution as
    resampling rows (compared with the row resampling through a custom statistic)."""
    v = (np.random.default_rng(1).random(2000) < 0.37).astype(float)
    fast = bootstrap_ci(v, n_resamples=4000)
    rows = bootstrap_ci(v, lambda x: x.mean(axis=1) * 100, n_resamples=4000)
    assert fast == bootstrap_ci(v, n_resamples=4000)  # seeded
    assert fast[0] == pytest.approx(rows[0], abs=0.4) and fast[1] == pytest.approx(rows[1], abs=0.4)
    many = np.random.default_rng(2).random(300)  # many distinct values: row resampling
    lo, hi = bootstrap_ci(many)
    assert lo < many.mean() * 100 < hi


def test_expected_pk_and_consistency():
    from hf_real3d.scoring import expected_p_at_least

    assert expected_p_at_least([0.5] * 4) == pytest.approx([93.75, 68.75, 31.25, 6.25])
    assert expected_p_at_least([1.0, 0.0]) == pytest.approx([100.0, 0.0])
    # groups entirely right or entirely wrong: as consistent as can be
    gid = np.repeat(np.arange(200), 4)
    rot = np.tile([0, 90, 180, 270], 200)
    ok = np.repeat(np.arange(200) % 2 == 0, 4)
    out = vrs(ok, gid, rot, ci=True)
    assert out["p_at_least_4"] == 50.0 and out["expected_p_at_least_4"] == pytest.approx(6.25)
    assert out["consistency"] == pytest.approx(8.0)
    lo, hi = out["consistency_ci"]
    assert lo <= 8.0 <= hi
    assert all(lo <= out[f"p_at_least_{k}"] <= hi
               for k, (lo, hi) in enumerate(out["p_at_least_ci"], 1))
    # independent viewpoints: consistency near 1
    rng = np.random.default_rng(0)
    ind = vrs(rng.random(4 * 5000) < 0.6, np.repeat(np.arange(5000), 4),
              np.tile([0, 90, 180, 270], 5000))
    assert ind["consistency"] == pytest.approx(1.0, abs=0.1)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.booleans(), min_size=4, max_size=4), min_size=1, max_size=30))
def test_mean_of_pk_is_the_accuracy(groups):
    ok = np.array(groups).ravel()
    gid = np.repeat(np.arange(len(groups)), 4)
    rot = np.tile([0, 90, 180, 270], len(groups))
    out = vrs(ok, gid, rot)
    assert out["vrs"] == pytest.approx(ok.mean() * 100) == pytest.approx(out["accuracy"])


def test_consistency_is_none_when_undefined():
    gid = np.repeat(np.arange(30), 4)
    rot = np.tile([0, 90, 180, 270], 30)
    ok = np.tile([True, True, True, False], 30)  # viewpoint 270 never right: E[P_4] = 0
    out = vrs(ok, gid, rot, ci=True)
    assert out["expected_p_at_least_4"] == 0.0 and out["consistency"] is None
    assert out["consistency_ci"] is None
    import json

    json.dumps(out, allow_nan=False)  # metrics.json never holds NaN
