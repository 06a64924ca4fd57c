"""``hf-real3d judge`` and ``rotate``: the language-model steps, and the options they share."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hf_real3d._fields import help_field


@dataclass(kw_only=True)
class _LLMOptions:
    """The model a language-model step asks (a server or a local folder), and how a run asks
    it: trying before spending (--dry_run, --limit), offline batches (--batch_out, --batch_in)
    and when to stop (--max_failures)."""
    llm_url: str | None = help_field("Base URL of an OpenAI-compatible server (vLLM, TGI, "
                                     "`transformers serve`, Ollama, a hosted API), e.g. "
                                     "http://127.0.0.1:8000/v1; with --llm_model.",
                                     default=None)
    llm_model: str | None = help_field("The model name the server lists (GET /v1/models).",
                                       default=None)
    llm_path: str | None = help_field("Or: a local transformers causal-LM folder with its "
                                      "tokenizer, run in this process.", default=None)
    llm_api_key_env: str | None = help_field("Name of the environment variable holding the "
                                             "server's API key (never written anywhere).",
                                             default=None)
    llm_cache: str | None = help_field("Folder of cached replies for this model (default: one "
                                       "per model and cache tag under $HF_REAL3D_CACHE/llm or "
                                       "~/.cache/huggingface/hf_real3d/llm).", default=None)
    no_llm_cache: bool = help_field("Ask every prompt again (nothing read from or written to "
                                    "the cache).", default=False)
    llm_cache_tag: str | None = help_field("A word that joins the cache key (a date, a model "
                                           "revision): replies cached under another tag are "
                                           "not reused.", default=None)
    llm_no_probe: bool = help_field("Do not ask GET /models first (gateways without it); the "
                                    "cache key then holds the model name and the cache tag "
                                    "only, not what the server says of the model.",
                                    default=False)
    temperature: float = help_field("Sampling temperature (0: greedy, the default).",
                                    default=0.0)
    seed: int = help_field("Seed sent with every request (and set for a local model); also "
                           "draws the --limit subset.", default=0)
    max_tokens: int = help_field("Longest reply, in tokens; a reply cut there is not used "
                                 "('cut at max_tokens').", default=128)
    llm_timeout: float = help_field("Seconds to wait for one reply.", default=60.0)
    llm_concurrency: int | None = help_field(
        "Requests in flight at once (a server), or prompts per batch (a local folder). "
        "Default: 64 for a server whose /models card names a batching engine (vLLM, SGLang, "
        "TGI), 8 for other servers and for a local folder.", default=None)
    llm_retries: int = help_field("Retries of a request answered 429 or 5xx, timed out or "
                                  "cut off (the openai client's, with exponential backoff).",
                                  default=4)
    llm_reask: int = help_field("Ask a reply that cannot be used (does not parse, cut at "
                                "max_tokens) again with the next seed, up to N times; each "
                                "attempt is cached and recorded (at temperature 0 a server "
                                "usually answers the same).", default=0)
    llm_structured: str = help_field(
        "Structured output for replies with a JSON shape (rotate): auto asks for the JSON "
        "schema (response_format), falls back to json_object and then to plain prompts when "
        "the server refuses (the record says so); json_schema, json_object or none ask for "
        "that one only.", default="auto", choices=("auto", "json_schema", "json_object", "none"))
    max_failures: int = help_field("Stop the run after this many failed requests in a row, "
                                   "with the reason (0: never); the replies received stay "
                                   "cached.", default=20)
    limit: int | None = help_field("Only N questions, drawn with --seed (try a prompt or a "
                                   "server before the whole run).", default=None)
    dry_run: bool = help_field("Print the prompts that would be sent and how many requests, "
                               "and send none (the server is not contacted; nothing is "
                               "written).", default=False)
    batch_out: str | None = help_field("Write the requests not in the cache as an OpenAI Batch "
                                       "API JSONL file (what `vllm run-batch -i` reads) and "
                                       "send none.", default=None)
    batch_in: str | None = help_field("Read the replies from a Batch API output file (`vllm "
                                      "run-batch -o`) in place of a server: into the cache and "
                                      "the output, as a live run.", default=None)

    def check(self) -> None:
        """Every run option checked before any work (the commands call it first, through
        :meth:`client`)."""
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"--limit {self.limit}: expected at least 1 question")
        if self.llm_reask < 0:
            raise ValueError(f"--llm_reask {self.llm_reask}: expected 0 or more re-asks")
        if self.max_failures < 0:
            raise ValueError(f"--max_failures {self.max_failures}: expected 0 (never stop) or "
                             "more")
        if self.llm_concurrency is not None and self.llm_concurrency < 1:
            raise ValueError(f"--llm_concurrency {self.llm_concurrency}: expected at least 1")
        if self.llm_retries < 0 or self.llm_timeout <= 0:
            raise ValueError(f"--llm_retries {self.llm_retries} must be >= 0 and --llm_timeout "
                             f"{self.llm_timeout} > 0")
        if self.batch_in and self.batch_out:
            raise ValueError("--batch_out and --batch_in: one at a time (write the requests, "
                             "run the batch, then read its output)")
        if self.dry_run and (self.batch_in or self.batch_out):
            raise ValueError("--dry_run with --batch_out or --batch_in: a dry run writes and "
                             "reads nothing; drop one")
        if (self.batch_in or self.batch_out) and self.llm_path:
            raise ValueError("--batch_out/--batch_in: a batch file is for a server "
                             "(--llm_url, --llm_model), not a local folder (--llm_path)")
        if self.batch_in and not Path(self.batch_in).is_file():
            raise FileNotFoundError(f"--batch_in {self.batch_in}: no such file (the output "
                                    "file of the batch run, e.g. vllm run-batch -o FILE)")
        if self.batch_out and Path(self.batch_out).is_dir():
            raise FileExistsError(f"--batch_out {self.batch_out}: a folder; give a .jsonl file")
        if self.llm_cache_tag is not None and not self.llm_cache_tag.strip():
            raise ValueError("--llm_cache_tag: empty; give a word (a date, a model revision)")

    def client(self):
        self.check()
        # the client (and the openai package) only for the commands that ask a model
        from hf_real3d.llm import Decoding, LLMClient

        offline = bool(self.batch_in or self.batch_out or self.dry_run)
        return LLMClient(url=self.llm_url, model=self.llm_model, path=self.llm_path,
                         api_key_env=None if offline else self.llm_api_key_env,
                         decoding=Decoding(self.temperature, self.seed, self.max_tokens),
                         timeout=self.llm_timeout, concurrency=self.llm_concurrency,
                         retries=self.llm_retries, cache_dir=self.llm_cache,
                         cache=not self.no_llm_cache, cache_tag=self.llm_cache_tag,
                         probe=not (self.llm_no_probe or self.batch_in or self.batch_out),
                         structured=self.llm_structured, reask=self.llm_reask,
                         max_failures=self.max_failures,
                         batch=bool(self.batch_in or self.batch_out))

    def run_options(self) -> dict[str, Any]:
        return {"limit": self.limit, "dry_run": self.dry_run, "batch_out": self.batch_out,
                "batch_in": self.batch_in}


@dataclass
class JudgeOptions(_LLMOptions):
    """The text-only filter of Real-3DQA (section 3.1): a language model answers each question
    from its situation and question alone; what it answers correctly, build-real3dqa --judge
    (and build-real-scanqa --judge) removes. Writes OUT (JSONL question_id, prediction,
    finish_reason, tokens) and OUT's stem + .judge.json (the model, the prompt, the counts,
    the tokens). A run in which no question was answered writes nothing and exits 2."""
    dataset: str = help_field("An SQA3D folder, a ScanQA JSON file, or a dataset folder built "
                              "by this library.")
    out: str = help_field("Predictions file to write (.jsonl).")
    prompt: str | None = help_field("A prompt template of the shape of "
                                    "hf_real3d/prompts/judge.json (default: that file).",
                                    default=None)
    split: str = help_field("SQA3D split to read.", default="test")


@dataclass
class RotateOptions(_LLMOptions):
    """Every question from each turned viewpoint: from scene geometry where it applies, else
    rewritten by a language model from a template with in-context examples (and, with
    scenes, what the agent sees after the turn). Replies that do not parse, are cut at
    max_tokens, leave a field empty, repeat the original or name no direction are excluded
    with the reason, and so are the other viewpoints of their question; a situation that names
    no direction is not asked without a scene ('no heading cue without a scene'). Writes a
    Real-3DQA dataset folder (configs real3dqa, rotations with source and raw_reply columns,
    rotations_excluded, llm_calls) and checks it at once (OUT/checks, configs rotation_checks
    and rotations_checked)."""
    dataset: str = help_field("An SQA3D folder or a dataset folder built by this library (its "
                              "real3dqa config: the questions the filter kept).")
    out: str = help_field("Dataset folder to write (never an input, nor inside one).")
    scenes: str | None = help_field("Folder of ScanNet-format scenes (default: the dataset "
                                    "folder's scenes config, if any).", default=None)
    prompt: str | None = help_field("A prompt template of the shape of "
                                    "hf_real3d/prompts/rotate.json (default: that file).",
                                    default=None)
    split: str = help_field("SQA3D split to read.", default="test")
    viewpoints: int = help_field("Viewpoints per question (360 must divide by it).", default=4)


def _print_trial(t: dict[str, Any], command: str) -> bool:
    """Print what --dry_run or --batch_out did; True when the run was one of them."""
    # the prompt's text form only for these two
    from hf_real3d.llm import render_prompt

    if t.get("dry_run"):
        show = t["show"]
        if show:
            name, prompt = show[0]
            print(f"--- {name} (the whole prompt) ---\n{render_prompt(prompt)}")
            for name, prompt in show[1:20]:
                last = prompt[-1]["content"] if isinstance(prompt, list) else prompt
                print(f"--- {name} (its last turn) ---\n{last}")
            if len(show) > 20:
                print(f"... and {len(show) - 20} more (--batch_out FILE writes them all)")
        print(f"dry run: {t['prompts']} prompts, {t['cached']} answered from the cache, "
              f"{t['requests']} request(s) would be sent; none sent, nothing written")
        return True
    if "batch_out" in t:
        print(f"wrote {t['requests']} request(s) to {t['batch_out']} ({t['cached']} of "
              f"{t['prompts']} prompts answered from the cache); run them, e.g. vllm run-batch "
              f"-i {t['batch_out']} -o results.jsonl --model MODEL, then: hf-real3d {command} "
              "... --batch_in results.jsonl")
        return True
    return False


def cmd_judge(o: JudgeOptions) -> None:
    """``hf-real3d judge``."""
    from hf_real3d.real3dqa.judge import run_judge

    client = o.client()
    m = run_judge(o.dataset, o.out, client, template=o.prompt, split=o.split,
                  **o.run_options())
    if _print_trial(m, "judge"):
        return
    u = m["usage"]
    print(f"{m['questions']} questions judged by {m['judge']['model']}: {m['answered']} "
          f"answered, {m['failed']} failed, {m['cached']} from the cache; "
          f"{client.stats.requests} request(s) sent; tokens {u['prompt_tokens']} prompt, "
          f"{u['completion_tokens']} completion; finish reasons {u['finish_reasons']}")
    for f in m["failures"][:5]:
        print(f"  failed: question_id {f['question_id']}: {f['reason']}", file=sys.stderr)
    if m["failed"] > 0.1 * m["questions"]:
        print(f"hf-real3d judge: warning: {m['failed']} of {m['questions']} questions failed; "
              "build-real3dqa --judge refuses a file with more than a tenth failed: run the "
              "same command again (answered questions come from the cache)", file=sys.stderr)
    print(f"wrote {o.out}; use it with build-real3dqa --judge NAME={o.out}")


def cmd_rotate(o: RotateOptions) -> None:
    """``hf-real3d rotate``."""
    from hf_real3d.real3dqa.rewrite import rotate_dataset

    client = o.client()
    s = rotate_dataset(o.dataset, o.out, client, scenes=o.scenes, template=o.prompt,
                       split=o.split, n_viewpoints=o.viewpoints, **o.run_options())
    if _print_trial(s, "rotate"):
        print(f"  ({s['questions']} questions: {s['geometry_groups']} turned from geometry, "
              f"{s['no_heading_cue']} with no heading cue)")
        return
    u = s["usage"]
    print(f"{s['questions']} questions -> {s['groups']} rotation groups ({s['sources']}); "
          f"{s['asked']} prompts, {s['cached']} cached, {s['requests']} request(s) sent, "
          f"{s['failed']} failed; {s['excluded']} turned items excluded: {s['reasons']}")
    print(f"  no heading cue: {s['no_heading_cue']} questions; structured output: "
          f"{s['structured']}; tokens {u['prompt_tokens']} prompt, {u['completion_tokens']} "
          f"completion; finish reasons {u['finish_reasons']}")
    if s["check"]:
        c = s["check"]
        v, g = c.get("verdicts") or {}, c.get("group_verdicts") or {}
        print(f"check-rotations: of {c['items']} turned items "
              + ", ".join(f"{n} {k}" for k, n in v.items())
              + f"; {g.get('pass', 0)} groups pass (review them: hf-real3d explore --dataset "
              f"{o.out} --review REVIEW_FOLDER)")
    print(f"wrote {o.out}")
