import collections
import json

import numpy as np
import pytest
from helpers.data import in_direction

from hf_real3d.geometry import DIRECTION_PHRASES, DIRECTIONS_4
from hf_real3d.scene import read_scannet
from hf_real3d.spatial import View
from hf_real3d.sqa3d import read_split
from hf_real3d.synth import SynthConfig, build_benchmark, generate_split
from hf_real3d.synth.catalog import CATALOG


def test_rooms_are_plausible(small_synth):
    scenes, _ = small_synth
    for s in scenes:
        n = len(s.non_structural())
        assert 10 <= n <= 30, n
        assert s.count("wall") == 4 and s.count("floor") == 1
        assert s.count("door") >= 1 and s.count("window") >= 1
        for o in s.non_structural():
            cat = CATALOG[o.label]
            assert np.all(o.size >= np.array(cat.size_min) - 1e-9)
            assert np.all(o.size <= np.array(cat.size_max) + 1e-9)
            assert "color" in o.attributes
            if cat.prior_color:  # usual colour, or one colour for the whole category
                same = {x.attributes["color"] for x in s.objects if x.label == o.label}
                assert same == {o.attributes["color"]}
            assert o.points.shape[1] == 6 and o.points.dtype == np.float32
            assert o.points[:, 3:].min() >= 0 and o.points[:, 3:].max() <= 1
            if "on" in o.attributes:  # stands on its support
                sup = s.object(int(o.attributes["on"]))
                assert o.bottom == pytest.approx(sup.top)


def test_answers_follow_geometry(small_synth):
    """Recompute every direction-dependent answer from the scene graph."""
    scenes, records = small_synth
    by_id = {s.scene_id: s for s in scenes}
    checked = collections.Counter()
    nav = {"forward": "front", "backward": "back", "left": "left", "right": "right"}
    for r in records:
        scene = by_id[r.scene_id]
        pose = r.pose(scene.origin)
        meta = r.extra["synth"]
        view = View(scene, pose)
        kind, ans = meta["kind"], r.answers[0]
        if kind == "navigate":
            (oid,) = meta["objects"]
            assert view.direction(view.index(scene.object(oid))) == nav[ans]
        elif kind in ("nearest_in_direction", "turn_nearest"):
            hits = in_direction(scene, pose, meta["direction"])
            assert hits[0].label == ans
        elif kind == "count_direction":
            label = r.question.split("How many ")[1].split(" are ")[0]
            n = len(in_direction(scene, pose, meta["direction"]))
            assert n >= 0 and len(meta["objects"]) == ["zero", "one", "two", "three", "four",
                                                        "five", "six"].index(ans)
            assert all(scene.object(i).label.startswith(label[:3]) for i in meta["objects"])
        elif kind == "relation_direction":
            (oid,) = meta["objects"]
            truth = view.direction(view.index(scene.object(oid)))
            asked = next(d for d in DIRECTIONS_4 if r.question.endswith(DIRECTION_PHRASES[d] + "?"))
            assert (truth == asked) == (ans == "yes")
        elif kind == "closer":
            a, b = (scene.object(i) for i in meta["objects"])
            nearer = a if pose.distance(a.center) < pose.distance(b.center) else b
            assert nearer.label == ans
        elif kind == "prior_color":  # the object's colour; the usual one unless counter-prior
            obj = scene.object(meta["objects"][0])
            assert ans == obj.attributes["color"]
            assert (ans == CATALOG[obj.label].prior_color) == (meta["prior_kind"] == "prior")
        else:
            continue
        checked[kind] += 1
    assert len(checked) >= 6, checked


def test_positions_relative_to_mesh_centre(small_synth):
    scenes, records = small_synth
    scene = scenes[0]
    lo, hi = scene.mesh_bounds()
    np.testing.assert_allclose(scene.origin, (lo + hi) / 2)
    r = next(r for r in records if r.scene_id == scene.scene_id)
    pose = r.pose(scene.origin)
    w, d, _ = scene.extras["room_size"]
    assert 0 < pose.position[0] < w and 0 < pose.position[1] < d
    assert r.position["z"] == pytest.approx(0.0)


def test_guessable_fraction_is_controlled():
    for frac in (0.0, 0.5, 1.0):
        cfg = SynthConfig(seed=1, scenes={"test": 3}, questions_per_scene={"test": 60},
                          guessable_fraction=frac)
        _, recs = generate_split(cfg, "test")
        share = np.mean([r.extra["synth"]["guessable"] for r in recs])
        assert abs(share - frac) < 0.12, (frac, share)


def test_answers_balanced(small_synth):
    _, records = small_synth
    yn = [r.answers[0] for r in records if r.extra["synth"]["kind"] in
          ("exists_direction", "relation_direction", "can_reach")]
    assert len(yn) > 20
    assert 0.3 < yn.count("yes") / len(yn) < 0.7


