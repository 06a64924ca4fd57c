"""One text-generation client for every step that asks a language model (the judge, rotation
rewriting), over any backend (:mod:`hf_real3d.llm.base`), never asking which it holds.

:class:`LLMClient` runs many prompts: what the backend holds (the cache, a batch file's
results) is not asked again; at most ``llm_concurrency`` requests in flight (or prompts per
batch); Ctrl-C or SIGTERM stops within seconds (no new request; the replies in flight for a
few seconds more are kept); ``max_failures`` failures in a row stop the run; a reply a step
cannot use may be asked again with the next seed (``llm_reask``); structured output is asked
when the step gives a schema, falling back as the server refuses. A progress bar shows the
work and the failures.
"""

from __future__ import annotations

import collections
import queue
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from tqdm.auto import tqdm

from hf_real3d._runtime import Terminated
from hf_real3d.llm.base import (
    Backend,
    Decoding,
    Fatal,
    FormatRefused,
    ItemError,
    LLMError,
    Prompt,
    Reply,
    Stopped,
)
from hf_real3d.llm.batch import write_requests
from hf_real3d.llm.cache import CachedBackend
from hf_real3d.llm.config import LLMConfig

__all__ = ["Generation", "LLMClient", "offline_step", "usage_totals"]

#: seconds a stopped run waits for the replies in flight (each is cached as it arrives)
STOP_GRACE = 3.0

#: a step's judgement of a reply: why item ``i``'s reply cannot be used, or None
Check = Callable[[int, Reply], str | None] | None


@dataclass
class Attempt:
    """One request made for an item (or found in the cache): its seed, the output format it
    asked for, the reply or the error, and why the step could not use the reply."""

    seed: int
    structured: str
    reply: Reply | None = None
    error: str | None = None
    reason: str | None = None
    cached: bool = False

    def to_dict(self) -> dict[str, Any]:
        r = self.reply
        return {"seed": self.seed, "structured": self.structured, "cached": self.cached,
                "finish_reason": r.finish_reason if r else None,
                "prompt_tokens": int(r.usage.get("prompt_tokens", 0)) if r else 0,
                "completion_tokens": int(r.usage.get("completion_tokens", 0)) if r else 0,
                "error": self.error, "reason": self.reason}


@dataclass
class Generation:
    """One prompt's outcome: the last reply's text (None when no reply came: ``error`` says
    why), ``reason`` when the step could not use it, and every attempt."""

    text: str | None
    error: str | None = None
    cached: bool = False
    attempts: list[Attempt] = field(default_factory=list)
    reason: str | None = None

    @property
    def reply(self) -> Reply | None:
        return self.attempts[-1].reply if self.attempts else None

    @property
    def finish_reason(self) -> str | None:
        return self.reply.finish_reason if self.reply else None

    @property
    def usage(self) -> dict[str, int]:
        """Tokens over every attempt."""
        out: dict[str, int] = collections.Counter()
        for a in self.attempts:
            if a.reply:
                out.update({k: int(v) for k, v in a.reply.usage.items()
                            if k in ("prompt_tokens", "completion_tokens")})
        return dict(out)

    @property
    def ok(self) -> bool:
        return self.text is not None and self.reason is None


@dataclass
class _Stats:
    requests: int = 0  # HTTP requests (retries included) or local generations
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0
    unusable: int = 0
    prompt_tokens: int = 0  # spent in this run (not the cache's)
    completion_tokens: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, **kw: int) -> None:
        with self.lock:
            for k, v in kw.items():
                setattr(self, k, getattr(self, k) + v)

    def as_dict(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in ("requests", "cache_hits", "retries", "failures",
                                              "unusable", "prompt_tokens",
                                              "completion_tokens")}


@dataclass
class _Item:
    index: int
    attempt: int = 0
    attempts: list[Attempt] = field(default_factory=list)


