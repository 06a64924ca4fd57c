"""Process-wide state a command needs: the interruption a signal asked for (so that no
atomic write commits after SIGTERM or Ctrl-C, even when the handler's exception was
swallowed), and pausing the cyclic garbage collector while parsing large files."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["Terminated", "request_stop", "check_stop", "clear_stop", "no_gc"]


class Terminated(BaseException):
    """SIGTERM arrived (raised by the CLI's handler, so that every ``finally`` runs)."""


# The interruptions a signal handler asked for (KeyboardInterrupt, Terminated). A handler's
# exception raised while Python runs a finaliser (``__del__``, a weakref callback) is
# printed as "Exception ignored" and lost; recorded here, it still stops every atomic write
# from committing (:func:`check_stop`), and the CLI still exits 130 / 143.
_STOP: list[type[BaseException]] = []


def request_stop(kind: type[BaseException]) -> None:
    """Record that the process must stop, and raise ``kind`` (a signal handler's body)."""
    _STOP.append(kind)
    raise kind()


def check_stop() -> None:
    """Raise the interruption a signal asked for, if one did (even if its first raise was
    swallowed)."""
    if _STOP:
        raise _STOP[0]()


def clear_stop() -> None:
    """Forget a recorded interruption (between commands run in one process, as in tests)."""
    _STOP.clear()


@contextlib.contextmanager
def no_gc(*, freeze: bool = False) -> Iterator[None]:
    """The cyclic garbage collector paused: parsing a million small JSON objects otherwise
    triggers collections that rescan every object made so far (``bench/evaluate_load.py``
    measures it). Parsed JSON holds no cycles.

    ``freeze``: on exit, move every object alive to the collector's permanent generation
    (``gc.freeze``) so that none of them is scanned again; for one-shot commands, where the
    deferred collection would otherwise come at the next allocation or at exit."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        if was:
            gc.enable()
