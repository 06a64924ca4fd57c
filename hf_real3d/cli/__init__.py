"""The ``hf-real3d`` command line: one module per family of commands (build, evaluate,
rotations, llm, stress, explore, demo) and the dispatcher (:mod:`hf_real3d.cli.dispatch`)."""

from hf_real3d.cli._common import Command
from hf_real3d.cli.dispatch import COMMANDS, main, parse, refuse_out_in_inputs

__all__ = ["COMMANDS", "Command", "main", "parse", "refuse_out_in_inputs"]
