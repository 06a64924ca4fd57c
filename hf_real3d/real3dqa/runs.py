"""What the Real-3DQA commands report: one small dataclass per command (``judge``, ``rotate``,
``check-rotations``, ``build-real3dqa``, ``import-real3dqa``) holding the figures of one run,
with the lines the command line prints of them (``lines``; ``warnings`` go to stderr). A JSON
output of a run is its ``dataclasses.asdict``."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any

from hf_real3d.llm.prompts import render_prompt

__all__ = ["BuildRun", "CheckRun", "ImportRun", "JudgeRun", "RotateRun", "Trial"]


def _usage(u: dict[str, Any]) -> str:
    return (f"tokens {u['prompt_tokens']} prompt, {u['completion_tokens']} completion; finish "
            f"reasons {u['finish_reasons']}")


class _Of:
    @classmethod
    def of(cls, summary: dict[str, Any]) -> Any:
        """The run of a summary dict (its other keys left out)."""
        return cls(**{f.name: summary[f.name] for f in fields(cls) if f.name in summary})


@dataclass
class Trial(_Of):
    """What ``judge`` or ``rotate`` did with ``--dry_run`` (the prompts to show, none sent) or
    ``--batch_out`` (the requests written to that file) instead of asking the model."""

    prompts: int
    requests: int
    cached: int
    show: list[tuple[str, Any]] = field(default_factory=list)  # (item, prompt) not cached
    batch_out: str | None = None
    questions: int = 0
    geometry_groups: int | None = None  # rotate's: the groups turned from geometry
    no_heading_cue: int = 0

    def lines(self, command: str) -> list[str]:
        if self.batch_out is not None:
            lines = [f"wrote {self.requests} request(s) to {self.batch_out} ({self.cached} of "
                     f"{self.prompts} prompts answered from the cache); run them, e.g. vllm "
                     f"run-batch -i {self.batch_out} -o results.jsonl --model MODEL, then: "
                     f"hf-real3d {command} ... --batch_in results.jsonl"]
        else:
            lines = [f"--- {name} (the whole prompt) ---\n{render_prompt(prompt)}"
                     for name, prompt in self.show[:1]]
            lines += [f"--- {name} (its last turn) ---\n"
                      + (prompt[-1]["content"] if isinstance(prompt, list) else prompt)
                      for name, prompt in self.show[1:20]]
            if len(self.show) > 20:
                lines.append(f"... and {len(self.show) - 20} more (--batch_out FILE writes "
                             "them all)")
            lines.append(f"dry run: {self.prompts} prompts, {self.cached} answered from the "
                         f"cache, {self.requests} request(s) would be sent; none sent, nothing "
                         "written")
        if self.geometry_groups is not None:
            lines.append(f"  ({self.questions} questions: {self.geometry_groups} turned from "
                         f"geometry, {self.no_heading_cue} with no heading cue)")
        return lines


@dataclass
class JudgeRun:
    """``hf-real3d judge``: what the model answered (written beside the predictions as
    ``<stem>.judge.json``)."""

    dataset: str
    questions: int
    answered: int
    failed: int
    cached: int
    limit: int | None
    judge: dict[str, Any]  # the client: model, route, decoding
    prompt: dict[str, str]
    usage: dict[str, Any]
    this_run: dict[str, Any]
    failure_reasons: dict[str, int]
    failures: list[dict[str, Any]]

    def lines(self, out: str, requests: int) -> list[str]:
        return [f"{self.questions} questions judged by {self.judge['model']}: {self.answered} "
                f"answered, {self.failed} failed, {self.cached} from the cache; {requests} "
                f"request(s) sent; {_usage(self.usage)}",
                f"wrote {out}; use it with build-real3dqa --judge NAME={out}"]

    def warnings(self, batch_in: bool) -> list[str]:
        out = [f"  failed: question_id {f['question_id']}: {f['reason']}"
               for f in self.failures[:5]]
        if self.failed > 0.1 * self.questions:
            again = ("write the requests still missing with --batch_out in place of "
                     "--batch_in, run them and read their results" if batch_in else
                     "run the same command again") + " (answered questions come from the cache)"
            out.append(f"hf-real3d judge: warning: {self.failed} of {self.questions} "
                       "questions failed; build-real3dqa --judge refuses a file with more than "
                       f"a tenth failed: {again}")
        return out


@dataclass
class RotateRun(_Of):
    """``hf-real3d rotate``: the groups made, the model's replies, the checks."""

    questions: int
    groups: int
    sources: dict[str, int]  # turned items per source (geometry, lm)
    asked: int
    cached: int
    excluded: int
    reasons: dict[str, int]
    no_heading_cue: int
    usage: dict[str, Any]
    structured: str
    requests: int
    failed: int
    check: dict[str, Any]  # the checks' items, verdicts and group verdicts

    def lines(self, out: str) -> list[str]:
        lines = [f"{self.questions} questions -> {self.groups} rotation groups ({self.sources}); "
                 f"{self.asked} prompts, {self.cached} cached, {self.requests} request(s) sent, "
                 f"{self.failed} failed; {self.excluded} turned items excluded: {self.reasons}",
                 f"  no heading cue: {self.no_heading_cue} questions; structured output: "
                 f"{self.structured}; {_usage(self.usage)}"]
        if self.check:
            v, g = self.check.get("verdicts") or {}, self.check.get("group_verdicts") or {}
            lines.append(f"check-rotations: of {self.check['items']} turned items "
                         + ", ".join(f"{n} {k}" for k, n in v.items())
                         + f"; {g.get('pass', 0)} groups pass (review them: hf-real3d explore "
                         f"--dataset {out} --review REVIEW_FOLDER)")
        return [*lines, f"wrote {out}"]


