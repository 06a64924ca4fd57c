"""What the command families share: the command record."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Command:
    """One ``hf-real3d`` command: its one-line help, its options dataclass (a callable, so heavy
    options load lazily) and the function that runs it."""
    help: str
    options: Callable[[], type]  # the options dataclass (a callable so demo imports lazily)
    run: Callable[[Any], None]
