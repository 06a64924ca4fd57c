import json

import numpy as np
import pandas as pd
import pytest
from datasets import load_dataset as _load_dataset

from hf_real3d.cli import main
from hf_real3d.real3dqa import build_real3dqa, import_release
from hf_real3d.real3dqa.filtering import filter_questions, read_scanqa
from hf_real3d.scoring import MetricInputError
from hf_real3d.sqa3d import read_split
from hf_real3d.synth import SynthConfig, build_benchmark


def load_dataset(*args, **kwargs):
    # several tests build folders of the same name: see the caveat in hf_real3d.hub
    return _load_dataset(*args, download_mode="force_redownload", verification_mode="no_checks",
                         **kwargs)


def test_import_official_release(real_dir, tmp_path, monkeypatch):
    rep = import_release(real_dir / "real3dqa", tmp_path / "real3dqa")
    monkeypatch.chdir(tmp_path)
    deb = load_dataset("real3dqa", split="test")  # from the folder's parent
    rot = load_dataset("real3dqa", "rotations", split="test")
    files = {k: json.loads((real_dir / f"real3dqa/rotation_{k}.json").read_text())["questions"]
             for k in (0, 90, 180, 270)}
    assert deb.num_rows == 1485 and rot.num_rows == sum(len(v) for v in files.values()) == 2999
    src = json.loads((real_dir / "real3dqa/de-biased_testset_with_question_type.json")
                     .read_text())["questions"]
    assert deb["question_id"] == [q["question_id"] for q in src]
    for k, items in files.items():
        got = sorted(r for r, d in zip(rot["source_question_id"], rot["rotation_deg"]) if d == k)
        assert got == sorted(q["question_id"] for q in items)
    assert rep.report["rotations"]["incomplete_groups"] == {
        "220602007663": {"missing_viewpoints": [180]}}
    flags = rep.report["rotations"]["flags"]
    assert flags["rotation_90:situation_unchanged_answer_changed"] == 7
    assert 31 <= flags["rotation_180:question_edited"] <= 39
    quality = [q for qs in rot["quality"] for q in qs]
    assert quality.count("incomplete_group") == 3
    card = (tmp_path / "real3dqa/README.md").read_text()
    assert "config_name: rotations" in card and "220602007663" in card
    # the license the release files state, the repository's noted, SQA3D and ScanNet cited
    assert "\nlicense: cc-by-4.0\n" in card and "marked CC BY-SA 4.0" in card
    assert "Creative Commons Attribution 4.0 International License" in card
    assert "@inproceedings{ma2023sqa3d" in card and "@inproceedings{dai2017scannet" in card
    for config in ("real3dqa", "rotations"):
        assert f"## Data fields: `{config}`" in card
    assert "| `source_question_id` | int64 | the id as written in the release file |" in card


@pytest.fixture(scope="module")
def synth_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("synth") / "synth"
    cfg = SynthConfig(seed=11, scenes={"train": 0, "val": 0, "test": 3},
                      questions_per_scene={"test": 40})
    build_benchmark(out, cfg, workers=1, progress=False)
    return out


def _prediction_files(synth_dir, tmp_path):
    recs = read_split(synth_dir / "sqa3d", "test")
    full, blind, judge = [], [], []
    for r in recs:
        g = r.extra["synth"]["guessable"]
        full.append({"question_id": r.question_id, "prediction": r.answers[0], "log_prob": -0.1})
        blind.append({"question_id": r.question_id,
                      "prediction": r.answers[0] if g else "zzz",
                      "log_prob": -0.2 if g else -3.0})
        judge.append({"question_id": r.question_id,
                      "prediction": r.answers[0] if r.qtype == "how" else "zzz"})
    paths = []
    for name, rows in (("full", full), ("blind", blind), ("judge", judge)):
        p = tmp_path / f"{name}.jsonl"
        p.write_text("\n".join(json.dumps(x) for x in rows))
        paths.append(str(p))
    return recs, paths


