import json

import pytest

from hf_real3d._io import FormatError
from hf_real3d.sqa3d import (
    SQA3DRecord,
    question_type,
    read_split,
    read_sqa3d,
    summarize,
    write_sqa3d,
)


def test_real_test_split_counts(real_dir):
    recs = read_split(real_dir / "sqa3d", "test")
    s = summarize(recs)
    assert s["questions"] == 3519
    assert s["scenes"] == 67
    assert s["question_types"] == {"what": 1147, "is": 652, "how": 465, "can": 338,
                                   "which": 351, "other": 566}
    assert s["distinct_answers"] == 403
    r = next(r for r in recs if r.question_id == 220602000002)
    assert r.answers == ["piano"] and r.scene_id == "scene0050_00"


def test_real_test_split_roundtrip(real_dir, tmp_path):
    recs = read_split(real_dir / "sqa3d", "test")
    write_sqa3d(recs, tmp_path / "q.json", tmp_path / "a.json")
    again = read_sqa3d(tmp_path / "q.json", tmp_path / "a.json")
    assert [r.__dict__ for r in again] == [r.__dict__ for r in recs]


def test_question_type():
    assert question_type("What's on my left?") == "what"
    assert question_type("  Is the door open?") == "is"
    assert question_type("Are there chairs?") == "other"
    assert question_type("") == "other"


def _rec(qid=1, **kw):
    base = dict(question_id=qid, scene_id="scene0001_00", situation="s", question="What is it?",
                answers=["chair"], position={"x": 0.0, "y": 0.0, "z": 0.0},
                rotation={"_x": 0.0, "_y": 0.0, "_z": 0.0, "_w": 1.0})
    base.update(kw)
    return SQA3DRecord(**base)


def _write_pair(tmp_path, questions, annotations):
    q, a = tmp_path / "q.json", tmp_path / "a.json"
    q.write_text(json.dumps({"questions": questions}))
    a.write_text(json.dumps({"annotations": annotations}))
    return q, a


def test_bad_inputs_are_named(tmp_path):
    good = _rec()
    qj, aj = good.question_json(), good.annotation_json()
    # malformed JSON
    q, a = _write_pair(tmp_path, [qj], [aj])
    q.write_text('{"questions": [')
    with pytest.raises(FormatError, match=r"q.json: malformed JSON at line 1"):
        read_sqa3d(q, a)
    # question without annotation
    q, a = _write_pair(tmp_path, [qj, _rec(2).question_json()], [aj])
    with pytest.raises(FormatError, match="question_id 2 has no annotation"):
        read_sqa3d(q, a)
    # duplicate id
    q, a = _write_pair(tmp_path, [qj, qj], [aj])
    with pytest.raises(FormatError, match="duplicate question_id 1"):
        read_sqa3d(q, a)
    # non-unit / non-yaw quaternion
    bad = dict(aj, rotation={"_x": 0.0, "_y": 0.0, "_z": 0.0, "_w": 2.0})
    q, a = _write_pair(tmp_path, [qj], [bad])
    with pytest.raises(FormatError, match="question_id 1: rotation quaternion has norm"):
        read_sqa3d(q, a)
    bad = dict(aj, rotation={"_x": 0.6, "_y": 0.0, "_z": 0.0, "_w": 0.8})
    q, a = _write_pair(tmp_path, [qj], [bad])
    with pytest.raises(FormatError, match="not yaw-only"):
        read_sqa3d(q, a)
    # NaN position (json.dumps writes NaN, json.load reads it)
    bad = dict(aj, position={"x": float("nan"), "y": 0.0, "z": 0.0})
    q, a = _write_pair(tmp_path, [qj], [bad])
    with pytest.raises(FormatError, match="question_id 1: position .* NaN"):
        read_sqa3d(q, a)
    # unsafe scene id
    q, a = _write_pair(tmp_path, [dict(qj, scene_id="../etc")], [dict(aj, scene_id="../etc")])
    with pytest.raises(FormatError, match="unsafe or malformed scene id '../etc'"):
        read_sqa3d(q, a)


def test_write_is_atomic_on_error(tmp_path):
    with pytest.raises(FormatError, match="duplicate question_id 1"):
        write_sqa3d([_rec(1), _rec(1)], tmp_path / "q.json", tmp_path / "a.json")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError):
        write_sqa3d([_rec(1, position={"x": float("nan"), "y": 0, "z": 0})],
                    tmp_path / "q.json", tmp_path / "a.json")
    assert list(tmp_path.iterdir()) == []