class _Formats:
    """The output formats a run asks for (``llm_structured``) and the ones the server refused
    so far (a refusal holds for the rest of the run)."""

    def __init__(self, setting: str, backend: Backend, say: Callable[[str], None]):
        self.setting, self.say = setting, say
        self.plain = backend.formats if isinstance(backend.formats, str) else None
        self.refused: dict[str, str] = {}  # mode -> the server's refusal
        self._lock = threading.Lock()

    def all(self) -> list[str]:
        if self.plain is not None or self.setting == "none":
            return ["none"]
        if self.setting == "auto":
            return ["json_schema", "json_object", "none"]
        return [self.setting]

    def modes(self, schema: dict | None) -> list[str]:
        return self.all() if schema is not None else ["none"]

    def now(self, modes: list[str]) -> str:
        with self._lock:
            return next((m for m in modes if m not in self.refused), "none")

    def refuse(self, mode: str, why: str) -> None:
        """Record that the server refused ``mode``."""
        with self._lock:
            if mode not in self.refused:
                self.refused[mode] = why
                nxt = next((m for m in self.all() if m not in self.refused), None)
                self.say(f"the server refused response_format {mode} ({why}); "
                         + (f"every item fails (--llm_structured {mode}; auto falls back)"
                            if nxt is None else f"asking with {nxt} from now on"
                            if nxt != "none" else "plain prompts for the rest of the run"))

    @staticmethod
    def response_format(mode: str, schema: dict | None) -> dict | None:
        if schema is None or mode == "none":
            return None
        if mode == "json_object":
            return {"type": "json_object"}
        return {"type": "json_schema", "json_schema": {"name": schema.get("title", "reply"),
                                                       "schema": schema, "strict": True}}

    def record(self, asked: bool) -> str:
        """What the record says of structured output this run."""
        if not asked:
            return "not requested"
        if self.plain is not None:
            return f"none ({self.plain})"
        if self.setting == "none":
            return "none (--llm_structured none)"
        modes = self.all()
        now = self.now(modes)
        refused = "; ".join(f"the server refused {m}: {why}" for m, why in self.refused.items())
        if all(m in self.refused for m in modes):  # one format asked for, refused
            return f"{modes[0]} ({refused}; the items asked with it failed)"
        return now + (f" ({refused}; plain prompts for the rest of the run)" if refused and
                      now == "none" else f" ({refused})" if refused else "")


