"""The rotation checker (hf_real3d.real3dqa.checks, check_run, corrupt): its rules on hand-made
texts and on the issue's release items, recall per corruption kind on synthetic rooms rotated
from geometry, the outputs and configs of `hf-real3d check-rotations`, and its errors."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import documentation

from hf_real3d.geometry import bearing_after_turn, turn_direction
from hf_real3d.hub import card_configs, load_local
from hf_real3d.real3dqa.check_run import check_rotations, check_set, read_rotation_set
from hf_real3d.real3dqa.checks import check_text, mentions
from hf_real3d.real3dqa.corrupt import KINDS, corrupt


def rules(original, rotated, turn):
    return sorted(h.rule for h in check_text(original, rotated, turn))


def test_one_turn_rule_in_geometry_terms():
    # a 90-degree turn to the right: front -> left, right -> front, behind -> right,
    # left -> behind; clock hours move 3 hours back
    assert [turn_direction(d, 90) for d in ("front", "right", "back", "left")] == \
        ["left", "front", "right", "back"]
    assert turn_direction("12 o'clock", 90, n=12) == "9 o'clock"
    assert bearing_after_turn(180, 90) == 90 and bearing_after_turn(0, 270) == 90


def test_mentions_read_objects_and_directions():
    got = {(m.head, m.bearing, m.facing) for m in mentions(
        "I am facing a door, while having a mini fridge and a trash can on my right. "
        "There is a bed behind me and to my left is a huge curtain.")}
    assert got == {("door", 0.0, True), ("fridge", 90.0, False), ("can", 90.0, False),
                   ("bed", 180.0, False), ("curtain", 270.0, False)}
    clock = mentions("I am facing the paper towel dispenser with a chair in my 4 o'clock "
                     "direction.")
    assert [(m.head, m.bearing, m.width) for m in clock] == \
        [("dispenser", 0.0, 90.0), ("chair", 120.0, 30.0)]
    # allocentric phrases are not egocentric directions
    assert mentions("The lamp is to the left of the door.") == []
    back = mentions("I am standing by a shelf facing away from the crate.")
    assert [(m.head, m.bearing, m.facing) for m in back] == [("crate", 180.0, False)]


def test_text_rules_on_the_issues_release_items():
    v0 = "I am facing two trash cans, while having a bed on my right and a door at my left."
    mirrored = "I am facing two trash cans, while having a bed on my left and a door at my right."
    assert rules(v0, mirrored, 90) == ["direction_wrong", "mirror", "same_object_faced"]
    clock0 = "I am facing the paper towel dispenser with a chair in my six o'clock direction."
    clock9 = "I am facing the paper towel dispenser with a chair in my nine o'clock direction."
    hits = check_text(clock0, clock9, 90)
    wrong = next(h for h in hits if h.rule == "direction_wrong")
    assert "6 o'clock -> 9 o'clock (expected 3 o'clock)" in wrong.detail
    assert rules(clock0, clock0, 90) == ["text_not_turned"]
    assert rules(clock0, clock0, 0) == []


def test_a_right_turn_passes_and_the_wrong_sense_does_not():
    v0 = "I am facing the desk with a window on my left and a bed behind me."
    # turned 90 degrees to the right
    turned = "I am facing the wall with the desk on my left, a bed on my right and a window " \
             "behind me."
    assert rules(v0, turned, 90) == []
    assert rules(v0, turned, 270) == ["direction_wrong"]
    assert rules(v0, "I am facing a sofa and the bed is on my left.", 180) == \
        ["direction_wrong"]  # behind -> left after 180 (expected front)


def test_release_text_checks(real_dir, tmp_path):
    s = check_rotations(real_dir / "real3dqa", tmp_path / "chk", progress=False)
    assert s["items"] == 750 + 749 + 750 and s["groups"] == 750
    assert s["turn_source"] == {"quaternion": 1498, "convention": 751}
    flags = [json.loads(line) for line in (tmp_path / "chk/flags.jsonl").read_text().splitlines()]
    assert len(flags) == s["flagged"] == sum(1 for f in flags if f["rules"])
    assert s["groups_flagged"] + s["groups_passing"] == 750
    by = {(f["question_id"], f["rotation_deg"]): f for f in flags}
    # the issue's three examples
    assert {"mirror", "same_object_faced", "direction_wrong"} <= \
        set(by[(220602003690, 270)]["rules"])
    assert by[(220602000035, 90)]["rules"] == ["text_not_turned"]
    assert by[(220602000035, 90)]["source_question_id"] == 22060200003501
    assert "direction_wrong" in by[(220602000182, 90)]["rules"]
    # the per-rule counts are those of the lines; the README quotes this record
    for rule, n in s["per_rule"].items():
        assert n == sum(rule in f["rules"] for f in flags), rule
    record = json.loads((Path(__file__).parent / "data/check_rotations_real.json").read_text())
    assert {k: s[k] for k in record} == record
    assert "### `mirror`" in (tmp_path / "chk/report.md").read_text()


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A small built Real-3DQA folder: synthetic rooms, questions rotated from geometry."""
    from conftest import build_synthetic_real3dqa

    root = tmp_path_factory.mktemp("checks")
    build_synthetic_real3dqa(root, seed=11, test_scenes=3, questions=60)
    return root


