"""The command line on bad input: one line on stderr with exit code 2, nothing half-written,
signals that exit cleanly, OpenMP spinning bounded before torch loads."""

import dataclasses
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.errors import one_line_error

from hf_real3d.cli import main as cli

BIN = Path(sys.executable).parent
Q = "v1_balanced_questions_test_scannetv2.json"
A = "v1_balanced_sqa_annotations_test_scannetv2.json"


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


def test_entry_points_bound_openmp_spinning():
    """Importing hf_real3d sets GOMP_SPINCOUNT before torch loads (unless the user set it),
    so the CLI and the recipes do: beside another CPU job, OpenMP's default spinning made a
    demo 10x slower."""
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
    # the recipes: their first import is hf_real3d's (its package bounds the spinning), and
    # no import of torch or transformers comes before it
    root = Path(__file__).resolve().parents[1]
    for recipe in ("sft", "blind_ft", "3drft", "3drft_vlm", "predict"):
        heads = [line for line in (root / "recipes" / f"{recipe}.py").read_text().splitlines()
                 if line.startswith(("import ", "from ")) and not line.startswith(
                     ("from __future__", "import dataclasses", "import json", "import sys",
                      "from pathlib", "from dataclasses"))]
        assert heads[0].startswith("from hf_real3d"), (recipe, heads[:2])
        assert not any(h.split()[1].split(".")[0] in ("torch", "transformers", "trl", "peft",
                                                      "accelerate") for h in heads), recipe


def test_lmms_tasks_for_a_folder_that_does_not_exist(tmp_path, capsys):
    for flag in ("--real3dqa", "--srbench"):
        assert cli(["lmms-tasks", "--out", str(tmp_path / "tasks"), flag,
                    str(tmp_path / "nowhere")]) == 2
        one_line_error(capsys, "nowhere: no such dataset folder")
        assert not (tmp_path / "tasks").exists()


# commands that write but read no file or folder: nothing to protect
_NO_INPUT = {"synth", "demo"}


def _writing_commands():
    """Every command whose options have an --out and an input, with its options dataclass."""
    from hf_real3d.cli import COMMANDS

    out = []
    for name, cmd in COMMANDS.items():
        cls = cmd.options()
        if "out" in {f.name for f in dataclasses.fields(cls)} and name not in _NO_INPUT:
            out.append((name, cls))
    return out


def _argv(cls, inputs: Path, out: str) -> list[str]:
    """Arguments that fill every required option of ``cls`` with ``inputs`` (a folder that
    exists) and give ``--out``."""
    argv = ["--out", out]
    for f in dataclasses.fields(cls):
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        if f.name == "out" or not required:
            continue
        if "str" not in str(f.type):
            value = "1"  # a number the command needs (draw's question id)
        else:
            value = f"m={inputs}" if "list" in str(f.type) else str(inputs)
        argv += [f"--{f.name}", value]
    return argv


@pytest.mark.parametrize("name", [n for n, _ in _writing_commands()])
def test_out_is_never_an_input_nor_inside_one(name, tmp_path, capsys):
    """Every command that writes refuses an --out that is one of its inputs, lies inside one
    or holds one, before any work: the input is left as it was."""
    cls = dict(_writing_commands())[name]
    src = tmp_path / "input"
    src.mkdir()
    (src / "keep.txt").write_text("x")
    required = [f for f in dataclasses.fields(cls) if f.name != "out"
                and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    extra = []
    if not [f for f in required if "str" in str(f.type)]:  # no required input: give one
        names = {f.name: f for f in dataclasses.fields(cls)}
        opt = next(n for n in ("dataset", "sqa3d", "release", "tsv", "srbench")
                   if n in names and "str" in str(names[n].type))
        extra = [f"--{opt}", str(src)]
    cases = [str(src), str(src / "inner")]
    if name != "draw":  # one picture written: only the same path is refused
        cases.append(str(tmp_path))
    for out in cases if name != "draw" else cases[:1]:
        argv = [name, *_argv(cls, src, out), *extra]
        assert cli(argv) == 2, (name, out)
        err = capsys.readouterr().err.strip().splitlines()
        assert err and "--out" in err[-1] and "input" in err[-1], (name, err)
        assert sorted(p.name for p in src.iterdir()) == ["keep.txt"], name


def test_a_missing_extra_inside_a_progress_bar_is_the_last_line(tmp_path, capsys, monkeypatch):
    """Issue 56: an error raised while a progress bar runs (a missing extra while synth writes
    its scenes) is printed on a line of its own, after the bar is closed, and nothing is
    redrawn after it."""
    import gc

    from hf_real3d._extras import MissingExtraError
    from hf_real3d.synth import build

    def needs_open3d(*args, **kwargs):
        raise MissingExtraError("writing scenes needs open3d, which is not installed: "
                                "pip install 'hf-real3d[scenes]'", name="open3d")

    monkeypatch.setattr(build, "write_scannet", needs_open3d)
    assert cli(["synth", "--out", str(tmp_path / "synth"), "--train-scenes", "2",
                "--val-scenes", "0", "--test-scenes", "0", "--workers", "1"]) == 2
    gc.collect()  # a bar left open would be redrawn when collected
    line = one_line_error(capsys, "pip install 'hf-real3d[scenes]'")
    assert line.startswith("hf-real3d synth: error:"), line
    assert list(tmp_path.iterdir()) == []


def test_explore_without_the_app_extra_prints_only_the_error(tmp_path, capsys, monkeypatch):
    """Issue 56: the [app] extra is checked before anything is loaded or printed."""
    import importlib.util

    real_find = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "gradio" else real_find(name, *a))
    assert cli(["explore", "--dataset", str(tmp_path)]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err.strip().splitlines() == [
        "hf-real3d explore: error: hf-real3d explore needs gradio, which is not installed: "
        "pip install 'hf-real3d[app]'"]
