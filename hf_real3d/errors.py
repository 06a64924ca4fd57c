"""The errors the library raises for a user's input.

:class:`InputError` is every error about what a user gave: a file, a record in it, an
option's value, a combination of options. Its message names the file, the line or the item,
and the fix, in one line; every entry point (the ``hf-real3d`` commands, the recipes) prints
it as that one line and exits with code 2, with no traceback. It is a ``ValueError``, so code
that catches ``ValueError`` keeps working. A missing file or folder stays a
``FileNotFoundError``, which the entry points print the same way.

A message names a Python argument in backquotes (`` `split` ``, `` `out` ``): what a Python
caller passed. An entry point that took it as a flag shows the flag instead
(:func:`as_flags`: ``--split``), so each reader is told about what they typed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["InputError", "FormatError", "as_flags"]

_ARGUMENT = re.compile(r"`([a-z][a-z0-9_]*)`")


class InputError(ValueError):
    """A user's input (a file, a record, an option) that cannot be used; the message names
    where and the fix."""


class FormatError(InputError):
    """An input file or record that does not follow its documented format."""


def as_flags(message: str, options: Iterable[str]) -> str:
    """``message`` with each backquoted argument that is one of ``options`` written as the
    command line's flag (`` `split` `` -> ``--split``)."""
    names = set(options)
    return _ARGUMENT.sub(lambda m: f"--{m.group(1)}" if m.group(1) in names else m.group(0),
                         message)