def test_geometry_rotations_give_no_flag_and_configs_are_written(built, tmp_path):
    folder = tmp_path / "r3"
    shutil.copytree(built / "r3", folder)
    s = check_rotations(folder, tmp_path / "chk", progress=False)
    assert s["scenes"] and s["scenes_from"] == "the folder's scenes config"
    assert s["items"] > 100 and s["flagged"] == 0 and s["groups_passing"] == s["groups"]
    assert {"rotation_checks", "rotations_checked"} <= set(card_configs(folder))
    checks = load_local(folder, "rotation_checks")
    assert checks.num_rows == s["items"] and not any(checks["flagged"])
    assert load_local(folder, "rotations_checked").num_rows == \
        load_local(folder, "rotations").num_rows
    assert set(load_local(folder, "rotations")["source"]) == {"geometry"}


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_recall_per_corruption_kind(built, kind):
    """Each kind of mistake, applied where the names it involves pick out one object of the
    room, is found: by the scene rules always, by the text rules unless it is an answer."""
    rs = read_rotation_set(built / "r3")
    rows, changed = corrupt(rs.rows, kind, seed=0, scenes=rs.scenes)
    assert len(changed) >= 3, kind
    for with_scenes in (True, False):
        scenes = rs.scenes if with_scenes else None
        clean = {(it.question_id, it.rotation_deg) for it in
                 check_set(type(rs)(rs.source, rs.path, rs.rows, scenes)).items if it.hits}
        assert not (clean and with_scenes), "geometry rotations flagged with the scene"
        res = check_set(type(rs)(rs.source, rs.path, rows, scenes))
        new = {(it.question_id, it.rotation_deg) for it in res.items if it.hits} - clean
        assert new <= changed, "a correct rotation was flagged"
        recall = len(new & changed) / len(changed - clean)
        if with_scenes or kind != "answer_other_viewpoint":
            assert recall == 1.0, (kind, with_scenes, recall)
        else:  # an answer from another viewpoint needs the scene to be found
            assert recall == 0.0


def test_two_objects_of_one_name_are_left_to_the_scene():
    v0 = "I am next to the plant, which is on my left, looking at the mirror."
    v270 = "I am next to the plant, which is in front of me, looking at the mirror."
    assert rules(v0, v270, 270) == ["direction_wrong", "same_object_faced"]
    assert check_text(v0, v270, 270, several=frozenset({"mirror"})) == []
    # walls are always several
    assert rules("I am facing the wall with a desk on my left.",
                 "I am facing the wall with the desk behind me.", 90) == []


def _release_copy(real_dir, tmp_path) -> Path:
    dst = tmp_path / "rel"
    shutil.copytree(real_dir / "real3dqa", dst)
    return dst


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "hf_real3d.cli", *args], capture_output=True,
                          text=True)


def test_a_release_whose_viewpoints_do_not_line_up(real_dir, tmp_path):
    rel = _release_copy(real_dir, tmp_path)
    data = json.loads((rel / "rotation_90.json").read_text())
    data["questions"][3]["position"]["x"] += 1.0
    (rel / "rotation_90.json").write_text(json.dumps(data))
    bad = data["questions"][3]["question_id"]
    p = _cli("check-rotations", "--dataset", str(rel), "--out", str(tmp_path / "out"))
    assert p.returncode == 2
    line = p.stderr.strip().splitlines()[-1]
    assert "rotation_90.json" in line and str(bad) in line and "in place" in line
    assert not (tmp_path / "out").exists()


