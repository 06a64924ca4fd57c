"""The recipes run as users run them: accelerate launch with a YAML config and overrides."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_3drft_recipe_under_accelerate_then_predict(tmp_path):
    env = dict(os.environ, HF_DATASETS_CACHE=str(tmp_path / "dsc"), OMP_NUM_THREADS="2")
    data = tmp_path / "synth"
    out = tmp_path / "3drft"
    accelerate = str(Path(sys.executable).parent / "accelerate")
    cmd = [accelerate, "launch", "--num_processes", "1", "--cpu", "--mixed_precision", "no",
           "--dynamo_backend", "no", str(ROOT / "recipes/3drft.py"),
           "--config", str(ROOT / "recipes/configs/3drft_synth.yaml"),
           "--data_dir", str(data), "--output_dir", str(out),
           "--blind_model_path", str(tmp_path / "blind"),
           "--synth_train_scenes", "3", "--synth_test_scenes", "1",
           "--synth_questions_per_scene", "20", "--max_steps", "3", "--hidden_size", "32",
           "--num_layers", "1", "--logging_steps", "1"]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-4000:]
    for folder in (tmp_path / "blind", out):  # the blind model was trained first
        assert (folder / "model.safetensors").is_file() and (folder / "tokenizer.json").is_file()
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["model_type"] == "scene_lm" and cfg["blind"] is False
    assert json.loads((tmp_path / "blind/config.json").read_text())["blind"] is True
    p = subprocess.run([sys.executable, str(ROOT / "recipes/predict.py"), "--model", str(out),
                        "--data_dir", str(data), "--out", str(tmp_path / "preds"),
                        "--ablations", "no_3d", "--attention"],
                       capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stderr[-4000:]
    rows = [json.loads(x) for x in (tmp_path / "preds/rotations.jsonl").read_text().splitlines()]
    assert {r["rotation_deg"] for r in rows} == {0, 90, 180, 270}
    summary = json.loads((tmp_path / "preds/summary.json").read_text())
    assert 0 <= summary["attention_to_3d"]["mean"] <= 1
    orig = (tmp_path / "preds/original.jsonl").read_text().splitlines()
    assert len(orig) == 20 and "log_prob" in json.loads(orig[0])


def test_recipe_config_errors(tmp_path):
    from hf_real3d.training.pipeline import parse_recipe_args

    bad = tmp_path / "bad.yaml"
    bad.write_text("no_such_option: 3\n")
    with pytest.raises(ValueError, match=r"unknown argument\(s\) in config: \['no_such_option'\]"):
        parse_recipe_args(["--config", str(bad)])
    good = tmp_path / "good.yaml"
    good.write_text("output_dir: x\nlearning_rate: 0.1\nreweighting: official\n")
    s, t = parse_recipe_args(["--config", str(good), "--learning_rate", "0.5"])
    assert t.learning_rate == 0.5 and t.reweighting == "official" and t.output_dir == "x"
