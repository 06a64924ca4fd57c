"""The CLI's option parser follows HfArgumentParser's rules without importing transformers."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import typing
from dataclasses import dataclass, field

import pytest
from transformers import HfArgumentParser

from hf_real3d._argparse import DataclassParser
from hf_real3d.cli import COMMANDS


def _actions(parser) -> dict[str, tuple]:
    return {opt: (a.dest, a.default, a.required, a.nargs, a.const, a.help,
                  getattr(a.type, "__name__", a.type), type(a).__name__)
            for a in parser._actions for opt in a.option_strings if opt not in ("-h", "--help")}


def _sample_argv(cls, only_required: bool = False) -> list[str]:
    """A value for every field (or only those without a default): other than the default
    where the type allows."""
    hints = typing.get_type_hints(cls)
    argv = []
    for f in dataclasses.fields(cls):
        if only_required and (f.default is not dataclasses.MISSING
                              or f.default_factory is not dataclasses.MISSING):
            continue
        tp = hints[f.name]
        inner = [a for a in typing.get_args(tp) if a is not type(None)] or [tp]
        inner = inner[0]
        if f.metadata.get("choices"):  # a closed set: a choice other than the default
            argv += [f"--{f.name}", next(c for c in f.metadata["choices"] if c != f.default)]
        elif inner is bool:
            argv += [f"--{f.name}", "false" if f.default is True else "true"]
        elif typing.get_origin(inner) is list:
            argv += [f"--{f.name}", "a=1", "b=2"]
        elif inner is int:
            argv += [f"--{f.name.replace('_', '-')}", "7"]
        elif inner is float:
            argv += [f"--{f.name}", "0.25"]
        else:
            argv += [f"--{f.name}", "some/path"]
    return argv


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_parses_as_hf_argument_parser_does(name):
    cls = COMMANDS[name].options()
    ours, theirs = DataclassParser(cls), HfArgumentParser(cls)
    assert _actions(ours) == _actions(theirs)
    argv = _sample_argv(cls)
    assert ours.parse_into_dataclass(argv) == theirs.parse_args_into_dataclasses(args=argv)[0]
    base = _sample_argv(cls, only_required=True)
    assert ours.parse_into_dataclass(base) == theirs.parse_args_into_dataclasses(args=base)[0]


def test_bool_forms_and_errors():
    @dataclass
    class Opts:
        out: str = field(metadata={"help": "where"})
        fast: bool = False
        keep: bool = True
        maybe: bool | None = None
        n: int | None = None
        tags: list[str] = field(default_factory=list)
        exact: bool = field(default=False, metadata={"aliases": ["--leo_compatible"]})

    p = DataclassParser(Opts)
    assert p.parse_into_dataclass(["--out", "x"]) == Opts("x")
    o = p.parse_into_dataclass(["--out", "x", "--fast", "--no-keep", "--maybe", "no", "--n", "3",
                                "--tags", "a", "b", "--leo_compatible"])
    assert o == Opts("x", True, False, False, 3, ["a", "b"], True)
    assert p.parse_into_dataclass(["--out", "x", "--fast", "false"]).fast is False
    with pytest.raises(ValueError, match=r"not used by the parser: \['--nope'\]"):
        p.parse_into_dataclass(["--out", "x", "--nope"])
    with pytest.raises(SystemExit):  # argparse's own usage error: the required option
        p.parse_into_dataclass([])

    @dataclass
    class Bad:
        mapping: dict[str, int] = field(default_factory=dict)

    with pytest.raises(TypeError, match=r"Bad.mapping: option type .* not supported"):
        DataclassParser(Bad)


def test_python_dash_m_gives_the_exit_code(tmp_path):
    """`python -m hf_real3d.cli` (a real process: the module's exit code is what is tested;
    the other tests call main in process): an input error exits 2 with one line."""
    p = subprocess.run([sys.executable, "-m", "hf_real3d.cli", "review-stats",
                        str(tmp_path / "nothing")], capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr[-2000:]
    assert p.stderr.strip().splitlines()[-1].startswith("hf-real3d review-stats: error:")


def test_cli_import_does_not_import_transformers():
    code = "import sys, hf_real3d.cli; print('transformers' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_help_texts_quote_no_measured_figure():
    """Option help is read long after a measurement: figures live in the README, which is
    regenerated from the run it describes (a help text once said "EM 0 with refined EM 35"
    and "1.5x slower" after the demo had changed)."""
    import dataclasses
    import re

    from hf_real3d.demo import DemoConfig
    from hf_real3d.training import ReweightedConfig
    from hf_real3d.training.args import ScriptArguments

    quoted = []
    for cls in (DemoConfig, ScriptArguments, ReweightedConfig):
        for f in dataclasses.fields(cls):
            text = f.metadata.get("help", "")
            if re.search(r"\bmeasured\b[^.;]*\d|\d+(\.\d+)?x (slower|faster)|\bEM \d", text):
                quoted.append(f"{cls.__name__}.{f.name}: {text}")
    assert not quoted, quoted


def test_demo_docstring_names_its_modes():
    """`hf-real3d demo --help` (from the module's docstring) names every mode of the run."""
    import hf_real3d.demo.run as run

    for flag in ("--seeds", "--srbench_model", "--skip_real3dqa"):
        assert flag in run.__doc__, flag