def test_a_rotation_set_of_other_files_and_bad_paths(real_dir, tmp_path):
    # any folder of rotation_{k}.json files in the release's format (no de-biased file)
    rel = _release_copy(real_dir, tmp_path)
    (rel / "de-biased_testset_with_question_type.json").unlink()
    (rel / "rotation_180.json").unlink()
    s = check_rotations(rel, tmp_path / "out", progress=False)
    assert s["source"] == "files" and s["items"] == 750 + 750
    (tmp_path / "file").write_text("x")
    p = _cli("check-rotations", "--dataset", str(rel), "--out", str(tmp_path / "file"))
    assert p.returncode == 2 and "is not a folder" in p.stderr
    assert (tmp_path / "file").read_text() == "x"
    p = _cli("check-rotations", "--dataset", str(tmp_path / "nothing"), "--out",
             str(tmp_path / "o2"))
    assert p.returncode == 2 and "no such folder" in p.stderr


def test_explorer_filters_and_shows_the_checks(built, tmp_path):
    from hf_real3d import app as A

    folder = tmp_path / "r3"
    shutil.copytree(built / "r3", folder)
    rs = read_rotation_set(folder)
    rows, changed = corrupt(rs.rows, "unturned", share=0.3, seed=1)
    res = check_set(type(rs)(rs.source, rs.path, rows, rs.scenes))
    from hf_real3d.real3dqa.check_run import _add_configs

    _add_configs(folder, res, res.summary())
    qd = A.load_questions(folder)
    flagged = {q for q, _ in changed}
    assert set(A.filtered_ids(qd, "all", "all", "flagged by rotation checks")) == flagged
    passing = A.filtered_ids(qd, "all", "all", "passes rotation checks")
    assert passing and not flagged & set(passing)
    q, k = sorted(changed)[0]
    page = A.question_html(qd, q)
    assert f"<td class='vp-checks' data-deg='{k}'><span class='wrong'>text_not_turned" in page
    assert load_local(folder, "rotations_checked").num_rows == \
        4 * len(set(load_local(folder, "rotations")["question_id"]) - flagged)


def test_evaluate_exclude_flagged_on_a_folder_and_without_checks(built, tmp_path):
    from hf_real3d.real3dqa.evaluate import evaluate_files

    folder = tmp_path / "r3"
    shutil.copytree(built / "r3", folder)
    rot = load_local(folder, "rotations")
    preds = tmp_path / "p.jsonl"
    preds.write_text("\n".join(json.dumps({"question_id": q, "rotation_deg": d,
                                           "prediction": a[0]})
                               for q, d, a in zip(rot["question_id"], rot["rotation_deg"],
                                                  rot["answers"])))
    with pytest.raises(FileNotFoundError, match="no rotation_checks config.*check-rotations"):
        evaluate_files(folder, [f"m={preds}"], tmp_path / "ev", exclude_flagged=True,
                       allow_missing=True)
    assert not (tmp_path / "ev").exists()
    check_rotations(folder, tmp_path / "chk", progress=False)
    r = evaluate_files(folder, [f"m={preds}"], tmp_path / "ev", exclude_flagged=True,
                       allow_missing=True).results[0]
    assert r["rotation"]["groups"] == len(set(rot["question_id"]))  # nothing flagged
    assert "--exclude-flagged: 0 of" in (tmp_path / "ev/report.md").read_text()


def test_readme_quotes_the_recorded_release_checks():
    """The README's figures on the release are those of tests/data/check_rotations_real.json
    (test_release_text_checks re-measures that record)."""
    rec = json.loads((Path(__file__).parent / "data/check_rotations_real.json").read_text())
    text = documentation()
    block = " ".join(text[text.index("<!-- rotation-checks -->"):
                          text.index("<!-- /rotation-checks -->")].split())
    assert f"of {rec['items']:,} rotated items in {rec['groups']} groups, {rec['flagged']} " \
           f"items are flagged, in {rec['groups_flagged']} groups" in block
    for rule, n in rec["per_rule"].items():
        assert f"| `{rule}` | {n} | {rec['groups_per_rule'][rule]} |" in block, rule
    assert f"{rec['direction_wrong_either_sense']} are wrong whichever way" in block
    assert f"on {rec['complete_groups_passing']} of the {rec['groups']} groups" in block