def test_build_is_deterministic_and_readable(tmp_path):
    cfg = SynthConfig(seed=5, scenes={"train": 2, "val": 1, "test": 2},
                      questions_per_scene={"train": 20, "val": 10, "test": 15})
    s1 = build_benchmark(tmp_path / "a", cfg, workers=1, progress=False)
    s2 = build_benchmark(tmp_path / "b", cfg, workers=2, progress=False)
    assert s1 == s2
    for name in ("v1_balanced_questions_test_scannetv2.json",
                 "v1_balanced_sqa_annotations_train_scannetv2.json"):
        a, b = (tmp_path / x / "sqa3d" / name for x in "ab")
        assert a.read_bytes() == b.read_bytes()
    recs = read_split(tmp_path / "a/sqa3d", "test")
    assert len(recs) == 30 and s1.splits["test"]["questions"] == 30
    assert {r.scene_id for r in recs} == {"synth0003_00", "synth0004_00"}
    scene = read_scannet(tmp_path / "a/scans", "synth0003_00")
    for r in recs:
        if r.scene_id == "synth0003_00":
            for oid in r.extra["synth"]["objects"]:
                scene.object(oid)  # every referenced object exists on disk
    cfg_json = json.loads((tmp_path / "a/synth_config.json").read_text())
    assert cfg_json["config"]["seed"] == 5
    # a different seed changes the data
    s3 = build_benchmark(tmp_path / "c", SynthConfig(seed=6, scenes=cfg.scenes,
                         questions_per_scene=cfg.questions_per_scene), workers=1, progress=False)
    assert (tmp_path / "c/sqa3d/v1_balanced_questions_test_scannetv2.json").read_bytes() != \
        (tmp_path / "a/sqa3d/v1_balanced_questions_test_scannetv2.json").read_bytes()
    assert s3.splits["test"]["questions"] == 30


def test_bad_config():
    with pytest.raises(ValueError, match="guessable_fraction"):
        SynthConfig(guessable_fraction=1.5)
    with pytest.raises(ValueError, match="splits"):
        SynthConfig(scenes={"dev": 3})


def test_cli_synth(tmp_path, capsys):
    from hf_real3d.cli import main

    rc = main(["synth", "--out", str(tmp_path / "s"), "--train-scenes", "1", "--val-scenes", "0",
               "--test-scenes", "1", "--questions-per-scene", "12", "--workers", "1"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "test" in out and "12" in out
    assert (tmp_path / "s/scans/synth0001_00/synth0001_00_vh_clean_2.ply").is_file()
    assert main(["synth", "--out", str(tmp_path / "t"), "--guessable-fraction", "2"]) == 2
    assert not (tmp_path / "t").exists()


def test_every_generated_answer_recomputes_from_geometry(small_synth):
    from hf_real3d.spatial import answer_from_geometry

    scenes, records = small_synth
    by_id = {s.scene_id: s for s in scenes}
    for r in records:
        scene = by_id[r.scene_id]
        meta = r.extra["synth"]
        view = View(scene, r.pose(scene.origin))
        assert answer_from_geometry(view, meta["kind"], meta["params"], meta["facing"]) == \
            r.answers[0], (r.question, meta)


def test_counter_prior_questions_contradict_the_prior_and_follow_the_scene():
    """Counter-prior colour questions: worded like the prior ones, answered by the object's
    own colour (geometry/attributes), which is not the category's usual colour; the prior
    stays right for most colour questions; the share is controlled."""
    from hf_real3d.spatial import answer_from_geometry

    cfg = SynthConfig(seed=11, scenes={"train": 12}, questions_per_scene={"train": 80},
                      counter_prior_rate=0.3, counter_prior_fraction=0.1)
    scenes, records = generate_split(cfg, "train")
    by_id = {s.scene_id: s for s in scenes}
    kinds = collections.Counter(r.extra["synth"]["prior_kind"] for r in records)
    assert set(kinds) == {"scene", "prior", "counter_prior"}
    assert 0.02 < kinds["counter_prior"] / len(records) < 0.12
    counter = [r for r in records if r.extra["synth"]["prior_kind"] == "counter_prior"]
    prior_color = [r for r in records if r.extra["synth"]["kind"] == "prior_color"]
    assert len(counter) < len(prior_color) / 2  # the prior is usually right
    prior_texts = {r.question for r in prior_color if r not in counter}
    for r in counter:
        meta = r.extra["synth"]
        label = meta["params"]["label"]
        scene = by_id[r.scene_id]
        colors = {o.attributes["color"] for o in scene.objects if o.label == label}
        assert colors == {r.answers[0]} != {CATALOG[label].prior_color}
        assert meta["guessable"] is False and meta["kind"] == "prior_color"
        view = View(scene, r.pose(scene.origin))
        assert answer_from_geometry(view, meta["kind"], meta["params"], meta["facing"]) == \
            r.answers[0]
    # the same wording is used for prior questions: text alone cannot tell them apart
    assert {r.question.split(" the ")[0] for r in counter} <= \
        {t.split(" the ")[0] for t in prior_texts}
    # rate 0: no counter-prior object, no counter-prior question
    cfg0 = SynthConfig(seed=11, scenes={"train": 4}, questions_per_scene={"train": 60},
                       counter_prior_rate=0.0, counter_prior_fraction=0.1)
    _, recs0 = generate_split(cfg0, "train")
    assert all(r.extra["synth"]["prior_kind"] != "counter_prior" for r in recs0)
