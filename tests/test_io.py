"""Atomic writes: temporaries of dead processes are removed, and an interruption swallowed by a
finaliser still commits nothing; written files follow the umask; --out never an input."""

import os
import re
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from hf_real3d._io import atomic_dir, remove_stale_temporaries

BIN = Path(sys.executable).parent
Q = "v1_balanced_questions_test_scannetv2.json"
A = "v1_balanced_sqa_annotations_test_scannetv2.json"


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


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # on purpose
def test_a_termination_swallowed_by_a_finaliser_still_commits_nothing(tmp_path):
    """The flaky SIGTERM run's cause: Python runs a signal handler wherever the main thread
    is, and an exception raised while it runs a finaliser (``__del__``) is printed as
    "Exception ignored" and lost; the build then ran to completion. The handler records the
    request, so the atomic write refuses to commit and the CLI exits 143 all the same."""
    import gc

    from hf_real3d._runtime import Terminated, clear_stop
    from hf_real3d.cli import dispatch as cli_module

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


@pytest.mark.parametrize("mask", [0o022, 0o002])
def test_written_files_and_folders_follow_the_umask(tmp_path, mask):
    """mkstemp/mkdtemp make 0600 files and 0700 folders; what the library writes follows the
    umask as open() and mkdir() do (a colleague can read a shared review folder or release)."""
    from hf_real3d._io import atomic_dir, umask, write_json, write_jsonl

    old = os.umask(mask)
    try:
        assert umask() == mask and os.umask(mask) == mask  # read without changing it
        write_json(tmp_path / "a.json", {"x": 1})
        write_jsonl(tmp_path / "b.jsonl", [{"x": 1}])
        with atomic_dir(tmp_path / "rel") as tmp:
            (tmp / "sub").mkdir()
            (tmp / "sub/c.txt").write_text("c")
            write_json(tmp / "d.json", [])
        modes = {p.relative_to(tmp_path).as_posix(): stat.S_IMODE(p.stat().st_mode)
                 for p in tmp_path.rglob("*")}
    finally:
        os.umask(old)
    assert modes == {"a.json": 0o666 & ~mask, "b.jsonl": 0o666 & ~mask,
                     "rel": 0o777 & ~mask, "rel/sub": 0o777 & ~mask,
                     "rel/sub/c.txt": 0o666 & ~mask, "rel/d.json": 0o666 & ~mask}


def test_out_apart_from_every_input(tmp_path):
    from hf_real3d._io import check_out

    (tmp_path / "data/sub").mkdir(parents=True)
    for out, why in ((tmp_path / "data", "is the input dataset"),
                     (tmp_path / "data/sub", "lies inside the input dataset"),
                     (tmp_path, "holds the input dataset")):
        with pytest.raises(ValueError, match=f"out {re.escape(str(out))} {why}"):
            check_out(out, dataset=tmp_path / "data", reviews=None)
    # the command line names its flags
    with pytest.raises(ValueError, match="--out .* is the input --dataset"):
        check_out(tmp_path / "data", prefix="--", dataset=tmp_path / "data")
    assert check_out(tmp_path / "other", dataset=tmp_path / "data") == tmp_path / "other"
