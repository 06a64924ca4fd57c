"""Every metric module: doctests run, the package exposes its path, and add_batch across
processes gives the same result as one compute."""

import doctest
import importlib.util
import multiprocessing as mp
import os
from pathlib import Path

import evaluate
import pytest

import hf_real3d

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", hf_real3d.METRICS)
def test_metric_doctests(name, monkeypatch):
    monkeypatch.chdir(ROOT)  # the doctests load "metrics/<name>" from the repository root
    path = ROOT / "metrics" / name / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"_metric_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    doc = module._KWARGS_DESCRIPTION
    test = doctest.DocTestParser().get_doctest(doc, {"evaluate": evaluate}, name, str(path), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.failures == 0 and runner.tries >= 2


@pytest.mark.parametrize("name", hf_real3d.METRICS)
def test_metric_card_sections(name):
    card = (ROOT / "metrics" / name / "README.md").read_text()
    for section in ("## Inputs", "## Output values and range", "## Values from the paper",
                    "## Limitations", "## Citation"):
        assert section in card, (name, section)


def test_metric_path_loads_anywhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    vrs = evaluate.load(hf_real3d.metric_path("vrs"))
    out = vrs.compute(predictions=["a"], references=[["a"]], group_ids=["g"], rotations=[0])
    assert out["vrs"] == 100.0
    with pytest.raises(ValueError, match="Expected a metric"):
        hf_real3d.metric_path("bleu")


def _worker(rank, cache_dir, preds, refs, gids, rots, q):
    os.environ["HF_EVALUATE_OFFLINE"] = "1"
    m = evaluate.load(hf_real3d.metric_path("vrs"), num_process=2, process_id=rank,
                      experiment_id="dist-test", cache_dir=cache_dir)
    half = slice(rank, None, 2)  # every group is split across the two processes
    m.add_batch(predictions=preds[half], references=refs[half], group_ids=gids[half],
                rotations=rots[half])
    q.put((rank, m.compute()))


def test_add_batch_across_processes(tmp_path):
    preds = ["left", "x", "chair", "two", "left", "right", "y", "2"]
    refs = [["left"], ["back"], ["chair"], ["2"], ["left"], ["right"], ["table"], ["two"]]
    gids = [1, 1, 2, 2, 3, 3, 4, 4]
    rots = [0, 90, 0, 90, 0, 90, 0, 90]
    single = evaluate.load(hf_real3d.metric_path("vrs")).compute(
        predictions=preds, references=refs, group_ids=gids, rotations=rots)
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(r, str(tmp_path), preds, refs, gids, rots, q))
             for r in (0, 1)]
    for p in procs:
        p.start()
    results = dict(q.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=60)
    assert results[1] is None  # only process 0 returns the result
    assert results[0] == single
