"""Real-ScanQA: ScanQA's format, the filter, the card, EM / refined EM, the captioning
metrics, the lmms-eval task, and a synthetic Real-ScanQA built and scored end to end."""

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from hf_real3d._io import FormatError
from hf_real3d.cli import main as cli
from hf_real3d.real_scanqa import (
    build_real_scanqa,
    caption_metrics,
    score_real_scanqa,
)
from hf_real3d.scanqa import read_scanqa

HAVE_JAVA = shutil.which("java") is not None


def _items(n=6, answers=True):
    out = []
    for i in range(n):
        it = {"question_id": f"val-scene00{i:02d}_00-{i}", "scene_id": f"scene00{i:02d}_00",
              "question": ["What color is the chair?", "Where is the lamp?",
                           "How many doors are there?"][i % 3],
              "object_ids": [i, i + 1], "object_names": ["chair", "chair"]}
        if answers:
            it["answers"] = [["brown", "dark brown"], ["on the table"], ["two"]][i % 3]
        out.append(it)
    return out


def test_reads_scanqa_as_released(tmp_path):
    p = tmp_path / "ScanQA_v1.0_val.json"
    p.write_text(json.dumps(_items()))
    df = read_scanqa(p)
    assert list(df.question_id)[:2] == ["val-scene0000_00-0", "val-scene0001_00-1"]
    assert df.answers[0] == ["brown", "dark brown"] and df.object_ids[0] == [0, 1]
    assert list(df.question_type[:3]) == ["what", "where", "how"]
    assert df.attrs["has_answers"]


def test_test_split_without_answers_loads_then_is_refused(tmp_path):
    p = tmp_path / "ScanQA_v1.0_test_wo_obj.json"
    items = _items(answers=False)
    for it in items:
        del it["object_ids"], it["object_names"]
    p.write_text(json.dumps(items))
    df = read_scanqa(p)
    assert not df.attrs["has_answers"] and df.answers.isna().all()
    preds = pd.DataFrame({"question_id": df.question_id, "prediction": "x"})
    with pytest.raises(FormatError, match="no answers .* cannot be filtered"):
        build_real_scanqa(p, tmp_path / "out", pairs=[("m", preds, preds)])
    assert not (tmp_path / "out").exists()
    with pytest.raises(FormatError, match="cannot be scored"):
        score_real_scanqa(df, preds)


@pytest.mark.parametrize("change,words", [
    (lambda d: d[2].update(answers="brown"), r"item 2 \(question_id val-scene0002_00-2\): "
                                             "answers is 'brown'"),
    (lambda d: d[1].update(object_ids=["a"]), r"item 1 .*object_ids is \['a'\]"),
    (lambda d: d[3].pop("question"), r"item 3 .*question is None"),
    (lambda d: d.append(dict(d[0])), "question_id 'val-scene0000_00-0' repeats item 0"),
    (lambda d: d[4].pop("answers"), "item 4 .*has no answers but others do"),
])
def test_bad_rows_are_named(tmp_path, change, words):
    data = _items()
    change(data)
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(data))
    with pytest.raises(FormatError, match=words):
        read_scanqa(p)


def _pairs(df):
    full = pd.DataFrame({"question_id": df.question_id,
                         "prediction": [a[0] for a in df.answers]})
    # the blind model answers the colour and count questions, not the "where" ones
    blind = full.assign(prediction=[p if not q.startswith("Where") else "nowhere"
                                    for p, q in zip(full.prediction, df.question)])
    return full, blind


def test_build_filters_and_writes_the_card(tmp_path):
    p = tmp_path / "val.json"
    p.write_text(json.dumps(_items(9)))
    df = read_scanqa(p)
    full, blind = _pairs(df)
    judge = full.assign(prediction=["two" if q.startswith("How") else "?" for q in df.question])
    s = build_real_scanqa(p, tmp_path / "rs", pairs=[("leo", full, blind)],
                          judges=[("llm", judge)])
    assert (s.questions, s.kept, s.removed) == (9, 3, 6)
    import datasets

    kept = datasets.load_dataset(str(tmp_path / "rs"), "real_scanqa", split="test")
    assert all(q.startswith("Where") for q in kept["question"])
    out = datasets.load_dataset(str(tmp_path / "rs"), "filtered_out", split="test")
    reasons = dict(zip(out["question"], out["reasons"]))
    assert reasons["What color is the chair?"] == ["pair:leo"]
    assert reasons["How many doors are there?"] == ["pair:leo", "judge:llm"]
    card = (tmp_path / "rs" / "README.md").read_text()
    assert "| where | 3 | 3 | 0 |" in card and "| what | 3 | 0 | 3 |" in card
    assert "no rotation" in card.lower() and "config_name: real_scanqa" in card
    assert s.per_type["how"] == {"questions": 3, "kept": 0}