def test_build_synthetic_real3dqa(synth_dir, tmp_path, monkeypatch):
    recs, (full, blind, judge) = _prediction_files(synth_dir, tmp_path)
    out = tmp_path / "real3dqa"
    rc = main(["build-real3dqa", "--sqa3d", str(synth_dir / "sqa3d"), "--scenes",
               str(synth_dir / "scans"), "--out", str(out), "--full", f"oracle={full}",
               "--blind", f"oracle={blind}", "--judge", f"howjudge={judge}", "--license",
               "apache-2.0"])
    assert rc == 0
    assert "\nlicense: apache-2.0\n" in (out / "README.md").read_text()
    monkeypatch.chdir(tmp_path)
    sqa = load_dataset("real3dqa", "sqa3d", split="test")
    kept = load_dataset("real3dqa", split="test")
    removed = load_dataset("real3dqa", "filtered_out", split="test")
    rot = load_dataset("real3dqa", "rotations", split="test")
    scenes = load_dataset("real3dqa", "scenes", split="test").with_format("numpy")
    assert sqa.num_rows == len(recs) == kept.num_rows + removed.num_rows
    guess = {r.question_id for r in recs if r.extra["synth"]["guessable"]}
    how = {r.question_id for r in recs if r.qtype == "how"}
    assert set(kept["question_id"]) == {r.question_id for r in recs} - guess - how
    for qid, reasons in zip(removed["question_id"], removed["reasons"]):
        assert ("pair:oracle" in reasons) == (qid in guess)
        assert ("judge:howjudge" in reasons) == (qid in how)
    assert all(d == pytest.approx(2.9) for d in kept["dependency"])  # -0.1 - (-3.0)
    groups = pd.Series(rot["question_id"]).value_counts()
    assert set(groups) == {4} and set(groups.index) <= set(kept["question_id"])
    pts = scenes[0]["points"]
    assert pts.ndim == 2 and pts.shape[1] == 6 and pts.dtype == np.float32
    assert scenes.features["points"].shape == (None, 6)
    card = (out / "README.md").read_text()
    assert "removed by pair:oracle" in card and "default: true" in card


def test_build_eight_viewpoints_and_bad_inputs(synth_dir, tmp_path):
    recs, (full, blind, judge) = _prediction_files(synth_dir, tmp_path)
    s = build_real3dqa(synth_dir / "sqa3d", synth_dir / "scans", tmp_path / "r8",
                       pairs=[("oracle", full, blind)], n_viewpoints=8, progress=False)
    rot = load_dataset(str(tmp_path / "r8"), "rotations", split="test")
    assert set(pd.Series(rot["question_id"]).value_counts()) == {8}
    assert s.rotation_rows == rot.num_rows
    with pytest.raises(ValueError, match="does not divide 360"):
        build_real3dqa(synth_dir / "sqa3d", synth_dir / "scans", tmp_path / "bad",
                       pairs=[("oracle", full, blind)], n_viewpoints=7)
    short = tmp_path / "short.jsonl"
    short.write_text("\n".join(open(full).read().splitlines()[:-1]))
    with pytest.raises(MetricInputError, match="predictions missing for 1 of"):
        build_real3dqa(synth_dir / "sqa3d", synth_dir / "scans", tmp_path / "bad",
                       pairs=[("oracle", str(short), blind)])
    with pytest.raises(FileNotFoundError, match="scene 'synth0000_00' is referenced"):
        build_real3dqa(synth_dir / "sqa3d", tmp_path / "noscenes", tmp_path / "bad",
                       pairs=[("oracle", full, blind)])
    assert not (tmp_path / "bad").exists()


def test_rotation_files_with_different_ids(real_dir, tmp_path):
    import shutil

    rel = tmp_path / "rel"
    shutil.copytree(real_dir / "real3dqa", rel)
    (rel / "rotation_90.json").chmod(0o644)
    d = json.loads((rel / "rotation_90.json").read_text())
    d["questions"][0]["question_id"] = 999999999999999
    (rel / "rotation_90.json").write_text(json.dumps(d))
    with pytest.raises(ValueError, match="question_id 999999999999999 matches no rotation_0 id"):
        import_release(rel, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_scanqa_filtering(tmp_path):
    data = [{"question_id": f"train-scene0000-{i}", "scene_id": "scene0000_00",
             "question": f"What is at {i}?", "answers": ["chair" if i % 2 else "table"],
             "object_ids": [i], "object_names": ["chair"]} for i in range(6)]
    p = tmp_path / "scanqa.json"
    p.write_text(json.dumps(data))
    df = read_scanqa(p)
    full = pd.DataFrame({"question_id": df.question_id, "prediction": ["chair"] * 6})
    blind = pd.DataFrame({"question_id": df.question_id, "prediction": ["chair"] * 3 + ["x"] * 3})
    res = filter_questions(df, [("m", full, blind)])
    assert res.kept_ids == [f"train-scene0000-{i}" for i in (0, 2, 3, 4, 5)]
    stats = res.stats()
    assert stats[0]["questions"] == 6 and stats[-1]["questions"] == 5
