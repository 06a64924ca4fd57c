"""Reading Real-3DQA prediction files: every bad file is an error naming the file, the line or the
id; byte-order marks, CRLF and identical repeats give the clean numbers."""

import json
import sys
from pathlib import Path

import pytest
from helpers.data import perfect_predictions
from helpers.errors import one_line_error
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hf_real3d._io import FormatError
from hf_real3d.cli import main as cli
from hf_real3d.real3dqa import load_references, score_predictions
from hf_real3d.real3dqa.predictions import load_predictions
from hf_real3d.scoring import MetricInputError

BIN = Path(sys.executable).parent
Q = "v1_balanced_questions_test_scannetv2.json"
A = "v1_balanced_sqa_annotations_test_scannetv2.json"


def test_jsonl_errors_name_the_line(tmp_path):
    f = tmp_path / "p.jsonl"
    lines = [json.dumps({"question_id": i, "prediction": "x"}) for i in range(120)]
    lines[99] = '{"question_id": 99, "prediction": '
    f.write_text("\n".join(lines))
    with pytest.raises(FormatError, match="line 100, column"):
        load_predictions(f)
    lines[99] = json.dumps({"prediction": "x"})
    f.write_text("\n".join(lines))
    with pytest.raises(FormatError, match="line 100 lacks question_id"):
        load_predictions(f)


def test_an_id_given_twice_in_an_object_is_an_error(tmp_path):
    f = tmp_path / "p.json"
    f.write_text('{"220602000017": "left", "220602000018": "two", "220602000017": "right"}')
    with pytest.raises(FormatError, match="question_id 220602000017 is given twice "
                                          r"\('left' and 'right'\)"):
        load_predictions(f)


def test_file_name_viewpoint_against_id_suffix(real_dir, tmp_path, capsys):
    rot = json.loads((real_dir / "real3dqa" / "rotation_270.json").read_text())["questions"]
    f = tmp_path / "rotation_90.json"
    f.write_text(json.dumps([{"question_id": q["question_id"], "response_pred": "yes",
                              "response_gt": ["yes"]} for q in rot]))
    assert cli(["evaluate", "--dataset", str(real_dir / "real3dqa"), "--predictions",
                f"m={f}", "--out", str(tmp_path / "o")]) == 2
    one_line_error(capsys, str(f), "file name says 90 degrees", "suffix 03 (270 degrees)")


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                HealthCheck.function_scoped_fixture])
@given(bom=st.booleans(), crlf=st.booleans(), kind=st.sampled_from(["jsonl", "json", "object"]))
def test_bom_and_crlf_give_the_clean_numbers(real_dir, tmp_path_factory, bom, crlf, kind):
    refs = load_references(real_dir / "sqa3d")
    perfect = perfect_predictions(refs)
    rows = [{"question_id": int(q), "prediction": p if i % 3 else "wrong"}
            for i, (q, p) in enumerate(zip(perfect.question_id, perfect.prediction))]
    if kind == "jsonl":
        text = "\n".join(json.dumps(r) for r in rows)
    elif kind == "json":
        text = json.dumps([{**r, "response_pred": r.pop("prediction")} for r in rows], indent=1)
    else:
        text = json.dumps({str(r["question_id"]): r["prediction"] for r in rows}, indent=1)
    tmp = tmp_path_factory.mktemp("enc")
    name = f"preds.{'jsonl' if kind == 'jsonl' else 'json'}"
    (tmp / "clean").mkdir()
    (tmp / "odd").mkdir()
    clean, odd = tmp / "clean" / name, tmp / "odd" / name
    clean.write_bytes(text.encode())
    odd.write_bytes((b"\xef\xbb\xbf" if bom else b"") +
                    (text.replace("\n", "\r\n") if crlf else text).encode())
    a = score_predictions(refs, load_predictions(clean)).metrics
    b = score_predictions(refs, load_predictions(odd)).metrics
    assert a == b and 0 < a["original"]["em"] < 100


def test_identical_repeats_count_once_and_equal_the_clean_numbers(real_dir, tmp_path):
    """The contract's rule for repeats: an identical repeated row is counted once (with a
    note in the report); a repeat with another answer is an error."""
    refs = load_references(real_dir / "sqa3d")
    perfect = perfect_predictions(refs)
    clean = score_predictions(refs, perfect).metrics
    doubled = score_predictions(refs, pd_concat(perfect, perfect.iloc[:50])).metrics
    assert {k: v for k, v in doubled.items() if k != "notices"} == \
        {k: v for k, v in clean.items() if k != "notices"}
    assert any("50 repeated predictions" in n for n in doubled["notices"])
    other = perfect.iloc[:1].assign(prediction="something else")
    with pytest.raises(MetricInputError, match="different answers"):
        score_predictions(refs, pd_concat(perfect, other))