class LLMClient:
    """Generate text for many prompts: cached, bounded, retried, stoppable (see the module
    docstring), with the settings of ``config`` (:class:`hf_real3d.llm.config.LLMConfig`,
    checked here before any work). ``backend``: one made elsewhere, in place of the one the
    settings name. ``progress``: a progress bar and messages on stderr (``say`` replaces
    where the messages go)."""

    def __init__(self, config: LLMConfig, *, backend: Backend | None = None,
                 progress: bool = True, say: Callable[[str], None] | None = None):
        config.check()
        self.config, self.decoding, self.progress = config, config.decoding, progress
        self.backend = backend if backend is not None else config.backend()
        self.say = say or ((lambda m: print(m, file=sys.stderr, flush=True)) if progress
                           else (lambda m: None))
        self.stats = _Stats()
        self.formats = _Formats(config.llm_structured, self.backend, self.say)
        self._checked = False

    @property
    def cache(self) -> CachedBackend | None:
        """The reply cache around the backend (None with ``no_llm_cache``)."""
        return self.backend if isinstance(self.backend, CachedBackend) else None

    @property
    def concurrency(self) -> int:
        return self.config.llm_concurrency or self.backend.default_concurrency()[0]

    def describe(self) -> dict[str, Any]:
        """What a card records: the model, where it ran and how it decoded (no key)."""
        why = "--llm_concurrency" if self.config.llm_concurrency else \
            self.backend.default_concurrency()[1]
        out = {**self.backend.describe(), **asdict(self.decoding),
               "concurrency": self.concurrency, "concurrency_from": why,
               "reask": self.config.llm_reask}
        if self.config.llm_cache_tag:
            out["cache_tag"] = self.config.llm_cache_tag
        return out

    def check(self) -> None:
        """Fail before any work when the model cannot be used (a server that does not answer
        or does not list the model; a local folder is loaded here)."""
        self.backend.check(self.say)
        self._checked = True

    # --- per item --------------------------------------------------------------------------

    def _decoding(self, attempt: int) -> Decoding:
        return replace(self.decoding, seed=self.decoding.seed + attempt) if attempt else \
            self.decoding

    def _settle(self, item: _Item, reply: Reply, mode: str, cached: bool, check: Check) -> bool:
        """Record an attempt's reply; True when the item is done."""
        reason = check(item.index, reply) if check else None
        item.attempts.append(Attempt(self._decoding(item.attempt).seed, mode, reply,
                                     reason=reason, cached=cached))
        if reason is not None and item.attempt < self.config.llm_reask:
            item.attempt += 1
            return False
        return True

    def _from_hand(self, item: _Item, prompt: Prompt, schema: dict | None, check: Check
                   ) -> bool:
        """Resolve what the backend already holds (the cache, a batch file's results), in
        the order of the formats asked for; True when the item is done."""
        while True:
            d = self._decoding(item.attempt)
            for mode in self.formats.modes(schema):
                reply = self.backend.lookup(prompt, d, _Formats.response_format(mode, schema))
                if reply is not None:
                    break
            else:
                return False
            self.stats.add(cache_hits=1)
            if self._settle(item, reply, mode, True, check):
                return True

    def _ask_group(self, group: list[_Item], prompts: Sequence[Prompt], schema: dict | None,
                   check: Check) -> list[_Item]:
        """Ask ``group`` (items at one attempt) once; returns the items still to ask."""
        d = self._decoding(group[0].attempt)
        modes = self.formats.modes(schema)
        mode = self.formats.now(modes)
        if schema is not None and all(m in self.formats.refused for m in modes):
            # --llm_structured asked for one format only, and the server refuses it
            why = self.formats.refused[modes[0]]
            for it in group:
                it.attempts.append(Attempt(d.seed, modes[0], error=f"{why} (--llm_structured "
                                           f"{modes[0]}; auto falls back)"))
            self.stats.add(failures=len(group))
            return []
        try:
            replies = self.backend.ask_many([prompts[it.index] for it in group], d,
                                            _Formats.response_format(mode, schema))
        except FormatRefused as err:
            self.stats.add(requests=self.backend.requests_sent())
            self.formats.refuse(mode, str(err))
            return group
        except ItemError as err:
            n = self.backend.requests_sent()
            self.stats.add(requests=n, retries=max(n - len(group), 0), failures=len(group))
            for it in group:
                it.attempts.append(Attempt(d.seed, mode, error=str(err)))
            return []
        n = self.backend.requests_sent()
        self.stats.add(requests=n, retries=max(n - len(group), 0),
                       prompt_tokens=sum(r.usage.get("prompt_tokens", 0) for r in replies),
                       completion_tokens=sum(r.usage.get("completion_tokens", 0)
                                             for r in replies))
        # a re-ask's reply may be cached already
        return [it for it, r in zip(group, replies)
                if not (self._settle(it, r, mode, False, check)
                        or self._from_hand(it, prompts[it.index], schema, check))]

    def _ask_chunk(self, chunk: list[_Item], prompts: Sequence[Prompt], schema: dict | None,
                   check: Check) -> None:
        """Ask until every item of ``chunk`` is done: its attempts and format fallbacks."""
        while chunk:
            attempt = min(it.attempt for it in chunk)
            group = [it for it in chunk if it.attempt == attempt]
            chunk = [it for it in chunk if it.attempt != attempt] + \
                self._ask_group(group, prompts, schema, check)

    @staticmethod
    def _generation(item: _Item) -> Generation:
        last = item.attempts[-1]
        if last.reply is None:
            return Generation(None, last.error, False, item.attempts)
        return Generation(last.reply.text, None, last.cached, item.attempts, last.reason)

    # --- many prompts ----------------------------------------------------------------------

    def pending(self, prompts: Sequence[Prompt], *, schema: dict | None = None,
                check: Check = None) -> list[tuple[int, str, dict]]:
        """(item, key, request body) of each item a run would send a request for now, given
        what the backend holds (for ``--dry_run`` and ``batch_out``; a re-ask needs the reply
        before it, so only the first missing attempt of each item is listed; items with the
        same prompt share a key)."""
        self.backend.prepare()
        out = []
        for i, p in enumerate(prompts):
            item = _Item(i)
            if self._from_hand(item, p, schema, check):
                continue
            d = self._decoding(item.attempt)
            fmt = _Formats.response_format(self.formats.now(self.formats.modes(schema)), schema)
            out.append((i, self.backend.key(p, d, fmt), self.backend.body(p, d, fmt)))
        return out

    def generate(self, prompts: Sequence[Prompt], *, desc: str = "asking the model",
                 items: Sequence[str] | None = None, schema: dict | None = None,
                 check: Check = None,
                 on_result: Callable[[int, Generation], None] | None = None
                 ) -> list[Generation]:
        """One :class:`Generation` per prompt, in order; what the backend holds is not asked
        again. ``check(i, reply)`` says why prompt ``i``'s reply cannot be used (None: it
        can); such a reply is asked again with the next seed (``llm_reask``). ``schema``: the
        JSON schema of the reply, asked as structured output. ``items`` name the prompts in
        messages. ``on_result(i, generation)`` is called as each arrives."""
        names = list(items) if items is not None else [f"prompt {i}" for i in range(len(prompts))]
        if len(names) != len(prompts):
            raise ValueError(f"{len(names)} item names for {len(prompts)} prompts")
        if not self._checked:
            self.check()
        out: list[Generation | None] = [None] * len(prompts)
        todo = []
        for it in map(_Item, range(len(prompts))):
            if self._from_hand(it, prompts[it.index], schema, check):
                out[it.index] = self._generation(it)
                if on_result:
                    on_result(it.index, out[it.index])
            else:
                todo.append(it)
        if todo:
            self._run(todo, prompts, names, out, desc, (schema, check, on_result))
        return [g for g in out if g is not None]

    def _run(self, todo: list[_Item], prompts, names, out, desc, how) -> None:
        schema, check, on_result = how
        bar = tqdm(total=len(todo), desc=desc, unit="prompt",
                   disable=not self.progress, dynamic_ncols=True)
        failed = unusable = streak = 0
        last_error = ""
        received = 0

        def done(it: _Item) -> None:
            nonlocal failed, unusable, streak, last_error, received
            g = self._generation(it)
            out[it.index] = g
            received += any(a.reply is not None and not a.cached for a in it.attempts)
            if g.text is None:
                failed += 1
                streak += 1
                last_error = f"{names[it.index]}: {g.error}"
                if failed == 1:
                    bar.write(f"first failure: {last_error}", file=sys.stderr)
            else:
                streak = 0
                if g.reason is not None:
                    unusable += 1
                    self.stats.add(unusable=1)
            if failed or unusable:
                bar.set_postfix_str(f"failed {failed}, unusable {unusable}", refresh=False)
            bar.update()
            if on_result:
                on_result(it.index, g)
            limit = self.config.max_failures
            if limit and streak >= limit:
                raise LLMError(f"stopped after {streak} failures in a row (`max_failures` "
                               f"{limit}); the last: {last_error}. The replies received "
                               f"({received}) are cached: fix the cause and run the same "
                               "command again")

        try:
            self._pool(todo, prompts, schema, check, done)
        except Fatal as err:
            raise LLMError(f"{err}; nothing more was asked") from None
        except BaseException as err:
            if isinstance(err, KeyboardInterrupt | Terminated):
                bar.write(f"stopped: {received} repl{'y' if received == 1 else 'ies'} received "
                          "and cached; run the same command again to go on (cached replies are "
                          "not asked again)", file=sys.stderr)
            raise
        finally:
            bar.close()

    def _pool(self, todo: list[_Item], prompts, schema, check, done) -> None:
        """Worker threads ask ``todo`` in chunks (``llm_concurrency`` threads of one prompt,
        or one thread of ``llm_concurrency`` prompts for a backend that batches them); this
        thread hands each result to ``done`` in the order they arrive."""
        stop = self.backend.stop
        stop.clear()
        width = self.concurrency
        n_threads, size = (1, width) if self.backend.batches_prompts else (width, 1)
        work: queue.SimpleQueue = queue.SimpleQueue()
        for s in range(0, len(todo), size):
            work.put(todo[s:s + size])
        results: queue.SimpleQueue = queue.SimpleQueue()
        lock = threading.Lock()
        streak = [0]  # failures in a row, in the order the results are handed over

        def worker() -> None:
            while not stop.is_set():
                try:
                    chunk = work.get_nowait()
                except queue.Empty:
                    return
                try:
                    self._ask_chunk(chunk, prompts, schema, check)
                except Stopped:
                    return
                except BaseException as err:  # noqa: BLE001 - handed to the main thread
                    results.put((chunk[0], err))
                    return
                with lock:
                    for it in chunk:
                        results.put((it, None))
                        streak[0] = streak[0] + 1 if it.attempts[-1].reply is None else 0
                    if self.config.max_failures and streak[0] >= self.config.max_failures:
                        stop.set()  # the main thread stops the run at this result

        threads = [threading.Thread(target=worker, daemon=True, name=f"llm-{n}")
                   for n in range(min(n_threads, len(todo)))]
        for t in threads:
            t.start()
        left = len(todo)
        try:
            while left:
                try:
                    it, err = results.get(timeout=0.2)
                except queue.Empty:
                    if not any(t.is_alive() for t in threads) and results.empty():
                        raise LLMError("the request threads ended before every prompt was "
                                       "asked; run the same command again") from None
                    continue
                if err is not None:
                    raise err
                left -= 1
                done(it)
        except BaseException:
            stop.set()  # no new request from here on
            deadline = time.monotonic() + STOP_GRACE
            for t in threads:  # the replies in flight are cached as they arrive
                t.join(max(0.0, deadline - time.monotonic()))
            raise


