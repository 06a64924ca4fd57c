"""`hf-real3d stress-test` on a user's own `datasets` data (issue 39): per-type baselines
within each type, the type not read unless asked, an id column, the kept subset in the input's
own form, and refusals of empty, null, mistyped and out-of-range inputs before any work."""

import json

import datasets
import pytest
from helpers.cli import run_cli

from hf_real3d.debias.run import run_stress_test


def _saved(tmp_path, n_scenes=8, per=12, answer=None, **columns):
    """A save_to_disk dataset: type 'colour' always answers 'red'; type 'count' answers
    'two' or 'three' at random; questions name their type."""
    import random

    rnd = random.Random(0)
    rows = []
    for s in range(n_scenes):
        for k in range(per):
            colour = k % 2 == 0
            rows.append({"uid": f"u{s}-{k}", "scene": f"s{s}",
                         "question": ("What colour is it" if colour else "How many are there")
                         + f" {rnd.random():.3f}?",
                         "answer": answer or ("red" if colour else rnd.choice(["two", "three"])),
                         "kind": "colour" if colour else "count"})
    for name, values in columns.items():
        for r, v in zip(rows, values):
            r[name] = v
    ds = datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)})
    ds.save_to_disk(str(tmp_path / "saved"))
    return tmp_path / "saved"


def _run(folder, out, **kw):
    from hf_real3d.debias.config import StressTestConfig

    kw.setdefault("question_column", ["question"])
    kw.setdefault("answer_column", "answer")
    kw.setdefault("group_by", "scene")
    kw.setdefault("type_column", "kind")
    return run_stress_test(StressTestConfig(dataset=str(folder), out=str(out), **kw),
                           log=lambda m: None)


def test_per_type_baselines_within_each_type_and_the_type_not_read(tmp_path):
    s = _run(_saved(tmp_path), tmp_path / "out", id_column="uid")
    per = s["solvability"]["per_type"]
    # colour: its own majority answer ('red') is always right; chance among its one answer
    assert per["colour"]["majority"] == 100.0 and per["colour"]["chance"] == 100.0
    assert per["count"]["chance"] == 50.0
    assert s["type_as_feature"] is False
    assert not any("qtype" in f["feature"] for f in s["features"])
    report = (tmp_path / "out/report.md").read_text()
    assert "is not one of the diagnostic's inputs" in report
    ids = [json.loads(x)["id"] for x in (tmp_path / "out/scores.jsonl").read_text().splitlines()]
    assert ids[:2] == ["u0-0", "u0-1"]
    s2 = _run(tmp_path / "saved", tmp_path / "out2", type_as_feature=True)
    assert s2["type_as_feature"] is True


@pytest.mark.slow
def test_prune_writes_the_kept_items_as_a_saved_dataset(tmp_path):
    s = _run(_saved(tmp_path), tmp_path / "out", prune=True, budget=0.2,
             round_fraction=0.1, margin=0.0)
    kept = datasets.load_from_disk(s["kept_written_to"])
    assert isinstance(kept, datasets.DatasetDict) and kept["test"].num_rows == s["final"]["kept"]
    assert kept["test"].column_names == ["uid", "scene", "question", "answer", "kind"]
    report = (tmp_path / "out/report.md").read_text()
    assert "Iterative bias pruning removed" in report and "| type | removed | of |" in report


def test_a_constant_answer_is_said(tmp_path):
    s = _run(_saved(tmp_path, answer="yes"), tmp_path / "out")
    assert "every item has the same answer ('yes')" in s["note"]
    assert "every item has the same answer" in (tmp_path / "out/report.md").read_text()


def _cli(*args):
    return run_cli("stress-test", *args)  # in process: the exit code and stderr are tested


COLS = ["--question-column", "question", "--answer-column", "answer", "--group-by", "scene"]


@pytest.mark.parametrize("args, message", [
    (["--prune", "--budget", "-0.1"], "--budget -0.1: expected a fraction"),
    (["--prune", "--round_fraction", "5"], "--round_fraction 5.0: expected a share"),
    (["--budget", "0.1"], "add --prune"),
    (["--folds", "1"], "--folds 1: expected at least 2"),
    (["--split", "train"], "no split 'train' (it has ['test'])"),
    (["--id-column", "nope"], "no column 'nope' for the item ids"),
])
def test_bad_options_are_refused_before_any_work(tmp_path, args, message):
    folder = _saved(tmp_path)
    p = _cli("--dataset", str(folder), "--out", str(tmp_path / "out"), *COLS, *args)
    assert p.returncode == 2 and message in p.stderr, p.stderr[-2000:]
    assert "Traceback" not in p.stderr and not (tmp_path / "out").exists()


def test_bad_data_is_named(tmp_path):
    folder = _saved(tmp_path, question=[None] + ["q?"] * 95)
    p = _cli("--dataset", str(folder), "--out", str(tmp_path / "out"), *COLS)
    assert p.returncode == 2 and "item 0" in p.stderr and "'question' is empty (null)" \
        in p.stderr
    empty = tmp_path / "empty"
    datasets.Dataset.from_dict({"question": [], "answer": [], "scene": []}).save_to_disk(
        str(empty))
    p = _cli("--dataset", str(empty), "--out", str(tmp_path / "out"), *COLS)
    assert p.returncode == 2 and "holds no items" in p.stderr and "Traceback" not in p.stderr
    (tmp_path / "file").write_text("x")
    p = _cli("--dataset", str(_saved(tmp_path / "b")), "--out", str(tmp_path / "file"), *COLS)
    assert p.returncode == 2 and "exists and is not a folder" in p.stderr
    assert (tmp_path / "file").read_text() == "x"
