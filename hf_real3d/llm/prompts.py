"""Prompt templates (:class:`PromptTemplate`, the shipped ones in ``hf_real3d/prompts/``),
a prompt's text form, and the seeded subset a ``limit`` draws: what a step builds before it
asks a model."""

from __future__ import annotations

import json
import os
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hf_real3d.llm.base import Prompt

__all__ = ["PROMPTS", "PromptTemplate", "render_prompt", "seeded_subset"]

PROMPTS = Path(__file__).resolve().parent.parent / "prompts"
_FIELD = re.compile(r"\{([a-z_]+)\}")
_BRACED = re.compile(r"\{\s*[A-Za-z_][A-Za-z0-9_ ]*\}")  # what reads as a placeholder
_KEYS = ("about", "system", "user", "examples")


@dataclass
class PromptTemplate:
    """A prompt file: ``system`` text, a ``user`` template whose ``{field}`` placeholders are
    filled per item, and in-context ``examples`` (each with the fields and its ``output``),
    given to the model as earlier user and assistant turns. Shipped ones live in
    ``hf_real3d/prompts/``; a user's file of the same shape replaces them."""

    path: Path
    system: str
    user: str
    examples: list[dict[str, Any]]

    @classmethod
    def load(cls, path: str | os.PathLike, *, required: Sequence[str],
             optional: Sequence[str] = (), output: Sequence[str] = ()) -> PromptTemplate:
        """Read and check a template: its user prompt must hold every ``required`` field and
        no placeholder outside ``required`` and ``optional`` (``{Question}`` or ``{ question
        }`` would be sent as written); its system text no field (it is not filled); each
        example every field its user prompt uses and an ``output``: a text, or with
        ``output`` an object with those keys (the reply's JSON)."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such prompt template")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as err:
            raise ValueError(f"{path}: not a JSON prompt template ({err})") from None
        if not isinstance(data, dict) or not isinstance(data.get("user"), str) or \
                not isinstance(data.get("system") or "", str) or set(data) - set(_KEYS):
            raise ValueError(f"{path}: a prompt template is a JSON object with a 'user' template "
                             "and optional 'system' text, 'examples' and 'about' (it has "
                             f"{sorted(data) if isinstance(data, dict) else type(data).__name__})")
        problems = _problems(data["user"], data.get("system") or "", required, optional)
        if problems:
            raise ValueError(f"{path}: {'; '.join(problems)}; the user template fills "
                             + ", ".join("{" + f + "}" for f in required)
                             + (f" and may use {', '.join('{' + f + '}' for f in optional)}"
                                if optional else ""))
        examples = data.get("examples") or []
        _check_examples(path, examples, sorted(set(_FIELD.findall(data["user"]))), output)
        return cls(path, str(data.get("system") or ""), data["user"], list(examples))

    def fill(self, **fields: Any) -> str:
        return _FIELD.sub(lambda m: str(fields.get(m.group(1), m.group(0))), self.user)

    def messages(self, *, note: str = "", **fields: Any) -> list[dict[str, str]]:
        """The chat: system, then each example's user and assistant turns, then the item.
        ``note``: a line added to the item's turn (where the template has no field for it)."""
        out = [{"role": "system", "content": self.system}] if self.system else []
        for ex in self.examples:
            reply = ex["output"] if isinstance(ex["output"], str) else json.dumps(ex["output"])
            out += [{"role": "user", "content": self.fill(**ex)},
                    {"role": "assistant", "content": reply}]
        text = self.fill(**fields)
        return out + [{"role": "user", "content": text + (f"\n{note}" if note else "")}]


def _problems(user: str, system: str, required: Sequence[str], optional: Sequence[str]
              ) -> list[str]:
    """What a template's texts would send unfilled or lack."""
    fields, have = {*required, *optional}, set(_FIELD.findall(user))
    missing = ["{" + f + "}" for f in required if f not in have]
    odd = [m for m in _BRACED.findall(user) if not (_FIELD.fullmatch(m) and m[1:-1] in fields)]
    in_system = [m for m in _BRACED.findall(system) if m[1:-1].strip().lower() in fields]
    return ([f"the user template lacks {', '.join(missing)}"] * bool(missing)
            + [f"the user template has {', '.join(odd)}, which is not filled"] * bool(odd)
            + [f"the system text has {', '.join(in_system)}, but only the user template is "
               "filled"] * bool(in_system))


def _check_examples(path: Path, examples: Any, fields: list[str], output: Sequence[str]) -> None:
    """Each example: an object with the user template's ``fields`` and its ``output`` (the
    reply's text, or with ``output`` an object with those keys)."""
    if not isinstance(examples, list) or not all(isinstance(ex, dict) for ex in examples):
        raise ValueError(f"{path}: 'examples' is a list of objects, each with {fields} and "
                         "'output'")
    for i, ex in enumerate(examples):
        lacking = [f for f in fields if f not in ex]
        out = ex.get("output")
        if not ((isinstance(out, dict) and set(output) <= set(out)) if output else
                isinstance(out, str)):
            lacking.append("output (" + (f"an object with {list(output)}" if output else
                                         "the reply's text") + ")")
        if lacking:
            raise ValueError(f"{path}: example {i} lacks {', '.join(lacking)}")


def seeded_subset(n: int, limit: int | None, seed: int) -> list[int]:
    """Indices of ``limit`` of ``n`` items drawn with ``seed``, in their order (all when
    ``limit`` is None or not smaller than ``n``)."""
    if limit is not None and limit < 1:
        raise ValueError(f"`limit` {limit}: expected at least 1 question")
    if limit is None or limit >= n:
        return list(range(n))
    return sorted(random.Random(seed).sample(range(n), limit))


def render_prompt(prompt: Prompt) -> str:
    """A prompt as text: each chat turn after its role."""
    if isinstance(prompt, str):
        return prompt
    return "\n".join(f"[{m['role']}] {m['content']}" for m in prompt)
