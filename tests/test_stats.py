"""The one rule for findings over seeds (hf_real3d.stats) and the demo's findings under it."""

import pytest

from hf_real3d.demo.findings import findings, pruning_findings, verdict
from hf_real3d.stats import mean_std, seed_stats


def test_holds_needs_two_seeds_and_twice_the_std():
    assert not seed_stats([10.0]).holds()  # one seed: std 0, yet it never holds
    assert seed_stats([10.0, 11.0]).holds(3.0)
    assert not seed_stats([1.0, 9.0]).holds()  # mean 5, std 4: not beyond 2 std
    assert not seed_stats([4.0, 5.0, None]).holds()  # a seed without a value
    assert not seed_stats([2.0, 2.2]).holds(3.0)  # beyond 2 std, below the target
    assert seed_stats([-5.0, -6.0]).holds(-3.0, above=False)
    assert mean_std([1.0, 2.0]) == "1.5 ± 0.5" and mean_std([]) == "-"
    assert verdict(True, 1).startswith("not tested") and verdict(False, 3) == "does NOT hold"


def _metrics(sft_d, paper_d, more_d, **kw):
    """Per-model metrics of one seed (refined EM), as score_predictions gives them."""
    def m(name, orig, deb, scene=50.0, rot=(80.0, 30.0, 40.0)):
        return {"model": name, "original": {"em_refined": orig}, "debiased": {"em_refined": deb},
                "scene_dependent": {"em_refined": scene},
                "rotation": {"p_at_least_1": rot[0], "p_at_least_4": rot[1],
                             "expected_p_at_least_4": rot[2]}}
    return [m("sft", 85.0, sft_d, 72.0), m("blind", 72.0, 29.0, 44.0),
            m("3drft_paper", 84.0, paper_d), m("3drft_official", 84.0, sft_d - 1),
            m("sft_more", 85.0, more_d), m("sft_no3d", 62.0, 30.0, 42.0),
            m("filter_full", 80.0, 40.0)]


def _by_key(per_seed):
    return {f.key: f for f in findings(per_seed)}


def test_a_large_gain_on_one_seed_does_not_hold():
    one = _by_key([_metrics(60.0, 70.0, 60.0)])
    assert not one["d"].holds and not one["a"].holds and not one["e"].holds


def test_findings_hold_or_not_by_the_seed_spread():
    steady = _by_key([_metrics(60.0, 66.0, 60.0), _metrics(61.0, 67.5, 61.0)])
    assert steady["d"].holds  # +6, +6.5 against sft and sft_more
    assert steady["a"].holds and steady["b"].holds and steady["e"].holds
    noisy = _by_key([_metrics(60.0, 70.0, 60.0), _metrics(61.0, 59.0, 61.0)])
    assert not noisy["d"].holds  # +10 and -2: mean +4, std 6
    assert "± 6.0" in noisy["d"].statement


def test_the_pruning_finding_reads_the_growth_of_the_lead():
    def seed(filtered, pruned):
        return {"n": 600, "kept": 400, "solvability": 40.0, "majority": 10.0,
                "final_solvability": 12.0, "final_majority": 10.0, "rounds": 4, "folds": 5,
                "em_refined": {"sft": {"filtered": 60.0, "pruned": pruned},
                               "blind": {"filtered": 60.0 - filtered, "pruned": 30.0},
                               "sft_no3d": {"filtered": 30.0, "pruned": 25.0}}}
    grows = {f.key: f for f in pruning_findings([seed(30.0, 65.0), seed(31.0, 66.0)])}
    assert grows["f:blind"].holds  # lead 30 -> 35 and 31 -> 36
    assert "growth +5.0 ± 0.0" in grows["f:blind"].statement
    flat = {f.key: f for f in pruning_findings([seed(30.0, 60.0), seed(30.0, 61.0)])}
    assert not flat["f:blind"].holds  # +0, +1: mean 0.5, std 0.5
    assert pruning_findings([{}, {}]) == []
    with pytest.raises(KeyError):
        pruning_findings([{"n": 1}])
