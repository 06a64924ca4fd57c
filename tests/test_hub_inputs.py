"""Built dataset folders that were changed: a shard edited in place is never scored from a stale
cache, a shard without a content hash is read afresh, a malformed card names the card, an
unreachable Hub is one line."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from helpers.errors import one_line_error
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hf_real3d.cli import main as cli

BIN = Path(sys.executable).parent
Q = "v1_balanced_questions_test_scannetv2.json"
A = "v1_balanced_sqa_annotations_test_scannetv2.json"


def _groups(out: Path) -> int:
    m = json.loads((out / "metrics.json").read_text())
    return m["models"][0]["rotation"]["n_groups"] if "models" in m else \
        next(iter(m.values()))["rotation"]["n_groups"]


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                HealthCheck.function_scoped_fixture])
@given(edit=st.sampled_from(["truncate", "append", "flip"]), at=st.floats(0.05, 0.95),
       keep_mtime=st.booleans())
def test_a_shard_edited_in_place_is_never_scored(built_release, tmp_path_factory, capsys, edit,
                                                 at, keep_mtime):
    src, preds = built_release
    tmp = tmp_path_factory.mktemp("edit")
    folder = tmp / "rel"
    shutil.copytree(src, folder)
    assert cli(["evaluate", "--dataset", str(folder), "--predictions", f"m={preds}",
                "--out", str(tmp / "a")]) == 0
    shard = next((folder / "rotations").glob("*.parquet"))
    st_before = shard.stat()
    raw = bytearray(shard.read_bytes())
    k = int(len(raw) * at)
    if edit == "truncate":
        raw = raw[:k]
    elif edit == "append":
        raw += b"\0" * 16
    else:
        raw[k] ^= 0xFF
    shard.write_bytes(bytes(raw))
    if keep_mtime:
        os.utime(shard, ns=(st_before.st_atime_ns, st_before.st_mtime_ns))
    capsys.readouterr()
    assert cli(["evaluate", "--dataset", str(folder), "--predictions", f"m={preds}",
                "--out", str(tmp / "b")]) == 2
    one_line_error(capsys, str(shard), "content changed since the folder was built")
    assert not (tmp / "b").exists()


def test_a_shard_without_a_content_hash_is_read_afresh(built_release, tmp_path, capsys):
    """A shard named without its hash (a hand-made folder) is never taken from the cache:
    its answers changed in place, with its old modification time, change the score; rows
    cut from it disagree with the card's counts and are an error naming the card."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    src, preds = built_release
    folder = tmp_path / "rel"
    shutil.copytree(src, folder)
    shard = next((folder / "rotations").glob("*.parquet"))
    plain = shard.with_name("test.parquet")
    shard.rename(plain)
    card = folder / "README.md"
    card.write_text(card.read_text().replace(f"rotations/{shard.name}", "rotations/test.parquet"))

    def em(out):
        assert cli(["evaluate", "--dataset", str(folder), "--predictions", f"m={preds}",
                    "--out", str(tmp_path / out)]) == 0
        return json.loads((tmp_path / out / "metrics.json").read_text())

    before = em("a")
    table = pq.read_table(plain)
    st_before = plain.stat()
    answers = table.column("answers").to_pylist()
    changed = [["zzz"] if i % 2 else a for i, a in enumerate(answers)]
    pq.write_table(table.set_column(table.schema.get_field_index("answers"), "answers",
                                    pa.array(changed, type=table.schema.field("answers").type)),
                   plain)
    os.utime(plain, ns=(st_before.st_atime_ns, st_before.st_mtime_ns))
    after = em("b")
    assert json.dumps(before) != json.dumps(after)
    pq.write_table(table.slice(0, 400), plain)
    os.utime(plain, ns=(st_before.st_atime_ns, st_before.st_mtime_ns))
    capsys.readouterr()
    assert cli(["evaluate", "--dataset", str(folder), "--predictions", f"m={preds}",
                "--out", str(tmp_path / "c")]) == 2
    one_line_error(capsys, str(card), "other row counts than its card records")


def test_malformed_card_yaml_names_the_card(built_release, tmp_path, capsys):
    src, preds = built_release
    folder = tmp_path / "rel"
    shutil.copytree(src, folder)
    card = folder / "README.md"
    text = card.read_text()
    card.write_text(text.replace("configs:", "configs: [unclosed", 1))
    assert cli(["evaluate", "--dataset", str(folder), "--predictions", f"m={preds}",
                "--out", str(tmp_path / "o")]) == 2
    one_line_error(capsys, str(card), "malformed YAML header", "line ")


def test_unreachable_hub_is_one_line(real_dir, tmp_path):
    env = dict(os.environ, HF_ENDPOINT="http://127.0.0.1:9", HF_TOKEN="hf_x",
               HF_HUB_OFFLINE="0", HF_HUB_DISABLE_XET="1",
               HF_DATASETS_CACHE=str(tmp_path / "dsc"))
    # a real process: huggingface_hub reads HF_ENDPOINT and HF_HUB_OFFLINE when imported
    p = subprocess.run([str(BIN / "hf-real3d"), "import-real3dqa", "--release",
                        str(real_dir / "real3dqa"), "--out", str(tmp_path / "r3"),
                        "--push_to_hub", "org/r3"], env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("hf-real3d import-real3dqa: error: push") and \
        "http://127.0.0.1:9 could not be reached" in last


def test_an_empty_answer_in_a_release_file_is_refused(real_dir, tmp_path, capsys):
    """Issue 56: import-real3dqa (and every reader of release files) refuses an empty answer,
    naming the file and the item; an export of a repair that emptied one is not imported."""
    rel = tmp_path / "rel"
    shutil.copytree(real_dir / "real3dqa", rel)
    path = rel / "rotation_270.json"
    path.chmod(0o644)
    data = json.loads(path.read_text())
    data["questions"][4]["answers"] = [{"answer": "  ", "answer_confidence": "yes",
                                        "answer_id": 1}]
    path.write_text(json.dumps(data))
    qid = data["questions"][4]["question_id"]
    assert cli(["import-real3dqa", "--release", str(rel), "--out", str(tmp_path / "r3")]) == 2
    one_line_error(capsys, str(path), f"question_id {qid}", "answer 1 of 1 is empty")
    assert not (tmp_path / "r3").exists()
