"""Bad input never becomes a silent number, a traceback, or a half-written folder."""

import copy
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hf_real3d._io import FormatError, atomic_dir, remove_stale_temporaries
from hf_real3d.cli import main as cli
from hf_real3d.real3dqa import load_references, read_release, score_predictions
from hf_real3d.real3dqa.predictions import load_predictions
from hf_real3d.scoring import MetricInputError
from hf_real3d.sqa3d import read_split
from hf_real3d.srbench import read_tsv, score_rows, write_tsv

BIN = Path(sys.executable).parent
Q = "v1_balanced_questions_test_scannetv2.json"
A = "v1_balanced_sqa_annotations_test_scannetv2.json"


# --- real files, mutated: an error or the very same numbers -------------------------------


def _perfect(refs):
    return refs[refs.rotation_deg == 0].assign(
        prediction=[a[0] for a in refs[refs.rotation_deg == 0].answers])[
        ["question_id", "rotation_deg", "prediction"]]


@pytest.fixture(scope="module")
def sqa3d_truth(real_dir):
    refs = load_references(real_dir / "sqa3d")
    return refs, score_predictions(refs, _perfect(refs)).metrics


def _mutate(data: dict, key: str, rng_pick) -> tuple[dict, tuple[str, ...]]:
    """A copy of ``data`` with one field of one item deleted (or one key inside a field);
    also the names an error about it must give (the field, or the field and its key)."""
    data = copy.deepcopy(data)
    items = data[key]
    item = items[rng_pick[0] % len(items)]
    path = sorted(item)
    field = path[rng_pick[1] % len(path)]
    if isinstance(item[field], dict) and item[field] and rng_pick[2] % 2:
        sub = sorted(item[field])
        gone = sub[rng_pick[2] % len(sub)]
        del item[field][gone]
        return data, (field, gone)
    del item[field]
    return data, (field,)


def _assert_named(err: Exception, file_name: str, deleted: tuple[str, ...] | None) -> None:
    """A refused file's error names the file and where: the line or byte of a truncated
    file, the field of a deleted one."""
    msg = str(err)
    assert file_name in msg, msg
    if deleted is None:
        assert re.search(r"line \d+|byte \d+", msg), msg
    else:
        assert any(repr(name) in msg or f"{name} " in msg for name in deleted), (deleted, msg)


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
        data, deleted = _mutate(json.loads(target.read_text()),
                                "questions" if which == Q else "annotations", pick)
        target.write_text(json.dumps(data))
    try:
        refs = load_references(folder)
    except FormatError as err:
        _assert_named(err, which, deleted)
        return
    got = score_predictions(refs, _perfect(refs0), allow_missing=True).metrics
    assert got["original"]["em_refined"] == truth["original"]["em_refined"]
    assert got["original"]["n"] == truth["original"]["n"]


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
        data, deleted = _mutate(json.loads(target.read_text()), "questions", pick)
        target.write_text(json.dumps(data))
    try:
        got = read_release(folder)
    except FormatError as err:
        _assert_named(err, which, deleted)
        return
    want = release_truth
    key = ("question_id", "rotation_deg", "answers", "question_type")
    assert [tuple(str(r.get(k)) for k in key) for r in got.rotations] == \
        [tuple(str(r.get(k)) for k in key) for r in want.rotations]
    assert [(r["question_id"], r["answers"], r["question_type"]) for r in got.debiased] == \
        [(r["question_id"], r["answers"], r["question_type"]) for r in want.debiased]


# --- named errors ---------------------------------------------------------------------------


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


def _srb_rows(tmp_path):
    from hf_real3d.srbench import expand

    base = {"index": 0, "question": "Is the lamp on the left of the bed?", "A": "yes", "B": "no",
            "C": "", "D": "", "answer": "A", "category": "orientation_on_the_left",
            "image": "", "image_source": "synthetic", "image_url": ""}
    rows = []
    for i in range(3):
        r = dict(base, qid=f"Q000000{i}", index=i)
        r.update({"options": ["yes", "no"], "group": "orientation", "base_qid": f"Q000000{i}",
                  "flipped": False, "shift": 0, "circular_group": f"Q000000{i}",
                  "flip_group": f"Q000000{i}"})
        rows.append(r)
    return expand(rows)


