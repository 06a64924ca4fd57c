"""The backend interface (:class:`Backend`: one place replies come from, a server, a local
folder or Batch API files) and what every backend shares: decoding, a reply, the errors a
backend raises, the request key and body."""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hf_real3d._io import cache_root

__all__ = ["LLMError", "Decoding", "Reply", "Prompt", "Backend", "llm_cache_dir",
           "first_json_object"]

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
        if self.temperature < 0 or self.max_tokens < 1:
            raise ValueError(f"`temperature` {self.temperature} must be >= 0 and `max_tokens` "
                             f"{self.max_tokens} >= 1")


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
        return cls(str(d["text"]), d.get("finish_reason"), dict(d.get("usage") or {}))


def llm_cache_dir() -> Path:
    """Where responses are cached by default: ``llm/`` under :func:`hf_real3d._io.cache_root`
    (``$HF_REAL3D_CACHE``, else ``~/.cache/huggingface/hf_real3d``)."""
    return cache_root() / "llm"


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


def request_body(model: str, prompt: Prompt, d: Decoding, response_format: dict | None
                 ) -> dict[str, Any]:
    """An OpenAI (chat) completion request's body."""
    body: dict[str, Any] = {"model": model, "temperature": d.temperature, "seed": d.seed,
                            "max_tokens": d.max_tokens}
    body["messages" if isinstance(prompt, list) else "prompt"] = prompt
    if response_format is not None:
        body["response_format"] = response_format
    return body


def err_text(err: Exception) -> str:
    """A server error's own message (the ``message`` of its JSON body when it has one)."""
    body = getattr(err, "body", None)
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        body = body["error"]
    msg = body.get("message") if isinstance(body, dict) else None
    if not isinstance(msg, str) or not msg:
        msg = getattr(err, "message", None) or str(err)
        msg = re.sub(r"^Error code: \d+ - ", "", str(msg))
    return " ".join(str(msg).split())[:200]


def not_completion(content: bytes, ctype: str, chat: bool) -> str | None:
    """Why a 200 reply's body is not a (chat) completion, or None."""
    try:
        body = json.loads(content)
    except ValueError:
        head = " ".join(content[:80].decode(errors="replace").split())
        kind = "an HTML page" if "html" in ctype or head.lstrip().startswith("<") else \
            f"not JSON ({ctype or 'no content type'})"
        return (f"HTTP 200 but not a completion: {kind}, {head!r}; a proxy or login portal "
                "may be answering in place of the server")
    if not isinstance(body, dict):
        return f"HTTP 200 but not a completion: a JSON {type(body).__name__}"
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return "HTTP 200 but the reply has no choices" + (
            f" (it says {err_text(Exception(json.dumps(body)))})" if body else "")
    first = choices[0]
    if chat:
        msg = first.get("message")
        if not isinstance(msg, dict) or not isinstance(msg.get("content"), str | None):
            return "HTTP 200 but the first choice has no message text"
    elif not isinstance(first.get("text"), str | None):
        return "HTTP 200 but the first choice has no text"
    return None


def reply_from_body(body: Any, chat: bool) -> Reply:
    """A :class:`Reply` from a (chat) completion's JSON body (checked by the caller)."""
    first = body["choices"][0]
    text = (first["message"].get("content") if chat else first.get("text")) or ""
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    return Reply(text.strip(), first.get("finish_reason"),
                 {k: int(usage[k]) for k in ("prompt_tokens", "completion_tokens")
                  if isinstance(usage.get(k), int)})


def write_kept(path: Path, obj: Any) -> None:
    """Write JSON atomically, even while the process stops: a reply received is kept (the
    library's ``write_json`` commits nothing once a signal asked to stop). The temporary
    file is this thread's own, made with the umask's permissions as ``open()`` does."""
    data = json.dumps(obj).encode()
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    try:
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


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