def pd_concat(*frames):
    import pandas as pd

    return pd.concat(frames, ignore_index=True)


@settings(max_examples=10, deadline=None)
@given(ids=st.lists(st.integers(10**11, 10**12), min_size=2, max_size=8, unique=True),
       dup=st.integers(0, 7), where=st.integers(0, 8))
def test_any_repeated_id_in_an_object_is_named(tmp_path_factory, ids, dup, where):
    qid = ids[dup % len(ids)]
    pairs = [(str(i), f"a{i}") for i in ids]
    pairs.insert(where % (len(pairs) + 1), (str(qid), "other"))
    f = tmp_path_factory.mktemp("dup") / "p.json"
    f.write_text("{" + ", ".join(f'"{k}": "{v}"' for k, v in pairs) + "}")
    with pytest.raises(FormatError, match=f"question_id {qid} is given twice"):
        load_predictions(f)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                HealthCheck.function_scoped_fixture])
@given(name_deg=st.sampled_from([0, 90, 180, 270]), suffix=st.sampled_from([1, 3]))
def test_renamed_viewpoint_files(real_dir, tmp_path_factory, name_deg, suffix):
    """An official per-viewpoint file named for one viewpoint with the ids of another is an
    error naming both; named for its own viewpoint it scores."""
    from hf_real3d.real3dqa import score_predictions as score
    from hf_real3d.real3dqa.predictions import read_model_prediction_columns
    from hf_real3d.real3dqa.references import reference_columns

    deg = {1: 90, 3: 270}[suffix]
    tmp = tmp_path_factory.mktemp("rename")
    files = []
    for file_deg, src_deg in ((0, 0), (name_deg, deg)):
        qs = json.loads((real_dir / "real3dqa" / f"rotation_{src_deg}.json").read_text())
        f = tmp / f"rotation_{file_deg}.json"
        f.write_text(json.dumps([{"question_id": q["question_id"], "response_pred": "yes",
                                  "response_gt": ["yes"]} for q in qs["questions"]]))
        files.append(str(f))
    refs = reference_columns(real_dir / "real3dqa")
    preds = read_model_prediction_columns("m=" + ",".join(dict.fromkeys(files)))
    if name_deg in (0, deg):  # 0: one file, ids of both viewpoints, named for neither
        if name_deg == deg:
            assert score(refs, preds, allow_missing=True).metrics["predictions"] == len(preds)
        else:
            with pytest.raises(MetricInputError, match="file name says 0 degrees"):
                score(refs, preds, allow_missing=True)
    else:
        with pytest.raises(MetricInputError, match=f"rotation_{name_deg}.json: the file name "
                                                   f"says {name_deg} degrees but question_id "
                                                   f".* suffix 0{suffix}"):
            score(refs, preds, allow_missing=True)


def test_object_answers_with_a_number_name_the_id(tmp_path):
    from hf_real3d.real3dqa.predictions import read_prediction_columns

    f = tmp_path / "answers.json"
    f.write_text('{"220602000000": "two", "220602000001": 3}')
    with pytest.raises(FormatError, match=r"answers\.json: question_id 220602000001: the answer "
                                          r"is int 3; .* needs a string answer"):
        read_prediction_columns(f)


def test_latin1_predictions_name_the_file_and_line(tmp_path):
    from hf_real3d.real3dqa.predictions import read_prediction_columns

    f = tmp_path / "preds.jsonl"
    f.write_bytes(b'{"question_id": 1, "prediction": "chair"}\n'
                  b'{"question_id": 2, "prediction": "caf\xe9"}\n')
    with pytest.raises(FormatError, match=r"preds\.jsonl: line 2 is not UTF-8 text \(byte 0xe9\)"):
        read_prediction_columns(f)


def test_a_model_name_given_twice_is_an_error(built_release, tmp_path, capsys):
    src, preds = built_release
    assert cli(["evaluate", "--dataset", str(src), "--predictions", f"modelA={preds}",
                f"modelA={preds}", "--out", str(tmp_path / "o")]) == 2
    one_line_error(capsys, "'modelA' is given twice", f"modelA={preds}")
    assert not (tmp_path / "o").exists()