def offline_step(client: LLMClient, prompts: Sequence[Prompt], names: Sequence[str], *,
                 schema: dict | None = None, check: Check = None,
                 dry_run: bool = False) -> dict[str, Any] | None:
    """``--dry_run`` (what would be asked, nothing sent) or ``batch_out`` (the requests as a
    Batch API file, nothing sent); None for a run that asks."""
    if dry_run:
        todo = client.pending(prompts, schema=schema, check=check)
        return {"dry_run": True, "prompts": len(prompts),
                "requests": len({k for _, k, _ in todo}), "cached": len(prompts) - len(todo),
                "show": [(names[i], prompts[i]) for i, _, _ in todo]}
    path = client.config.batch_out
    if path is not None:
        need = client.pending(prompts, schema=schema, check=check)
        n = write_requests(path, ((k, body) for _, k, body in need))
        return {"batch_out": str(path), "prompts": len(prompts), "requests": n,
                "cached": len(prompts) - len(need)}
    return None


def usage_totals(generations: Sequence[Generation]) -> dict[str, Any]:
    """Tokens, finish reasons and attempts over ``generations`` (cached replies included:
    what the replies cost when they were made)."""
    tokens: collections.Counter = collections.Counter()
    finish: collections.Counter = collections.Counter()
    attempts = 0
    for g in generations:
        tokens.update(g.usage)
        attempts += len(g.attempts)
        for a in g.attempts:
            if a.reply is not None:
                finish[str(a.reply.finish_reason)] += 1
    return {"prompt_tokens": tokens.get("prompt_tokens", 0),
            "completion_tokens": tokens.get("completion_tokens", 0),
            "finish_reasons": dict(finish), "attempts": attempts}
