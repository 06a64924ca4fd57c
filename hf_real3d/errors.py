"""The errors the library raises for a user's input.

:class:`InputError` is every error about what a user gave: a file, a record in it, an
option's value, a combination of options. Its message names the file, the line or the item,
and the fix, in one line; every entry point (the ``hf-real3d`` commands, the recipes) prints
it as that one line and exits with code 2, with no traceback. It is a ``ValueError``, so code
that catches ``ValueError`` keeps working. A missing file or folder stays a
``FileNotFoundError``, which the entry points print the same way.
"""

from __future__ import annotations

__all__ = ["InputError", "FormatError"]


class InputError(ValueError):
    """A user's input (a file, a record, an option) that cannot be used; the message names
    where and the fix."""


class FormatError(InputError):
    """An input file or record that does not follow its documented format."""