def test_tsv_with_a_repeated_qid_is_an_error(tmp_path):
    rows = _srb_rows(tmp_path)
    write_tsv(rows + [rows[0]], tmp_path / "dup.tsv")
    with pytest.raises(FormatError, match=r"qid 'Q0000000' repeats row 0"):
        read_tsv(tmp_path / "dup.tsv", decode_images=False)


def test_one_rule_for_option_sets(tmp_path):
    """The evaluator and the circular_eval module reject the same rows."""
    rows = _srb_rows(tmp_path)
    bad = copy.deepcopy(rows)
    shifted = next(i for i, r in enumerate(bad) if r["shift"] == 1 and not r["flipped"])
    bad[shifted]["options"] = ["yes", "maybe"]
    with pytest.raises(MetricInputError, match="every shift must permute the same options"):
        score_rows(bad, ["A"] * len(bad))
    import evaluate

    import hf_real3d

    module = evaluate.load(hf_real3d.metric_path("circular_eval"))
    plain = [r for r in bad if not r["flipped"]]
    with pytest.raises(Exception, match="every shift must permute the same options"):
        module.compute(predictions=["A"] * len(plain), references=[r["answer"] for r in plain],
                       group_ids=[r["circular_group"] for r in plain],
                       shifts=[r["shift"] for r in plain], options=[r["options"] for r in plain],
                       categories=[r["category"] for r in plain])
    # a mirrored row without its original (VLMEvalKit stops on a KeyError there)
    unpaired = [r for r in rows if r["flipped"] or r["base_qid"] != "Q0000001"]
    with pytest.raises(MetricInputError, match=r"flipped qid 'Q0000001-flip' has no original"):
        score_rows(unpaired, ["A"] * len(unpaired))


def test_degenerate_predictions_are_warned(real_dir, tmp_path):
    refs = load_references(real_dir / "sqa3d")
    orig = refs[refs.rotation_deg == 0]
    everything = " ".join(sorted({a for ans in orig.answers for a in ans}))
    for preds, words in (([""] * len(orig), "are empty"), (["yes"] * len(orig), "same answer"),
                         ([everything] * len(orig), "answer lists")):
        m = score_predictions(refs, orig.assign(prediction=preds)[
            ["question_id", "rotation_deg", "prediction"]], leo_compatible=True).metrics
        assert any(words in w for w in m["warnings"]), (words, m["warnings"])
    good = score_predictions(refs, _perfect(refs)).metrics
    assert good["warnings"] == []


# --- the CLI: one line, exit codes, nothing half-done ---------------------------------------


