"""Rendered views for VLM 3D-LLMs: the views config, frames that turn with the viewpoint,
the VLM recipe end to end, and lmms-eval documents that carry the images."""

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import datasets
import numpy as np
import pytest

from hf_real3d.cli import main as cli
from hf_real3d.geometry import Pose
from hf_real3d.schema import scene_from_row
from hf_real3d.views import bev_image, ego_frame

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    out = tmp_path_factory.mktemp("views") / "synth"
    assert cli(["synth", "--out", str(out), "--train-scenes", "2", "--val-scenes", "1",
                "--test-scenes", "1", "--questions-per-scene", "12"]) == 0
    assert cli(["render-views", "--dataset", str(out), "--size", "64"]) == 0
    return out


def test_views_config_has_one_row_per_question(folder):
    for split in ("train", "test"):
        qs = datasets.load_dataset(str(folder), "sqa3d", split=split)
        views = datasets.load_dataset(str(folder), "views", split=split)
        assert sorted(views["question_id"]) == sorted(str(q) for q in qs["question_id"])
        imgs = views[0]["images"]
        assert len(imgs) == 2 and imgs[0].size == imgs[1].size == (64, 64)
    card = (folder / "README.md").read_text()
    assert "config_name: views" in card and "## Config `views`" in card
    # rendering again replaces the config: one shard per split, the card entry once
    assert cli(["render-views", "--dataset", str(folder), "--size", "64"]) == 0
    assert len(list((folder / "views").glob("test-*.parquet"))) == 1
    assert (folder / "README.md").read_text().count("config_name: views") == 1


def test_egocentric_frame_turns_with_the_viewpoint(folder):
    row = datasets.load_dataset(str(folder), "scenes", split="test")[0]
    scene = scene_from_row(row)
    q = datasets.load_dataset(str(folder), "sqa3d", split="test")[0]
    pose = Pose.from_sqa3d(q["position"], q["rotation"], scene.origin)
    frames = [np.asarray(ego_frame(scene, pose.turned(k), 64)) for k in (0, 90, 180, 270)]
    assert all(not np.array_equal(frames[0], f) for f in frames[1:])
    assert np.array_equal(frames[0], np.asarray(ego_frame(scene, pose.turned(360), 64)))
    bev = np.asarray(bev_image(scene, 64))
    assert (bev != 255).any() and bev.shape == (64, 64, 3)


@pytest.mark.slow
def test_vlm_recipe_trains_on_the_views(folder, tmp_path):
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1",
               HF_DATASETS_CACHE=str(tmp_path / "cache"))
    p = subprocess.run([sys.executable, str(ROOT / "recipes/3drft_vlm.py"), "--config",
                        str(ROOT / "recipes/configs/3drft_vlm.yaml"), "--dataset_name",
                        str(folder), "--max_steps", "2", "--output_dir", str(tmp_path / "o"),
                        "--hidden_size", "32"], capture_output=True, text=True, timeout=600,
                       env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "questions with views" in p.stderr
    assert (tmp_path / "o" / "model.safetensors").is_file()
    assert json.loads((tmp_path / "o" / "config.json").read_text())["model_type"] == "llava"
    # the viewpoint objective on the augmented views: frames rendered for the turns
    p = subprocess.run([sys.executable, str(ROOT / "recipes/3drft_vlm.py"), "--config",
                        str(ROOT / "recipes/configs/3drft_vlm.yaml"), "--dataset_name",
                        str(folder), "--max_steps", "2", "--output_dir", str(tmp_path / "r"),
                        "--hidden_size", "32", "--reweighting", "viewpoint_dro",
                        "--rotation_augment", "all", "--per_device_train_batch_size", "8"],
                       capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    n = int(re.search(r"\[train: (\d+) questions with views\]", p.stderr).group(1))
    assert n > 24  # 2 rooms x 12 questions, each turned into its viewpoints
    assert (tmp_path / "r" / "model.safetensors").is_file()


def test_augmented_vlm_rows_have_frames_that_follow_the_turn(folder):
    """rotation_augment in the VLM recipe's rows: a turned viewpoint's egocentric frame is
    drawn from the turned pose (the views config holds only the unturned one); the BEV is
    the room's; the group and viewpoint columns come along for viewpoint_dro."""
    from hf_real3d.training.vlm_recipe import vlm_rows

    rows = vlm_rows(str(folder), "sqa3d", "train", augment="all")
    plain = vlm_rows(str(folder), "sqa3d", "train")
    assert len(rows) > len(plain)
    assert {"viewpoint_group", "rotation_deg"} <= set(rows.column_names)
    scenes = {r["scene_id"]: scene_from_row(r)
              for r in datasets.load_dataset(str(folder), "scenes", split="train")}
    qs = {str(q["question_id"]): q for q in datasets.load_dataset(str(folder), "sqa3d",
                                                                  split="train")}
    groups: dict[str, dict[int, dict]] = {}
    for r in rows:
        groups.setdefault(r["viewpoint_group"], {})[r["rotation_deg"]] = r
    qid, views = next((g, v) for g, v in groups.items() if len(v) == 4)
    q = qs[qid]
    scene = scenes[q["scene_id"]]
    pose = Pose.from_sqa3d(q["position"], q["rotation"], scene.origin)
    for k, r in views.items():
        frame = np.asarray(r["images"][1].convert("RGB"))
        assert np.array_equal(frame, np.asarray(ego_frame(scene, pose.turned(k), 64))), k
        assert np.array_equal(np.asarray(r["images"][0].convert("RGB")),
                              np.asarray(views[0]["images"][0].convert("RGB")))
    assert not np.array_equal(np.asarray(views[0]["images"][1]),
                              np.asarray(views[90]["images"][1]))
    with pytest.raises(ValueError, match="share 1 room.*evaluation split"):
        vlm_rows(str(folder), "sqa3d", "test", augment="all")


def test_lmms_documents_carry_the_views(folder, tmp_path):
    shutil.copyfile(ROOT / "hf_real3d/lmms_tasks/utils.py", tmp_path / "utils.py")
    (tmp_path / "views.json").write_text(json.dumps({"path": str(folder), "split": "test"}))
    spec = importlib.util.spec_from_file_location("task_utils", tmp_path / "utils.py")
    utils = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(utils)
    q = datasets.load_dataset(str(folder), "sqa3d", split="test")[0]
    imgs = utils.real3dqa_doc_to_visual({"question_id": q["question_id"], "rotation_deg": 0})
    assert len(imgs) == 2 and imgs[0].mode == "RGB"