def test_em_and_refined_em_by_hand(tmp_path):
    p = tmp_path / "val.json"
    p.write_text(json.dumps(_items(3)))
    refs = read_scanqa(p)
    preds = pd.DataFrame({"question_id": refs.question_id,
                          "prediction": ["Dark brown.", "table", ""]})
    m = score_real_scanqa(refs, preds, captions=False)
    # "dark brown" equals the second reference; "table" is inside "on the table"; "" neither
    assert m["em"] == pytest.approx(100 / 3) and m["em_refined"] == pytest.approx(200 / 3)
    leo = score_real_scanqa(refs, preds, captions=False, leo_compatible=True)
    assert leo["em_refined"] == pytest.approx(100.0)  # LEO counts an empty answer as refined
    assert m["per_type"]["where"] == {"n": 1, "em": 0.0, "em_refined": 100.0}


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_JAVA, reason="pycocoevalcap's tokenizer and METEOR run Java")
def test_captioning_metrics_equal_pycocoevalcap_on_known_pairs():
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.rouge.rouge import Rouge

    preds = ["brown chair", "left", "the lamp is on the table"]
    refs = [["the brown chair"], ["on the left", "left side"], ["on the table"]]
    m = caption_metrics(preds, refs)
    # the library itself, on the same tokens (lower-case, punctuation-free already)
    gts = {str(i): r for i, r in enumerate(refs)}
    res = {str(i): [p] for i, p in enumerate(preds)}
    assert m["bleu_1"] == pytest.approx(Bleu(4).compute_score(gts, res, verbose=0)[0][0] * 100)
    assert m["rouge_l"] == pytest.approx(Rouge().compute_score(gts, res)[0] * 100)
    assert m["cider"] == pytest.approx(Cider().compute_score(gts, res)[0] * 100)
    assert 0 < m["meteor"] < 100
    same = caption_metrics(["on the table"], [["on the table"]])
    assert same["bleu_1"] == pytest.approx(100.0) and same["rouge_l"] == pytest.approx(100.0)


@pytest.mark.slow
def test_synthetic_real_scanqa_end_to_end(tmp_path, capsys):
    """`hf-real3d synth` writes its room-level test questions in ScanQA's format; a (full,
    blind) pair filters them into Real-ScanQA; evaluate-real-scanqa scores it and the
    lmms-eval task points at it."""
    synth = tmp_path / "synth"
    assert cli(["synth", "--out", str(synth), "--train-scenes", "1", "--val-scenes", "1",
                "--test-scenes", "3", "--questions-per-scene", "40"]) == 0
    files = list((synth / "scanqa").glob("*.json"))
    assert [f.name for f in files] == ["ScanQA_v1.0_test.json"]
    df = read_scanqa(files[0])
    assert len(df) > 5 and not any(w in q for q in df.question for w in (" my ", " me?"))
    full, blind = _pairs(df)
    blind = full.assign(prediction=[p if q.startswith("What is") else "none"
                                    for p, q in zip(full.prediction, df.question)])
    for name, table in (("full", full), ("blind", blind)):
        table.to_json(tmp_path / f"{name}.jsonl", orient="records", lines=True)
    assert cli(["build-real-scanqa", "--scanqa", str(synth / "scanqa"), "--out",
                str(tmp_path / "rs"), "--full", f"m={tmp_path / 'full.jsonl'}", "--blind",
                f"m={tmp_path / 'blind.jsonl'}"]) == 0
    args = ["evaluate-real-scanqa", "--dataset", str(tmp_path / "rs"), "--predictions",
            f"m={tmp_path / 'full.jsonl'}", f"b={tmp_path / 'blind.jsonl'}", "--out",
            str(tmp_path / "report")]
    assert cli(args + ([] if HAVE_JAVA else ["--no_captions"])) == 0
    m = {r["model"]: r for r in json.loads((tmp_path / "report/metrics.json").read_text())}
    assert m["m"]["scanqa"]["em"] == 100.0 and m["m"]["real_scanqa"]["em"] == 100.0
    assert m["b"]["real_scanqa"]["em_refined"] < m["b"]["scanqa"]["em_refined"]
    assert m["b"]["real_scanqa"]["em"] == 0.0  # the filter removed every question b answers
    if HAVE_JAVA:
        assert m["m"]["scanqa"]["bleu_1"] == pytest.approx(100.0)
    assert "## real_scanqa" in (tmp_path / "report/report.md").read_text()
    assert cli(["lmms-tasks", "--out", str(tmp_path / "tasks"), "--real_scanqa",
                str(tmp_path / "rs")]) == 0
    task = (tmp_path / "tasks" / "hf_real3d_real_scanqa.yaml").read_text()
    assert "dataset_name: real_scanqa" in task and os.fspath(tmp_path / "rs") in task
    capsys.readouterr()
    assert cli(["evaluate-real-scanqa", "--dataset", str(tmp_path / "rs"), "--predictions",
                f"m={tmp_path / 'full.jsonl'}", f"m={tmp_path / 'blind.jsonl'}", "--out",
                str(tmp_path / "r2")]) == 2
    assert "given twice" in capsys.readouterr().err
    assert not Path(tmp_path / "r2").exists()
