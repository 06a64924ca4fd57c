"""Dataclass fields with help text, for options parsed with ``HfArgumentParser``'s rules
(``hf_real3d._argparse.DataclassParser`` for the CLI, ``HfArgumentParser`` for recipes)."""

from __future__ import annotations

from dataclasses import field
from typing import Any


def help_field(text: str, **kw: Any) -> Any:
    """``dataclasses.field`` whose ``help`` metadata the parser shows (``default=...``,
    ``default_factory=...``, ``kw_only=...`` pass through)."""
    return field(metadata={"help": text}, **kw)
