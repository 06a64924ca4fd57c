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


@pytest.mark.slow
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


@pytest.mark.parametrize("name", hf_real3d.METRICS)
def test_direct_compute_equals_the_arrow_path(name):
    """compute(all inputs) skips evaluate's Arrow round trip; add_batch + compute() takes
    it; both give the same result (each module, with and without per-row extras)."""
    if name == "vrs":
        inputs = dict(predictions=["left", "x", "chair", "two"],
                      references=[["left"], ["back"], ["chair"], ["2"]],
                      group_ids=[1, 1, 2, 2], rotations=[0, 90, 0, 90])
    elif name == "circular_eval":
        inputs = dict(predictions=["A", "B", "(B)", "A"], references=["A", "A", "B", "B"],
                      group_ids=["q1", "q1", "q2", "q2"], shifts=[0, 1, 0, 1],
                      options=[["yes", "no"], ["no", "yes"], ["up", "down"], ["down", "up"]],
                      categories=["height_higher"] * 2 + ["location_above"] * 2)
    else:
        inputs = dict(predictions=["A", "B", "A", "A"], references=["A", "B", "A", "B"],
                      group_ids=["q1", "q1", "q2", "q2"], flipped=[False, True, False, True],
                      options=[["left", "right"]] * 4,
                      categories=["orientation_on_the_left"] * 4)
    m = evaluate.load(hf_real3d.metric_path(name))
    missing = [n for n in m._feature_names() if n not in inputs]
    assert not missing, missing
    direct = m.compute(**inputs)
    m2 = evaluate.load(hf_real3d.metric_path(name))
    m2.add_batch(**inputs)
    assert m2.compute() == direct
    with pytest.raises(ValueError, match="Mismatch in the number of rows"):
        m.compute(**{**inputs, "predictions": inputs["predictions"][:-1]})


def test_vrs_module_em_is_evaluates_em():
    """One name, one number (issue 39): the module's `em` is `hf-real3d evaluate`'s EM, over
    the original view's rows; every row's is `em_all_rows`."""
    import evaluate
    import pandas as pd

    import hf_real3d
    from hf_real3d.real3dqa.evaluate import score_predictions

    qids, rots, refs, preds = [], [], [], []
    for q in range(6):
        for d in (0, 90, 180, 270):
            qids.append(q)
            rots.append(d)
            refs.append([f"a{q}{d}"])
            preds.append(f"a{q}{d}" if (d == 0 and q < 4) or (d == 90 and q < 1) else "x")
    out = evaluate.load(hf_real3d.metric_path("vrs")).compute(
        predictions=preds, references=refs, group_ids=qids, rotations=rots)
    table = pd.DataFrame({"question_id": qids, "rotation_deg": rots, "answers": refs,
                          "question_type": "t", "in_debiased": False, "in_rotation": True})
    ours = score_predictions(table, pd.DataFrame({"question_id": qids, "rotation_deg": rots,
                                                  "prediction": preds}), name="m")
    assert out["em"] == pytest.approx(ours.metrics["original"]["em"]) == 4 / 6 * 100
    assert out["em_all_rows"] == pytest.approx(5 / 24 * 100)
