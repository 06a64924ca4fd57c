"""The Real-3DQA release reader on damaged files: truncated or with a field deleted, an error
naming the file and where."""

import json
import shutil
import sys
from pathlib import Path

import pytest
from helpers.data import assert_named, mutate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hf_real3d._io import FormatError
from hf_real3d.real3dqa import read_release

BIN = Path(sys.executable).parent
Q = "v1_balanced_questions_test_scannetv2.json"
A = "v1_balanced_sqa_annotations_test_scannetv2.json"


@pytest.fixture(scope="module")
def release_truth(real_dir):
    return read_release(real_dir / "real3dqa")


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(which=st.sampled_from(["de-biased_testset_with_question_type.json", "rotation_0.json",
                              "rotation_90.json", "rotation_180.json"]),
       cut=st.floats(0.0, 0.999),
       pick=st.tuples(st.integers(0, 10**6), st.integers(0, 50), st.integers(0, 50)),
       truncate=st.booleans())
def test_release_truncations_and_deletions(real_dir, release_truth, tmp_path_factory, which,
                                           cut, pick, truncate):
    folder = tmp_path_factory.mktemp("release")
    for f in (real_dir / "real3dqa").iterdir():
        shutil.copy(f, folder / f.name)
    target = folder / which
    deleted = None
    if truncate:
        raw = target.read_bytes()
        target.write_bytes(raw[:int(len(raw) * cut)])
    else:
        data, deleted = mutate(json.loads(target.read_text()), "questions", pick)
        target.write_text(json.dumps(data))
    try:
        got = read_release(folder)
    except FormatError as err:
        assert_named(err, which, deleted)
        return
    want = release_truth
    key = ("question_id", "rotation_deg", "answers", "question_type")
    assert [tuple(str(r.get(k)) for k in key) for r in got.rotations] == \
        [tuple(str(r.get(k)) for k in key) for r in want.rotations]
    assert [(r["question_id"], r["answers"], r["question_type"]) for r in got.debiased] == \
        [(r["question_id"], r["answers"], r["question_type"]) for r in want.debiased]
