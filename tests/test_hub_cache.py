"""A rebuilt dataset folder never loads from a stale cache, from any working directory."""

import os

import datasets

from hf_real3d.hub import ConfigData, write_dataset_folder
from hf_real3d.schema import question_features


def _build(folder, n, tag):
    rows = [{"question_id": i, "scene_id": "scene0000_00", "situation": tag,
             "alternative_situation": [], "question": "q", "answers": ["a"],
             "position": {"x": 0.0, "y": 0.0, "z": 0.0},
             "rotation": {"_x": 0.0, "_y": 0.0, "_z": 0.0, "_w": 1.0}, "question_type": "",
             "sqa3d_type": "", "rotation_deg": 0} for i in range(n)]
    write_dataset_folder(folder, [ConfigData("real3dqa", {"test": rows}, question_features(),
                                             default=True)],
                         pretty_name="t", summary="t", license="other", citation="none")


def test_rebuilt_folder_is_never_stale(tmp_path, monkeypatch):
    folder = tmp_path / "real3dqa"
    _build(folder, 3, "first")
    assert datasets.load_dataset(str(folder), split="test")[0]["situation"] == "first"
    _build(folder, 5, "second")
    monkeypatch.chdir(tmp_path.parent)  # a plain path, from another folder
    ds = datasets.load_dataset(str(folder), split="test")
    assert (ds.num_rows, ds[0]["situation"]) == (5, "second")
    os.chdir(folder.parent)  # a relative path
    assert datasets.load_dataset("real3dqa", "real3dqa", split="test").num_rows == 5
