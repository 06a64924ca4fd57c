"""Dataclass fields with help text, for options parsed with ``HfArgumentParser``'s rules
(``hf_real3d._argparse.DataclassParser`` for the CLI, ``HfArgumentParser`` for recipes)."""

from __future__ import annotations

from dataclasses import field
from typing import Any


def help_field(text: str, *, choices: Any = None, **kw: Any) -> Any:
    """``dataclasses.field`` whose ``help`` metadata the parser shows (``default=...``,
    ``default_factory=...``, ``kw_only=...`` pass through; ``choices``: a closed option set,
    as trl's ``metadata={"choices": [...]}``)."""
    meta: dict[str, Any] = {"help": text}
    if choices is not None:
        meta["choices"] = list(choices)
    return field(metadata=meta, **kw)
