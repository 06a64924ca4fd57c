"""``hf-real3d correct-rotations`` (hf_real3d.real3dqa.correct): the corrected set on synthetic
rooms equals the geometry route's rotations; on the real release it keeps whole groups that
the checker finds no defect in, in the release's own format, which import-real3dqa, evaluate
and check-rotations read; its answers follow the turn; bad inputs write nothing."""

import json
import shutil

import pytest
from helpers.bench import bench_module
from helpers.cli import run_cli

from hf_real3d.hub import load_local
from hf_real3d.real3dqa.correct import correct_rotations, derive_answer
from hf_real3d.real3dqa.format import read_release
from hf_real3d.real3dqa.rotation import rotate_record
from hf_real3d.real3dqa.rotation_set import read_rotation_set
from hf_real3d.schema import record_from_row


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A small built Real-3DQA folder: synthetic rooms, questions rotated from geometry."""
    from helpers.data import build_synthetic_real3dqa

    root = tmp_path_factory.mktemp("correct")
    build_synthetic_real3dqa(root, seed=12, test_scenes=2, questions=40)
    return root


def test_on_synthetic_rooms_each_corrected_group_is_the_geometry_route(built, tmp_path):
    """Issue 62: with scenes, a group's derived items are what rotate's geometry route
    computes; mistakes planted in the folder (a mirror, a copied situation, an answer taken
    from another viewpoint) are never kept."""
    from hf_real3d.hub import ConfigData, add_config

    corrupt = bench_module("_corrupt").corrupt
    folder = tmp_path / "r3"
    shutil.copytree(built / "r3", folder)
    rs = read_rotation_set(folder)
    rows, changed = rs.rows, set()
    for kind in ("mirror", "unturned", "answer_other_viewpoint"):
        rows, more = corrupt(rows, kind, share=0.3, seed=1, scenes=rs.scenes)
        changed |= more
    assert len(changed) >= 10
    table = load_local(folder, "rotations").to_list()
    edited = {(r["question_id"], r["rotation_deg"]): r for r in rows}
    for r in table:
        r.update({k: edited[(r["question_id"], r["rotation_deg"])][k]
                  for k in ("situation", "answers")})
    feats = load_local(folder, "rotations").features
    add_config(folder, ConfigData("rotations", {"test": table}, feats, "corrupted"))

    s = correct_rotations(folder, tmp_path / "out", progress=False)
    assert s.kept_groups >= 0.8 * s.groups and s.items["derived"] >= len(changed)
    lines = {(d["question_id"], d["rotation_deg"]): d for d in
             map(json.loads, (tmp_path / "out/corrections.jsonl").read_text().splitlines())}
    assert all(lines[k]["source"] != "release" for k in changed)
    assert {d["rule"] for d in lines.values() if d["source"] == "derived"} == {"geometry"}
    out = read_release(tmp_path / "out")
    groups = {}
    for r in out.rotations:
        groups.setdefault(r["question_id"], {})[int(r["rotation_deg"])] = r
    assert len(groups) == s.kept_groups
    for q, g in groups.items():
        r0 = next(r for r in rs.rows if r["question_id"] == q and r["rotation_deg"] == 0)
        geo = {x["rotation_deg"]: x for x in rotate_record(record_from_row(r0),
                                                           rs.scenes(r0["scene_id"]),
                                                           sorted(g))}
        for k, r in g.items():
            assert (r["situation"], list(r["answers"])) == \
                (geo[k]["situation"], list(geo[k]["answers"])), (q, k)


@pytest.mark.parametrize("question, answers0, turn, expected, rule", [
    ("What color is the lamp?", ["red"], 90, ["red"], "heading_free"),
    ("Which way should I go to reach the door?", ["left"], 90, ["backward"],
     "direction_turned"),
    ("Which way should I go to reach the door?", ["left"], 270, ["forward"],
     "direction_turned"),
    ("Which direction is the window?", ["right"], 180, ["left"], "direction_turned"),
    ("What is on my left?", ["sofa"], 90, None, ""),  # nothing placed in front at viewpoint 0
    # nothing in the question or its answer follows the heading: turning cannot change it
    ("Is there a wall clock in the room?", ["no"], 90, ["no"], "no_heading_word"),
    ("What are the two cups sitting on?", ["desk"], 180, ["desk"], "no_heading_word"),
    # ... but a word of going, facing, front or back, or a deictic word does
    ("If I walked backwards what would I hit?", ["cabinet"], 90, None, ""),
    ("What is the closest object to direct front of me not on the floor?", ["divider"], 90,
     None, ""),
    ("What is this thing on the floor used for?", ["sitting"], 90, None, ""),
    ("Can I see the faucet?", ["no"], 180, None, ""),
])
def test_answers_follow_the_turn(question, answers0, turn, expected, rule):
    r0 = {"question_id": 1, "situation": "I am standing in the room.", "question": question,
          "answers": answers0}
    got, why, _ = derive_answer(question, r0, turn)
    assert got == expected and (why == rule or expected is None)


def test_a_thing_in_a_direction_comes_from_the_texts_at_the_pose():
    """What viewpoint 0's texts place alone where the turn brings the asked direction, or the
    same question asked at the pose of that direction."""
    r0 = {"question_id": 1, "situation": "I am facing the fridge and a sink is on my right.",
          "question": "What is on my left?", "answers": ["oven"]}
    assert derive_answer("What is on my left?", r0, 90)[:2] == (["fridge"], "placed_at_pose")
    assert derive_answer("What is on my left?", r0, 180)[:2] == (["sink"], "placed_at_pose")
    at_pose = [(2, "Which way is the door?", ["behind"])]
    got = derive_answer("What is on my left?", r0, 270, at_pose)
    assert got[:2] == (["door"], "placed_at_pose") and "question 2" in got[2][0]
    asked = [(3, "What is in front of me?", ["fridge"])]
    assert derive_answer("What is behind me?", r0, 180, asked)[:2] == (["fridge"],
                                                                        "pose_question")
    # what is on the wall or the floor in a direction: the texts place things in directions,
    # not on which surface there
    asked = [(4, "What is on the floor to my right?", ["bin"])]
    got = derive_answer("What is on the wall in front of me?", r0, 90, asked)
    assert got[0] is None and "surface" in got[1]
    # one of several, or a heading-dependent question the texts do not settle: not derived
    r0["situation"] = "I am facing two chairs."
    assert derive_answer("What is on my left?", r0, 90)[0] is None
    assert derive_answer("How many chairs can I see?", r0, 90)[0] is None


def test_a_phrase_pointing_at_a_thing_turns_with_the_question():
    """An egocentric phrase that points at the thing asked about turns with the situation (it
    points at the same thing from the turned view); one that is what is asked stays; a
    direction question with a side word the reader does not turn is not derived."""
    from hf_real3d.real3dqa.checker.evidence import PoseEvidence
    from hf_real3d.real3dqa.correct import derive_item

    one = PoseEvidence({}, {1: frozenset()}, "made up")  # the scene's texts name one of each
    r0 = {"question_id": 1, "situation": "I am facing the desk and a lamp is on my right.",
          "question": "What color is the shelf to my left?", "answers": ["white"]}
    d = derive_item(r0, dict(r0), 90, one)
    assert (d.question, d.answers) == ("What color is the shelf behind me?", ["white"])
    assert d.situation == "I have the desk on my left and a lamp is in front of me."
    # what is by, past or over a thing pointed at: the same after the turn, its phrase turned
    r0 = dict(r0, question="What is past the toilet on my right?", answers=["bathtub"])
    d = derive_item(r0, dict(r0), 90, None)
    assert (d.question, d.answers, d.rule) == ("What is past the toilet in front of me?",
                                               ["bathtub"], "of_pointed_object")
    r0 = dict(r0, question="What is to the left of the table in front of me?", answers=["bin"])
    assert derive_item(r0, dict(r0), 90, None).answers is None
    # a direction answer to a question asking a thing, or a side of a thing: not turned
    for q, a in (("What is on the wall right next to the wardrobe?", "right"),
                 ("What side is the door handle on the door to my left side?", "left side")):
        r0 = dict(r0, question=q, answers=[a])
        assert derive_item(r0, dict(r0), 180, None).answers is None, q
    # one of several chairs: the turned phrase points at the same chair, so the answer stays
    many = PoseEvidence({}, {1: frozenset({"chair"})}, "made up")
    r0 = dict(r0, question="What color is the chair to my right?", answers=["red"])
    d = derive_item(r0, dict(r0), 180, many)
    assert (d.question, d.answers, d.rule) == ("What color is the chair to my left?", ["red"],
                                               "of_pointed_object")
    r0 = dict(r0, question="Which way should I turn to get to the sink behind me?",
              answers=["left"])
    d = derive_item(r0, dict(r0), 180, None)
    assert (d.question, d.answers) == ("Which way should I turn to get to the sink in front "
                                       "of me?", ["right"])
    r0 = dict(r0, question="Which room is darker, the one which is right or the one on the "
                           "left?", answers=["right"])
    assert derive_item(r0, dict(r0), 180, None).answers is None
    r0 = dict(r0, question="What is on my left?", answers=["chair"])
    d = derive_item(r0, dict(r0), 90, None)  # a right turn: what was in front is on my left
    assert (d.question, d.answers) == ("What is on my left?", ["desk"])


@pytest.mark.slow
def test_the_corrected_release(real_dir, tmp_path, capsys):
    """On the real release (SQA3D's texts beside it): whole groups in the release's format,
    a row in corrections.jsonl for every turned item, no defect when checked again, gold
    answers at VRS 100 after import-real3dqa, and evaluate saying the set is derived."""
    out = tmp_path / "corrected"
    p = run_cli("correct-rotations", "--dataset", real_dir / "real3dqa", "--out", out)
    assert p.returncode == 0, p.stderr
    s = json.loads((out / "correction.json").read_text())
    assert s["kept_groups"] >= 250 and s["evidence"].endswith("sqa3d")
    # the groups with one answer at every viewpoint, counted from what was written
    one = s["one_answer"][1]
    assert 0 < one < s["kept_groups"] and f"{one} of the {s['kept_groups']} kept" in \
        " ".join((out / "README.md").read_text().split())
    lines = [json.loads(x) for x in (out / "corrections.jsonl").read_text().splitlines()]
    assert len(lines) == 2249 and {d["source"] for d in lines} == {"release", "derived",
                                                                    "dropped"}
    assert all(d["reason"] for d in lines if d["source"] == "dropped")
    # no item written keeps viewpoint 0's egocentric phrases in its question word for word
    # (but where the phrase is what is asked: "what is on my left?"), nor places a thing by a
    # part of the body
    from hf_real3d.english.mentions import directions_in, normal_text
    from hf_real3d.english.turn import by_the_body

    rows = read_release(out).rotations
    first = {r["question_id"]: r for r in rows if r["rotation_deg"] == 0}
    rule = {(d["question_id"], d["rotation_deg"]): d["rule"] for d in lines}
    turned = 0
    for r in rows:
        if r["rotation_deg"]:
            q0 = first[r["question_id"]]["question"]
            assert not by_the_body(r["situation"]), r
            if directions_in(q0) and rule[(r["question_id"], r["rotation_deg"])] not in (
                    "placed_at_pose", "pose_question", "there_placed"):
                assert normal_text(r["question"]) != normal_text(q0), r
                turned += 1
    assert turned > 100

    assert all(d["rule"] and d["answers"] for d in lines if d["source"] == "derived")
    kept = read_release(out)
    assert len({r["question_id"] for r in kept.rotations}) == s["kept_groups"]
    answers = {}
    for r in kept.rotations:
        answers.setdefault(r["question_id"], set()).add(r["answers"][0].strip().lower())
    assert sum(len(a) == 1 for a in answers.values()) == one
    assert len(kept.debiased) == 1485 and "not the paper's" in (out / "README.md").read_text()
    assert run_cli("check-rotations", "--dataset", out, "--out", tmp_path / "chk", "--sqa3d",
                   real_dir / "sqa3d").returncode == 0
    assert json.loads((tmp_path / "chk/check.json").read_text())["verdicts"]["defect"] == 0
    # what is kept as released follows the quaternions' sense, as the derived items do (a
    # quarter turn kept in the other sense would say what its derived sibling says)
    sense = {(v["question_id"], v["rotation_deg"]): v["sense"] for v in map(
        json.loads, (tmp_path / "chk/verdicts.jsonl").read_text().splitlines())}
    kept_as_released = [(d["question_id"], d["rotation_deg"]) for d in lines
                        if d["source"] == "release"]
    assert kept_as_released and all(sense[k] != "opposite" for k in kept_as_released)
    assert run_cli("import-real3dqa", "--release", out, "--out",
                   tmp_path / "imp").returncode == 0
    debiased = {r["question_id"] for r in kept.debiased}
    with open(tmp_path / "gold.jsonl", "w") as f:
        for r in kept.rotations:
            if r["rotation_deg"] or r["question_id"] not in debiased:
                f.write(json.dumps({"question_id": int(r["question_id"]),
                                    "rotation_deg": int(r["rotation_deg"]),
                                    "prediction": r["answers"][0]}) + "\n")
        for r in kept.debiased:
            f.write(json.dumps({"question_id": int(r["question_id"]),
                                "prediction": r["answers"][0]}) + "\n")
    assert run_cli("evaluate", "--dataset", tmp_path / "imp", "--predictions",
                   f"gold={tmp_path / 'gold.jsonl'}", "--out", tmp_path / "rep").returncode == 0
    metrics = json.loads((tmp_path / "rep/metrics.json").read_text())
    assert metrics[0]["rotation"]["vrs"] == 100.0 and metrics[0]["derived_references"]
    assert metrics[0]["rotation"]["answer_changes"]["groups"] == s["kept_groups"] - one
    assert "corrected rotation set derived by" in (tmp_path / "rep/report.md").read_text()


def test_bad_inputs_write_nothing(real_dir, built, tmp_path):
    release = tmp_path / "real3dqa"
    shutil.copytree(real_dir / "real3dqa", release)
    p = run_cli("correct-rotations", "--dataset", release, "--out", release / "out")
    assert p.returncode == 2 and "--out" in p.stderr and not (release / "out").exists()
    p = run_cli("correct-rotations", "--dataset", built / "synth/sqa3d", "--out",
                tmp_path / "o")
    assert p.returncode == 2 and "rotation set" in p.stderr and not (tmp_path / "o").exists()
    p = run_cli("correct-rotations", "--dataset", release, "--out", tmp_path / "o",
                "--sqa3d", tmp_path)
    assert p.returncode == 2 and "sqa3d" in p.stderr and not (tmp_path / "o").exists()
    assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr


def test_the_card_quotes_the_blind_sample_as_scored():
    """The validity the card states is the blind sample's, as bench/rotation_sample.py scored
    it (tests/data/corrected_sample_6/validity.json, sample 8), and the sample is what the
    README says: 120 derived and 30 kept as released, every item labelled by both readers, the
    derived ones read by no earlier sample."""
    from helpers.paths import ROOT

    from hf_real3d.real3dqa.correct import VALIDITY

    folder = ROOT / "tests/data/corrected_sample_6"
    scored = json.loads((folder / "validity.json").read_text())
    for name, key in (("derived", "derived"), ("kept as released", "release")):
        valid, decided, defect, drawn, interval = VALIDITY[name]
        got = scored[key]
        assert (valid, decided, defect, drawn) == (got["valid"], got["valid"] + got["defect"],
                                                   got["defect"], got["items"])
        assert list(interval) == got["valid_interval"]
    keys = [json.loads(x)["key"] for x in (folder / "items.jsonl").read_text().splitlines()]
    assert len(keys) == len(set(keys)) == 150
    earlier = {json.loads(x)["key"] for f in ("corrected_sample", "corrected_sample_2",
                                              "corrected_sample_3", "corrected_sample_4",
                                              "corrected_sample_5")
               for x in (ROOT / "tests/data" / f / "items.jsonl").read_text().splitlines()}
    consensus = [json.loads(x) for x in (folder / "consensus.jsonl").read_text().splitlines()]
    assert [c["key"] for c in consensus] == keys
    # the 30 kept as released may have been read before; at most 30 keys are
    assert len(set(keys) & earlier) <= 30
    for reader in ("reader1", "reader2"):
        labels = [json.loads(x)["key"] for x in
                  (folder / f"labels_{reader}.jsonl").read_text().splitlines()]
        assert labels == keys
