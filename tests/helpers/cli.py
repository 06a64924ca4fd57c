"""``hf-real3d`` run in this process: the command's exit code, stdout and stderr, as a
finished subprocess would give them, without starting Python, importing the package and the
datasets stack again (a second or more each). For the tests where the process itself is not
what is tested; a signal, the console script or a server still gets a real process."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
from pathlib import Path


def run_cli(*args, env: dict | None = None, cwd: str | Path | None = None
            ) -> subprocess.CompletedProcess:
    """``hf-real3d *args`` in process: a ``CompletedProcess`` with ``returncode`` (``main``'s
    return value, or the code of an argparse exit), ``stdout`` and ``stderr`` (text).
    ``env``: variables set for the call only; ``cwd``: the working folder for the call."""
    from hf_real3d.cli import main

    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    saved = {k: os.environ.get(k) for k in (env or {})}
    here = os.getcwd()
    try:
        os.environ.update({k: str(v) for k, v in (env or {}).items()})
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as stop:  # argparse: --help, a bad flag
                code = stop.code if isinstance(stop.code, int) else int(stop.code is not None)
                if isinstance(stop.code, str):
                    err.write(stop.code + "\n")
    finally:
        os.chdir(here)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return subprocess.CompletedProcess(["hf-real3d", *argv], code, out.getvalue(),
                                       err.getvalue())
