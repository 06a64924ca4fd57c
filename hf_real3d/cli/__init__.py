"""The ``hf-real3d`` command line: one module per family of commands (build, evaluate,
rotations, llm, stress, explore, demo, train) and the dispatcher
(:mod:`hf_real3d.cli.dispatch`).

Each command (a ``cmd_*`` function) imports the library modules it calls inside its body,
so that a command pays only for what it uses (``hf-real3d evaluate`` never loads torch,
and a missing extra is the one line naming it); said here once, for every ``cmd_*``."""

from hf_real3d.cli._common import Command
from hf_real3d.cli.dispatch import COMMANDS, main, parse, refuse_out_in_inputs

__all__ = ["COMMANDS", "Command", "main", "parse", "refuse_out_in_inputs"]
