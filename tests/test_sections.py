"""The demo's rotation arms in the report (their findings in demo/findings.py, their tables
in the report's sections, demo/sections.py): each arm against its equal-compute control, the
goal's three parts (each beyond twice the seed std), the transfer and weights tables."""

import pytest

from hf_real3d.demo.findings import rotation_findings, rotation_gains
from hf_real3d.demo.sections import rotation_table, transfer_table, viewpoint_weights_table


def _table(vrs, p1, p4, emr, exp4=20.0):
    return {"filtered": {"vrs": vrs, "p_at_least_1": p1, "p_at_least_4": p4,
                         "expected_p_at_least_4": exp4, "em_refined": emr},
            "original": {"em_refined": 80.0}, "scene_dependent": {"em_refined": emr + 10},
            "counter_prior_eval": {"em_refined": 90.0}}


def _summary(arm_vrs, arm_p4):
    per_seed = []
    for i, (v, p4) in enumerate(zip(arm_vrs, arm_p4)):
        per_seed.append({"sft": _table(70.0, 85.0, 50.0, 64.0),
                         "sft_more": _table(71.0, 86.0, 52.0, 65.0),
                         "blind": _table(38.0, 69.0, 14.0, 28.0),
                         "sft_rot": _table(v, 90.0, p4, 69.0 + i)})
    return {"seeds": list(range(len(per_seed))), "per_seed": per_seed}


def test_gains_are_per_seed_differences_against_the_control():
    g = rotation_gains(_summary([82.0, 84.0, 83.0], [80.0, 81.0, 79.0]))
    assert list(g) == ["sft_rot"]  # the arms the run has, with their control present
    s = g["sft_rot"]
    assert s["control"] == "sft"
    assert s["vrs"] == [12.0, 14.0, 13.0]
    assert s["p4_over_p1"] == pytest.approx([80 / 90, 81 / 90, 79 / 90])
    assert s["filtered_vs_sft_more"] == [4.0, 5.0, 6.0]
    assert s["p4_over_expected"] == [60.0, 61.0, 59.0]
    assert s["scene_minus_blind"] == [41.0, 42.0, 43.0]


def test_the_goal_needs_all_three_parts_beyond_twice_the_seed_std():
    holds = rotation_findings(_summary([82.0, 84.0, 83.0], [80.0, 81.0, 79.0]))
    assert [f.key for f in holds] == ["rotation:sft_rot"] and holds[0].holds
    # P_4/P_1 below 0.85 fails the goal even with the VRS gain
    assert not rotation_findings(_summary([82.0, 84.0, 83.0], [70.0, 71.0, 72.0]))[0].holds
    # a VRS gain within twice its seed std fails it
    assert not rotation_findings(_summary([75.0, 95.0, 83.0], [80.0, 81.0, 79.0]))[0].holds
    # one seed is never tested
    one = rotation_findings(_summary([82.0], [80.0]))[0]
    assert not one.holds
    table = rotation_table(_summary([82.0, 84.0, 83.0], [80.0, 81.0, 79.0]))
    assert table.splitlines()[2].startswith("| sft_rot | sft | +13.0 ± 0.8 |")
    assert table.splitlines()[2].endswith("| holds |")


def test_transfer_and_weight_tables_read_the_record():
    part = {"vrs": 50.0, "p_at_least_4": 20.0, "groups": 7}
    record = {"seeds": [{"seed": s, "kinds": {"seen": ["navigate"], "unseen": ["farther"]},
                         "transfer": {"sft": {"seen": part, "unseen": part},
                                      "sft_rot_transfer": {"seen": {**part, "vrs": 60.0 + s},
                                                           "unseen": part}},
                         "weights": {"sft_rot": {"viewpoints": {
                             "0": {"row_share": 0.25, "weight_share": 0.2, "mean_loss": 0.1},
                             "90": {"row_share": 0.25, "weight_share": 0.3,
                                    "mean_loss": 0.4}}, "top_share": 0.4}}}
                        for s in (0, 1)]}
    t = transfer_table(record)
    assert "| sft_rot_transfer - sft | +10.5 ± 0.5 | +0.0 ± 0.0 | +0.0 ± 0.0 | +0.0 ± 0.0 |" in t
    w = viewpoint_weights_table(record)
    assert "| sft_rot | 90° | 0.250 ± 0.000 | 0.300 ± 0.000 | 0.400 ± 0.000 |" in w
    assert transfer_table({"seeds": []}) == "" and viewpoint_weights_table({"seeds": []}) == ""
