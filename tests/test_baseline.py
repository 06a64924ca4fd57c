"""evaluate-3dsrbench's text-only row is the stress test on the scored set itself: held-out
answers of a text-only diagnostic, carried to every option order and the mirror."""

import json

import pytest
from helpers.data import three_question_srbench

from hf_real3d.cli import main
from hf_real3d.debias.baseline import text_only_answers
from hf_real3d.srbench.evaluate import score_rows


def _rows(n=40):
    """Expanded rows: 'lamp' questions are answered 'yes', 'chair' ones 'no' (a text cue),
    each with its two option orders and a mirror of both."""
    rows = []
    for i in range(n):
        obj, ans = ("lamp", "yes") if i % 2 else ("chair", "no")
        base = f"Q{i:07d}"
        for flipped in (False, True):
            for shift, opts in enumerate((["yes", "no"], ["no", "yes"])):
                qid = base + ("-flip" if flipped else "") + (f"-{shift}" if shift else "")
                rows.append({"qid": qid, "base_qid": base, "flipped": flipped, "shift": shift,
                             "question": f"Is the {obj} on the left?", "options": opts,
                             "answer": "ABCD"[opts.index(ans)],
                             "category": "orientation_on_the_left"})
    return rows


def test_held_out_answers_follow_the_text_cue_across_orders_and_mirrors():
    rows = _rows()
    letters = text_only_answers(rows, folds=4)
    # one answer text per question, whatever the order of its options
    picked = {}
    for r, letter in zip(rows, letters):
        text = r["options"]["ABCD".index(letter)]
        assert picked.setdefault(r["base_qid"], text) == text
    # the cue is learnt from the other folds: every row right
    assert all(letter == r["answer"] for r, letter in zip(rows, letters))
    s = score_rows(rows, letters)
    assert s["vanilla"]["overall"] == s["circular"]["overall"] == 100.0


def test_a_set_too_small_for_its_folds_is_refused_naming_the_fix():
    with pytest.raises(ValueError, match="3 questions for 5 folds"):
        text_only_answers(_rows(3), folds=5)


def test_evaluate_3dsrbench_reports_the_stress_test_row(tmp_path):
    folder = three_question_srbench(tmp_path / "srb")
    out = tmp_path / "rep"
    assert main(["evaluate-3dsrbench", "--dataset", str(folder), "--text_only_folds", "2",
                 "--out", str(out)]) == 0
    m = json.loads((out / "metrics.json").read_text())
    row = m["synthetic_common"]["text-only (stress test, rf)"]
    assert row["n"] == m["synthetic_common"]["always-A"]["n"] == 16
    assert "text-only prior" not in m["synthetic_common"]  # no synthetic renders here
    # too few questions for 5 folds: the report says why the row is absent
    out5 = tmp_path / "rep5"
    assert main(["evaluate-3dsrbench", "--dataset", str(folder), "--out", str(out5)]) == 0
    report = (out5 / "report.md").read_text()
    assert "no text-only (stress test, rf) row" in report and "--text_only_folds" in report


def test_too_few_folds_are_refused_before_any_work(tmp_path, capsys):
    out = tmp_path / "rep"
    assert main(["evaluate-3dsrbench", "--dataset", str(tmp_path / "missing"),
                 "--text_only_folds", "1", "--out", str(out)]) == 2
    assert "--text_only_folds 1: expected at least 2" in capsys.readouterr().err
    assert not out.exists()
