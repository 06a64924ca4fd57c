"""bench/study_scenelm_inputs.py (the README's SceneLM design table) runs end to end."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_scenelm_study_runs_on_a_tiny_benchmark(tmp_path):
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench/study_scenelm_inputs.py"), "--train_scenes", "2",
         "--test_scenes", "1", "--variants", "default", "--work", str(tmp_path),
         "--out", str(tmp_path / "res.json")],
        capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    res = json.loads((tmp_path / "res.json").read_text())
    assert set(res) == {"blind (batch 16, lr 0.001, 8 ep)", "default"}
    assert set(res["default"]) == {"none", "no_3d", "train_s"}
    for part in ("none", "no_3d"):
        got = res["default"][part]
        assert {"prior", "scene", "scene_dependent"} <= set(got)
        assert all(0.0 <= v <= 100.0 for v in got.values())
