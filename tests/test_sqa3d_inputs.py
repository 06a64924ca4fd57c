"""Bad SQA3D files: truncated or with a field deleted, an error naming the file and where, or the
very same numbers; one item validator for SQA3D and the release."""

import json
import shutil
import sys
from pathlib import Path

import pytest
from helpers.data import assert_named, mutate, perfect_predictions
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hf_real3d._io import FormatError
from hf_real3d.real3dqa import load_references, read_release, score_predictions
from hf_real3d.sqa3d import read_split

BIN = Path(sys.executable).parent
Q = "v1_balanced_questions_test_scannetv2.json"
A = "v1_balanced_sqa_annotations_test_scannetv2.json"


@pytest.fixture(scope="module")
def sqa3d_truth(real_dir):
    refs = load_references(real_dir / "sqa3d")
    return refs, score_predictions(refs, perfect_predictions(refs)).metrics


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(which=st.sampled_from([Q, A]), cut=st.floats(0.0, 0.999),
       pick=st.tuples(st.integers(0, 10**6), st.integers(0, 50), st.integers(0, 50)),
       truncate=st.booleans())
def test_sqa3d_truncations_and_deletions(real_dir, sqa3d_truth, tmp_path_factory, which, cut,
                                         pick, truncate):
    refs0, truth = sqa3d_truth
    folder = tmp_path_factory.mktemp("sqa3d")
    for name in (Q, A):
        shutil.copy(real_dir / "sqa3d" / name, folder / name)
    target = folder / which
    deleted = None
    if truncate:
        raw = target.read_bytes()
        target.write_bytes(raw[:int(len(raw) * cut)])
    else:
        data, deleted = mutate(json.loads(target.read_text()),
                                "questions" if which == Q else "annotations", pick)
        target.write_text(json.dumps(data))
    try:
        refs = load_references(folder)
    except FormatError as err:
        assert_named(err, which, deleted)
        return
    got = score_predictions(refs, perfect_predictions(refs0), allow_missing=True).metrics
    assert got["original"]["em_refined"] == truth["original"]["em_refined"]
    assert got["original"]["n"] == truth["original"]["n"]


def test_null_question_text_is_an_error(real_dir, tmp_path):
    for name in (Q, A):
        shutil.copy(real_dir / "sqa3d" / name, tmp_path / name)
    data = json.loads((tmp_path / Q).read_text())
    data["questions"][5]["question"] = None
    (tmp_path / Q).write_text(json.dumps(data))
    with pytest.raises(FormatError, match=r"question #5 question_id \d+: question is None, "
                                          "expected a string"):
        read_split(tmp_path, "test")
    del data["questions"][7]["question_id"]
    data["questions"][5]["question"] = "What?"
    (tmp_path / Q).write_text(json.dumps(data))
    with pytest.raises(FormatError, match=r"question #7 \(no id\) lacks \['question_id'\]"):
        read_split(tmp_path, "test")


def test_one_sqa3d_item_validator_for_sqa3d_and_the_release(real_dir, tmp_path):
    """SQA3D files and the Real-3DQA release go through the same item check: a non-finite
    position is refused by both (the release importer used to take it), with the same
    message naming the file, the item and the field."""
    import math as _math

    from hf_real3d.sqa3d import check_item

    sq = tmp_path / "sqa3d"
    sq.mkdir()
    for name in (Q, A):
        shutil.copy(real_dir / "sqa3d" / name, sq / name)
    data = json.loads((sq / A).read_text())
    data["annotations"][3]["position"]["y"] = float("nan")
    (sq / A).write_text(json.dumps(data))
    with pytest.raises(FormatError, match=r"annotation #3 question_id \d+: position .* NaN"):
        read_split(sq, "test")
    rel = tmp_path / "release"
    shutil.copytree(real_dir / "real3dqa", rel)
    target = rel / "rotation_90.json"
    data = json.loads(target.read_text())
    data["questions"][4]["position"]["x"] = _math.inf
    target.write_text(json.dumps(data, allow_nan=True))
    with pytest.raises(FormatError, match=r"rotation_90\.json: question #4 question_id \d+: "
                                          r"position .* NaN, an infinity"):
        read_release(rel)
    with pytest.raises(FormatError, match=r"f\.json: question #0 \(no id\) lacks"):
        check_item({"question": "q"}, "f.json", 0, ("question_id", "question"))
