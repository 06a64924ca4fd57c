"""The reply cache, a wrapper around any backend (distilabel's ``use_cache``): every reply on
disk under its request's key (model, what the server says of it, the cache tag, prompt,
decoding, requested output format), one small file each, written atomically the moment it
arrives, so a rerun sends no request and gives the same output, and a run stopped midway keeps
every reply received. A folder holds one model's replies (``model.json`` names it)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hf_real3d._io import cache_root, read_json
from hf_real3d.llm.base import Backend, Decoding, LLMError, Prompt, Reply

__all__ = ["CachedBackend", "llm_cache_dir"]


def llm_cache_dir() -> Path:
    """Where responses are cached by default: ``llm/`` under :func:`hf_real3d._io.cache_root`
    (``$HF_REAL3D_CACHE``, else ``~/.cache/huggingface/hf_real3d``)."""
    return cache_root() / "llm"


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


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[-48:] or "model"


class CachedBackend:
    """``inner`` with its replies kept in ``folder`` (default: one per route, model and tag
    under :func:`llm_cache_dir`), one file per reply named by its key.
    What the cache does not change (key, describe, body, ...) is the inner backend's."""

    def __init__(self, inner: Backend, folder: str | os.PathLike | None = None):
        self.inner = inner
        ident = inner.identity()
        self.meta = {"route": ident["route"], "model": ident["model"],
                     **({"tag": inner.tag} if inner.tag else {})}
        if folder is None:
            h = hashlib.sha256(json.dumps(self.meta, sort_keys=True).encode()).hexdigest()[:12]
            folder = llm_cache_dir() / f"{_slug(self.meta['model'])}-{h}"
        self.folder = Path(folder)
        self._refuse_other()
        self._made = (self.folder / "model.json").is_file()
        self._lock = threading.Lock()
        self._dirs: set[str] = set()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _refuse_other(self) -> None:
        """A folder that holds another model's cache, or no cache, is refused."""
        meta = self.folder / "model.json"
        if meta.is_file():
            have = read_json(meta)
            if not isinstance(have, dict) or not isinstance(have.get("model"), str):
                raise LLMError(f"`llm_cache` {meta}: not a response cache's record of its model "
                               "(an object naming the model); give another cache folder")
            if have != self.meta:
                what = f"{have.get('model')!r} ({have.get('route')}" + (
                    f", tag {have['tag']!r}" if have.get("tag") else "") + ")"
                want = f"{self.meta['model']!r}" + (f" (tag {self.tag!r})" if self.tag else "")
                raise LLMError(f"`llm_cache` {self.folder}: a cache of the model {what}, not of "
                               f"{want}; give another cache folder")
        elif self.folder.is_dir() and any(self.folder.iterdir()):
            raise LLMError(f"`llm_cache` {self.folder}: not empty and not a response cache (no "
                           "model.json); give an empty or new folder")
        elif self.folder.exists() and not self.folder.is_dir():
            raise LLMError(f"`llm_cache` {self.folder}: a file, not a folder; give a folder")

    def check(self, say: Callable[[str], None]) -> None:
        self.inner.check(say)
        if self._made:
            write_kept(self.folder / "served.json", self.inner.served())

    def prepare(self) -> None:
        """The inner backend's, and what the last check learnt of the model (a dry run asks
        nothing, yet counts with the same keys)."""
        self.inner.prepare()
        try:
            self.inner.assume(json.loads((self.folder / "served.json").read_bytes()))
        except (OSError, ValueError, AttributeError):
            pass

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def lookup(self, prompt: Prompt, d: Decoding, response_format: dict | None
               ) -> Reply | None:
        key = self.key(prompt, d, response_format)
        if self._made and self._path(key).is_file():
            return self._entry(self._path(key), prompt)
        reply = self.inner.lookup(prompt, d, response_format)
        if reply is not None:  # a batch result joins the cache
            self._put(key, prompt, reply)
        return reply

    def _entry(self, path: Path, prompt: Prompt) -> Reply:
        """The reply cached at ``path``, as this client wrote it for ``prompt``: an entry of
        another schema, a null text, or another prompt's reply is refused naming the file,
        never used as an answer."""
        try:
            entry = json.loads(path.read_bytes())
            reply = Reply.from_dict(entry)
        except (ValueError, TypeError) as err:
            why = f"{err}"
        else:
            if entry.get("prompt", prompt) == prompt:
                return reply
            why = "the reply to another prompt than its key's"
        raise LLMError(f"`llm_cache` {path}: not a reply this client cached ({why}); delete "
                       "the file to ask again, or give another cache folder")

    def ask_many(self, prompts: Sequence[Prompt], d: Decoding, response_format: dict | None
                 ) -> list[Reply]:
        replies = self.inner.ask_many(prompts, d, response_format)
        for p, r in zip(prompts, replies):
            self._put(self.key(p, d, response_format), p, r)
        return replies

    def _put(self, key: str, prompt: Prompt, reply: Reply) -> None:
        if not self._made:
            with self._lock:  # made at the first reply: a refused run leaves no folder
                if not self._made:
                    self.folder.mkdir(parents=True, exist_ok=True)
                    if not (self.folder / "model.json").is_file():
                        write_kept(self.folder / "model.json", self.meta)
                    write_kept(self.folder / "served.json", self.inner.served())
                    self._made = True
        path = self._path(key)
        if key[:2] not in self._dirs:
            path.parent.mkdir(exist_ok=True)
            self._dirs.add(key[:2])
        write_kept(path, {**reply.to_dict(), "prompt": prompt})