@dataclass
class CheckRun(_Of):
    """``hf-real3d check-rotations``: the verdicts' counts (the whole summary is the check
    folder's ``check.json``)."""

    items: int
    groups: int
    verdicts: dict[str, int]
    group_verdicts: dict[str, int]
    items_with_several_rules: int
    rules: dict[str, dict[str, int]]  # per rule: items, as_defect, as_needs_scene, groups
    configs: list[str] | None = None  # the configs added to a dataset folder

    def lines(self, dataset: str, out: str) -> list[str]:
        v, g = self.verdicts, self.group_verdicts
        return [f"{self.items} rotated items in {self.groups} groups: " + ", ".join(
                    f"{v[k]} {k} ({g[k]} groups)" for k in ("defect", "needs_scene", "pass")),
                f"  (a group takes its worst item's verdict; {self.items_with_several_rules} "
                "items break more than one rule, so the rule counts overlap)",
                *(f"  {rule:<22} {c['items']:>5} items ({c['as_defect']} defect, "
                  f"{c['as_needs_scene']} needs_scene) in {c['groups']:>4} groups"
                  for rule, c in self.rules.items() if c["items"]),
                f"wrote {out}/check.json, verdicts.jsonl, flags.jsonl, repairs.jsonl, report.md"
                + (f"; configs {', '.join(self.configs)} in {dataset}" if self.configs else "")]


@dataclass
class BuildRun:
    """``hf-real3d build-real3dqa``: the filter's and the rotation's counts."""

    questions: int
    kept: int
    removed: int
    filter_stats: list[dict[str, Any]]  # rows like the paper's Table 7
    rotation: dict[str, Any]  # kept, excluded, reasons
    rotation_rows: int

    def lines(self, out: str, url: str | None = None) -> list[str]:
        rot = self.rotation
        return [f"{self.questions} questions -> {self.kept} kept ({self.removed} filtered out)",
                f"rotation coverage: {rot['kept']} of {self.kept} kept questions rotate "
                f"({rot['kept'] / max(self.kept, 1):.1%}); excluded: {rot['reasons']}",
                f"wrote {out}" + (f", pushed to {url}" if url else "")]


@dataclass
class ImportRun:
    """``hf-real3d import-real3dqa``: the release's validation report."""

    report: dict[str, Any]  # files, rotations (groups, flags, ...), licenses
    url: str | None = None
    sqa3d: str | None = None  # where the SQA3D texts it keeps (sqa3d_texts) came from

    def lines(self) -> list[str]:
        kept = [f"kept SQA3D's questions of the release's scenes from {self.sqa3d} (config "
                "sqa3d_texts): check-rotations of the import reads them as the release's check "
                "does"]
        return [json.dumps(self.report["rotations"], indent=2), *(kept if self.sqa3d else []),
                *([f"pushed to {self.url}"] if self.url else [])]

