"""End to end against a Hub-protocol test server on 127.0.0.1: push a built Real-3DQA folder,
load it back with load_dataset and compare rows; publish the metrics as Spaces and load one
with evaluate.load."""

import json
import os
import re
import subprocess
import sys

import pytest
from helpers.hub_server import HubServer

from hf_real3d.real3dqa import build_real3dqa
from hf_real3d.synth import SynthConfig, build_benchmark


def _env(hub, tmp_path):
    return dict(os.environ, HF_ENDPOINT=hub.url, HF_HUB_OFFLINE="0", HF_DATASETS_OFFLINE="0",
                HF_EVALUATE_OFFLINE="0", HF_HUB_DISABLE_XET="1", HF_TOKEN="hf_test",
                HF_HOME=str(tmp_path / "hf_home"), HF_DATASETS_CACHE=str(tmp_path / "ds_cache"),
                HF_HUB_CACHE=str(tmp_path / "hub_cache"), HF_MODULES_CACHE=str(tmp_path / "mod"),
                HF_HUB_DISABLE_TELEMETRY="1")


def _run(code, env):
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-4000:]
    return p.stdout


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("hubbuild")
    cfg = SynthConfig(seed=21, scenes={"train": 0, "val": 0, "test": 2},
                      questions_per_scene={"test": 30})
    build_benchmark(root / "synth", cfg, workers=1, progress=False)
    from hf_real3d.sqa3d import read_split

    recs = read_split(root / "synth/sqa3d", "test")
    full = root / "full.jsonl"
    blind = root / "blind.jsonl"
    full.write_text("\n".join(json.dumps({"question_id": r.question_id,
                                          "prediction": r.answers[0]}) for r in recs))
    blind.write_text("\n".join(json.dumps({"question_id": r.question_id, "prediction":
                                           r.answers[0] if r.extra["synth"]["guessable"]
                                           else "zzz"}) for r in recs))
    build_real3dqa(root / "synth/sqa3d", root / "synth/scans", root / "real3dqa",
                   pairs=[("oracle", str(full), str(blind))], progress=False)
    return root / "real3dqa"


def test_push_and_load_roundtrip(built, tmp_path):
    code = f"""
import json
import numpy as np
from datasets import load_dataset
from hf_real3d.hub import push_folder
print("URL", push_folder({str(built)!r}, "org/real3dqa"))
out = {{}}
for config in ("sqa3d", "real3dqa", "rotations", "filtered_out", "scenes"):
    hub = load_dataset("org/real3dqa", config, split="test")
    local = load_dataset({str(built)!r}, config, split="test", download_mode="force_redownload",
                         verification_mode="no_checks")
    if config == "scenes":
        same = all(np.array_equal(np.asarray(a["points"]), np.asarray(b["points"]))
                   and a["objects"] == b["objects"] for a, b in zip(hub, local))
    else:
        same = hub.to_list() == local.to_list()
    out[config] = [hub.num_rows, local.num_rows, same, str(hub.features == local.features)]
print("RESULT", json.dumps(out))
"""
    with HubServer() as hub:
        stdout = _run(code, _env(hub, tmp_path))
        uploaded = sorted(p for (t, r), repo in hub.state.repos.items() for p in repo.files)
        lfs = [p for repo in hub.state.repos.values() for p in repo.lfs]
    res = json.loads(stdout.split("RESULT ")[1])
    for config, (n_hub, n_local, same, feats) in res.items():
        assert n_hub == n_local > 0 and same and feats == "True", (config, res[config])
    assert "README.md" in uploaded
    assert any(re.fullmatch(r"scenes/test-00000-of-00001-[0-9a-f]{12}\.parquet", p)
               for p in uploaded), uploaded
    assert lfs and all(p.endswith(".parquet") for p in lfs)  # parquet went through git-LFS
    assert "URL http://127.0.0.1" in stdout


@pytest.mark.slow
def test_publish_metrics_and_load_from_hub(tmp_path):
    code = """
from hf_real3d.cli import main
assert main(["publish-metrics", "--namespace", "org"]) == 0
import evaluate
m = evaluate.load("org/vrs")
out = m.compute(predictions=["left", "x"], references=[["left"], ["right"]], group_ids=[1, 1],
                rotations=[0, 90])
print("VRS", out["vrs"], out["p_at_least_1"])
"""
    with HubServer() as hub:
        stdout = _run(code, _env(hub, tmp_path))
        spaces = {r for (t, r) in hub.state.repos if t == "space"}
        files = hub.state.repos[("space", "org/vrs")].files
    assert spaces == {"org/vrs", "org/circular_eval", "org/flip_eval"}
    assert {"vrs.py", "README.md", "app.py", "requirements.txt"} <= set(files)
    assert b'evaluate.load("org/vrs")' in files["app.py"] or b"org/vrs" in files["app.py"]
    assert "VRS 50.0 100.0" in stdout
