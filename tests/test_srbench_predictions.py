"""Reading 3DSRBench answers: a byte-order mark reads as the clean file, and a result table that is
not one names the file."""

import sys
from pathlib import Path

import pytest

from hf_real3d._io import FormatError

BIN = Path(sys.executable).parent
Q = "v1_balanced_questions_test_scannetv2.json"
A = "v1_balanced_sqa_annotations_test_scannetv2.json"


def test_bom_in_3dsrbench_jsonl(tmp_path):
    from hf_real3d.srbench.predictions import load_srbench_predictions

    f = tmp_path / "p.jsonl"
    f.write_bytes(b"\xef\xbb\xbf" + b'{"qid": "q0", "prediction": "A"}\r\n'
                  b'{"qid": "q1", "prediction": "B"}\r\n')
    assert load_srbench_predictions(f"m={f}") == ("m", {(None, "q0"): "A", (None, "q1"): "B"})


@pytest.mark.parametrize("name,content,words", [
    ("empty.csv", b"", "not readable as a comma-separated table"),
    ("fake.xlsx", b"qid,prediction\nq0,A\n", "not readable as an Excel workbook"),
])
def test_result_tables_that_are_not_tables_name_the_file(tmp_path, name, content, words):
    from hf_real3d.srbench.predictions import load_srbench_predictions

    f = tmp_path / name
    f.write_bytes(content)
    with pytest.raises(FormatError, match=words) as err:
        load_srbench_predictions(f"m={f}")
    assert str(f) in str(err.value)


def test_latin1_answers_name_the_file_and_line(tmp_path):
    from hf_real3d.srbench.predictions import read_srbench_answers

    f = tmp_path / "p.jsonl"
    f.write_bytes(b'{"qid": "AAAAAAAA", "prediction": "A"}\n'
                  b'{"qid": "AAAAAAAB", "prediction": "caf\xe9"}\n')
    with pytest.raises(FormatError, match=r"p\.jsonl: line 2 is not UTF-8"):
        read_srbench_answers(f"m={f}")