def test_cli_errors_are_one_line_with_exit_2(tmp_path, capsys):
    assert cli(["evaluate", "--dataset", str(tmp_path / "none"), "--predictions",
                f"m={tmp_path}/p.jsonl", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("hf-real3d evaluate: error:")
    assert not (tmp_path / "out").exists()
    assert cli(["evaluate", "--debug", "--dataset", str(tmp_path / "none"), "--predictions",
                f"m={tmp_path}/p.jsonl", "--out", str(tmp_path / "out")]) == 2
    assert "Traceback" in capsys.readouterr().err


def test_failed_3dsrbench_evaluation_leaves_no_empty_out(tmp_path):
    assert cli(["evaluate-3dsrbench", "--dataset", str(tmp_path / "missing"), "--text_only",
                "none", "--out", str(tmp_path / "out")]) == 2
    assert not (tmp_path / "out").exists()


def test_stale_temporaries_of_dead_processes_are_removed(tmp_path):
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    stale = tmp_path / f".data.{p.pid}.abc.tmp"
    stale.mkdir()
    live = tmp_path / f".data.{os.getpid()}.xyz.tmp"
    live.mkdir()
    assert remove_stale_temporaries(tmp_path / "data") == [stale]
    assert live.exists() and not stale.exists()
    with atomic_dir(tmp_path / "data") as tmp:
        (tmp / "f").write_text("x")
    assert (tmp_path / "data/f").read_text() == "x"


@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signals_exit_cleanly_and_remove_temporaries(tmp_path, sig, code):
    out = tmp_path / "synth"
    # start it with both signals blocked, as a parent may leave them (the mask is
    # inherited): the CLI must unblock them itself
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        p = subprocess.Popen([str(BIN / "hf-real3d"), "synth", "--out", str(out),
                              "--train-scenes", "400", "--val-scenes", "0", "--test-scenes",
                              "0", "--workers", "1"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
    deadline = time.time() + 120
    while time.time() < deadline and not list(tmp_path.glob(".synth.*.tmp/scans/*")):
        time.sleep(0.2)
    assert list(tmp_path.glob(".synth.*.tmp")), "the build never started"
    p.send_signal(sig)
    _, err = p.communicate(timeout=120)
    assert p.returncode == code, (p.returncode, err[-2000:])  # the code names a late signal
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # no --out, no temporaries


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # on purpose
def test_a_termination_swallowed_by_a_finaliser_still_commits_nothing(tmp_path):
    """The flaky SIGTERM run's cause: Python runs a signal handler wherever the main thread
    is, and an exception raised while it runs a finaliser (``__del__``) is printed as
    "Exception ignored" and lost; the build then ran to completion. The handler records the
    request, so the atomic write refuses to commit and the CLI exits 143 all the same."""
    import gc

    from hf_real3d import cli as cli_module
    from hf_real3d._runtime import Terminated, clear_stop

    class Finalised:
        def __del__(self):
            cli_module._on_sigterm(signal.SIGTERM, None)  # as if the signal landed here

    clear_stop()
    try:
        with pytest.raises(Terminated):
            with atomic_dir(tmp_path / "out") as tmp:
                (tmp / "f").write_text("x")
                obj = Finalised()
                del obj  # the handler's exception is swallowed here ...
                gc.collect()
                (tmp / "g").write_text("y")  # ... and the block goes on to its end
        assert list(tmp_path.iterdir()) == []  # yet nothing was committed
    finally:
        clear_stop()


def test_unreachable_hub_is_one_line(real_dir, tmp_path):
    env = dict(os.environ, HF_ENDPOINT="http://127.0.0.1:9", HF_TOKEN="hf_x",
               HF_HUB_OFFLINE="0", HF_HUB_DISABLE_XET="1",
               HF_DATASETS_CACHE=str(tmp_path / "dsc"))
    p = subprocess.run([str(BIN / "hf-real3d"), "import-real3dqa", "--release",
                        str(real_dir / "real3dqa"), "--out", str(tmp_path / "r3"),
                        "--push_to_hub", "org/r3"], env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("hf-real3d import-real3dqa: error: push") and \
        "http://127.0.0.1:9 could not be reached" in last


def test_entry_points_bound_openmp_spinning():
    """The CLI and the recipes set GOMP_SPINCOUNT before torch loads (unless the user set
    it): beside another CPU job, OpenMP's default spinning made a demo 10x slower."""
    import subprocess
    import sys
    from pathlib import Path

    code = ("import os, sys; import hf_real3d.cli; "
            "print(os.environ['GOMP_SPINCOUNT'], 'torch' in sys.modules)")
    env = {k: v for k, v in os.environ.items() if k != "GOMP_SPINCOUNT"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.split() == ["1000", "False"], out.stderr[-2000:]
    out = subprocess.run([sys.executable, "-c", code], env={**env, "GOMP_SPINCOUNT": "7"},
                         capture_output=True, text=True)
    assert out.stdout.split()[0] == "7"
    root = Path(__file__).resolve().parents[1]
    for recipe in ("sft", "blind_ft", "3drft", "predict"):
        text = (root / "recipes" / f"{recipe}.py").read_text()
        first_torch_user = min(text.index(m) for m in ("hf_real3d.training", "hf_real3d.real3dqa")
                               if m in text)
        assert text.index("bound_openmp_spinning()") < first_torch_user, recipe


# --- round 2: stale caches, conflicts, encodings, errors that name their file ---------------


@pytest.fixture(scope="module")
def built_release(real_dir, tmp_path_factory):
    """The official release imported as a dataset folder, and perfect JSONL predictions of
    its rotations config."""
    import datasets

    root = tmp_path_factory.mktemp("built")
    assert cli(["import-real3dqa", "--release", str(real_dir / "real3dqa"), "--out",
                str(root / "rel")]) == 0
    rot = datasets.load_dataset(str(root / "rel"), "rotations", split="test")
    preds = root / "preds.jsonl"
    preds.write_text("\n".join(json.dumps({"question_id": r["question_id"],
                                           "rotation_deg": r["rotation_deg"],
                                           "prediction": r["answers"][0]}) for r in rot))
    return root / "rel", preds


def _groups(out: Path) -> int:
    m = json.loads((out / "metrics.json").read_text())
    return m["models"][0]["rotation"]["n_groups"] if "models" in m else \
        next(iter(m.values()))["rotation"]["n_groups"]


def _one_line_error(capsys, *parts):
    """The error is one line, the last on stderr (progress bars of datasets may precede
    it), with no traceback."""
    err = capsys.readouterr().err.strip().splitlines()
    errors = [line for line in err if "error:" in line]
    assert len(errors) == 1 and err[-1] == errors[0] and "Traceback" not in "\n".join(err), err
    for p in parts:
        assert p in errors[0], (p, errors[0])
    return errors[0]


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
    _one_line_error(capsys, str(shard), "content changed since the folder was built")
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
    _one_line_error(capsys, str(card), "other row counts than its card records")


def test_malformed_card_yaml_names_the_card(built_release, tmp_path, capsys):
    src, preds = built_release
    folder = tmp_path / "rel"
    shutil.copytree(src, folder)
    card = folder / "README.md"
    text = card.read_text()
    card.write_text(text.replace("configs:", "configs: [unclosed", 1))
    assert cli(["evaluate", "--dataset", str(folder), "--predictions", f"m={preds}",
                "--out", str(tmp_path / "o")]) == 2
    _one_line_error(capsys, str(card), "malformed YAML header", "line ")


def test_a_model_name_given_twice_is_an_error(built_release, tmp_path, capsys):
    src, preds = built_release
    assert cli(["evaluate", "--dataset", str(src), "--predictions", f"modelA={preds}",
                f"modelA={preds}", "--out", str(tmp_path / "o")]) == 2
    _one_line_error(capsys, "'modelA' is given twice", f"modelA={preds}")
    assert not (tmp_path / "o").exists()


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
    _one_line_error(capsys, str(f), "file name says 90 degrees", "suffix 03 (270 degrees)")


def test_recipe_yaml_key_twice_and_list_for_a_scalar(tmp_path):
    from hf_real3d.training.args import parse_recipe_args

    cfg = tmp_path / "r.yaml"
    cfg.write_text("learning_rate: 0.001\nseed: 1\nlearning_rate: 0.01\n")
    with pytest.raises(FormatError, match=r"r.yaml: line 3: key 'learning_rate' is set twice "
                                          r"\(first at line 1\)"):
        parse_recipe_args(["--config", str(cfg)])
    cfg.write_text("lr_scheduler_type: [cosine]\n")
    with pytest.raises(TypeError, match=r"r.yaml: lr_scheduler_type: expected .* but got "
                                        r"\['cosine'\] \(list\)"):
        parse_recipe_args(["--config", str(cfg)])


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                HealthCheck.function_scoped_fixture])
@given(bom=st.booleans(), crlf=st.booleans(), kind=st.sampled_from(["jsonl", "json", "object"]))
def test_bom_and_crlf_give_the_clean_numbers(real_dir, tmp_path_factory, bom, crlf, kind):
    refs = load_references(real_dir / "sqa3d")
    perfect = _perfect(refs)
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


def test_lmms_tasks_for_a_folder_that_does_not_exist(tmp_path, capsys):
    for flag in ("--real3dqa", "--srbench"):
        assert cli(["lmms-tasks", "--out", str(tmp_path / "tasks"), flag,
                    str(tmp_path / "nowhere")]) == 2
        _one_line_error(capsys, "nowhere: no such dataset folder")
        assert not (tmp_path / "tasks").exists()


def test_identical_repeats_count_once_and_equal_the_clean_numbers(real_dir, tmp_path):
    """The contract's rule for repeats: an identical repeated row is counted once (with a
    note in the report); a repeat with another answer is an error."""
    refs = load_references(real_dir / "sqa3d")
    perfect = _perfect(refs)
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


def test_tsv_circular_group_with_different_options_is_refused_at_build(tmp_path, capsys):
    rows = _srb_rows(tmp_path)
    shifted = next(i for i, r in enumerate(rows) if r["shift"] == 1 and not r["flipped"])
    rows[shifted]["options"] = ["yes", "maybe"]
    rows[shifted]["A"], rows[shifted]["B"] = "maybe", "yes"
    rows[shifted]["answer"] = "B"
    import base64
    import io

    from PIL import Image

    png = io.BytesIO()
    Image.new("RGB", (8, 8)).save(png, format="PNG")
    for r in rows:
        r["image"] = base64.b64encode(png.getvalue()).decode()
    write_tsv(rows, tmp_path / "bad.tsv")
    with pytest.raises(FormatError, match="bad.tsv: circular group 'Q0000000'.*same options"):
        read_tsv(tmp_path / "bad.tsv", decode_images=False)
    assert cli(["build-3dsrbench", "--tsv", str(tmp_path / "bad.tsv"), "--scenes", "2", "--out",
                str(tmp_path / "out")]) == 2
    _one_line_error(capsys, "bad.tsv", "circular group 'Q0000000'")
    assert not (tmp_path / "out").exists()


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


@settings(max_examples=10, deadline=None)
@given(keys=st.lists(st.sampled_from(["learning_rate", "seed", "num_train_epochs",
                                      "weight_clip", "epsilon"]), min_size=2, max_size=6),
       bom=st.booleans())
def test_any_yaml_key_set_twice_is_named(tmp_path_factory, keys, bom):
    from hf_real3d.training.args import parse_recipe_args

    values = {"learning_rate": 0.001, "seed": 1, "num_train_epochs": 2.0, "weight_clip": 5.0,
              "epsilon": 0.001}
    cfg = tmp_path_factory.mktemp("yaml") / "r.yaml"
    cfg.write_bytes((b"\xef\xbb\xbf" if bom else b"") +
                    "".join(f"{k}: {values[k]}\n" for k in keys).encode())
    repeated = [k for i, k in enumerate(keys) if k in keys[:i]]
    if repeated:
        first = keys.index(repeated[0]) + 1
        with pytest.raises(FormatError, match=f"key '{repeated[0]}' is set twice "
                                              f"\\(first at line {first}\\)"):
            parse_recipe_args(["--config", str(cfg)])
    else:
        _, args = parse_recipe_args(["--config", str(cfg)])
        assert all(getattr(args, k) == values[k] for k in keys)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                HealthCheck.function_scoped_fixture])
@given(name_deg=st.sampled_from([0, 90, 180, 270]), suffix=st.sampled_from([1, 3]))
def test_renamed_viewpoint_files(real_dir, tmp_path_factory, name_deg, suffix):
    """An official per-viewpoint file named for one viewpoint with the ids of another is an
    error naming both; named for its own viewpoint it scores."""
    from hf_real3d.real3dqa import score_predictions as score
    from hf_real3d.real3dqa.evaluate import reference_columns
    from hf_real3d.real3dqa.predictions import read_model_prediction_columns

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
