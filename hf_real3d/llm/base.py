"""The backend interface (:class:`Backend`: one place replies come from, a server, a local
folder or Batch API files) and what every backend shares: decoding, a reply, the errors a
backend raises, the request key."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["LLMError", "Decoding", "Reply", "Prompt", "Backend", "first_json_object"]

#: a prompt: a chat (a list of {"role", "content"} messages) or plain text (a completion)
Prompt = list[dict[str, str]] | str


class LLMError(OSError):
    """A server, model or cache the client cannot use (one line naming it and the fix)."""


class FormatRefused(Exception):
    """The server refused the requested output format (HTTP 400/422 naming it)."""


class Fatal(Exception):
    """Every further request would fail the same way (a refused key): stop the run."""


class Stopped(Exception):
    """The run was asked to stop: no new request."""


class ItemError(Exception):
    """This item failed (its reason); the run goes on."""


@dataclass(frozen=True)
class Decoding:
    """How text is generated; part of every cache key."""

    temperature: float = 0.0
    seed: int = 0
    max_tokens: int = 128

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError(f"`temperature` {self.temperature}: expected 0 (greedy) or more")
        if self.max_tokens < 1:
            raise ValueError(f"`max_tokens` {self.max_tokens}: expected at least 1 token")


@dataclass
class Reply:
    """What a model answered to one request: its text, why it stopped (``stop``, ``length``:
    cut at ``max_tokens``) and the tokens it used (``prompt_tokens``, ``completion_tokens``)."""

    text: str
    finish_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)

    @property
    def cut(self) -> bool:
        return self.finish_reason == "length"

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "finish_reason": self.finish_reason, "usage": self.usage}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Reply:
        """The reply :meth:`to_dict` wrote; anything else (a null text, another schema) is a
        ``TypeError`` saying what it holds, never a reply."""
        if not isinstance(d, dict) or not isinstance(d.get("text"), str):
            raise TypeError(f"a reply has a string `text`, not {type(d).__name__} {d!r:.80}")
        if not isinstance(d.get("finish_reason"), str | None) or \
                not isinstance(d.get("usage"), dict | None):
            raise TypeError("a reply's `finish_reason` is a string or null and its `usage` an "
                            "object")
        return cls(d["text"], d.get("finish_reason"), dict(d.get("usage") or {}))


def first_json_object(text: str) -> Any:
    """The first JSON object in ``text`` ("Sure! {...}", a fenced block): reading it is
    parsing, not guessing. Raises ValueError when there is none."""
    dec = json.JSONDecoder()
    at = text.find("{")
    while at >= 0:
        try:
            value, _ = dec.raw_decode(text, at)
        except ValueError:
            at = text.find("{", at + 1)
            continue
        if isinstance(value, dict):
            return value
        at = text.find("{", at + 1)
    raise ValueError("no JSON object")


class Backend:
    """Where replies come from; every backend has these methods (a subclass fills
    :meth:`ask_many`, :meth:`identity` and :meth:`describe`). ``tag`` (``llm_cache_tag``)
    joins every request's key; ``stop`` set: no new request; ``formats``: whether it takes
    ``response_format``, else why not; ``batches_prompts``: it generates many prompts in one
    call (a local model) rather than keeping requests in flight."""

    formats: bool | str = True
    batches_prompts = False

    def __init__(self, tag: str | None = None):
        self.tag = tag
        self.stop = threading.Event()
        self._local = threading.local()  # what this thread's last call sent

    def identity(self) -> dict[str, Any]:
        """What names the model in a request's key (route, model, what the server says)."""
        raise NotImplementedError

    def key(self, prompt: Prompt, d: Decoding, response_format: dict | None = None) -> str:
        """The request's key: the cache's file name and a batch file's ``custom_id``."""
        ident = {**self.identity(), **({"tag": self.tag} if self.tag else {})}
        blob = json.dumps({"model": ident, "prompt": prompt, "decoding": asdict(d),
                           **({"format": response_format} if response_format else {})},
                          sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    def describe(self) -> dict[str, Any]:
        """What a card records: the model and where it ran (no key)."""
        raise NotImplementedError

    def default_concurrency(self) -> tuple[int, str]:
        """(requests in flight or prompts per batch, why) when the user gives none."""
        return 8, "the default"

    def check(self, say: Callable[[str], None]) -> None:
        """Fail before any work when the model cannot be used."""

    def prepare(self) -> None:
        """What a dry run needs, checked without asking."""

    def served(self) -> dict[str, Any]:
        """What :meth:`check` learnt of the model (the cache keeps it for a dry run)."""
        return {}

    def assume(self, served: dict[str, Any]) -> None:
        """Take what an earlier :meth:`check` learnt (:meth:`served`)."""

    def body(self, prompt: Prompt, d: Decoding, response_format: dict | None) -> dict:
        """The request as a dry run shows it."""
        return {"prompt": prompt, **asdict(d)}

    def lookup(self, prompt: Prompt, d: Decoding, response_format: dict | None
               ) -> Reply | None:
        """A reply already at hand, asking nothing (the cache, a batch file's results)."""
        return None

    def ask_many(self, prompts: Sequence[Prompt], d: Decoding, response_format: dict | None
                 ) -> list[Reply]:
        """One reply per prompt. Raises :class:`ItemError` (these prompts failed),
        :class:`FormatRefused`, :class:`Fatal` or :class:`Stopped`."""
        raise NotImplementedError

    def requests_sent(self) -> int:
        """Requests (retries included) or generations of this thread's last :meth:`ask_many`."""
        return getattr(self._local, "count", 0)
