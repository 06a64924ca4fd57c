"""The ``hf-real3d`` dispatcher: the commands, parsing, the one error line and the signals.

Each command is one options dataclass (every field has ``help``), parsed with
``transformers.HfArgumentParser``'s rules (by :class:`hf_real3d._argparse.DataclassParser`,
which does not import transformers), and one library call. Flags are written
``--field_name`` or ``--field-name``. Every prediction input is ``NAME=FILE[,FILE...]``.

Errors are one line on stderr with exit code 2 (``--debug`` shows the traceback); Ctrl-C
exits with 130 and SIGTERM with 143, after the library has removed its temporaries.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import os
import signal
import sys
import textwrap
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import hf_real3d.cli.build as build
import hf_real3d.cli.demo as demo_cmd
import hf_real3d.cli.evaluate as evaluate
import hf_real3d.cli.explore as explore
import hf_real3d.cli.llm as llm
import hf_real3d.cli.rotations as rotations
import hf_real3d.cli.stress as stress
import hf_real3d.cli.train as train
from hf_real3d._argparse import DataclassParser
from hf_real3d._runtime import Terminated, check_stop, clear_stop, request_stop
from hf_real3d.cli._common import Command
from hf_real3d.errors import as_flags

__all__ = ["COMMANDS", "RECIPE_COMMANDS", "main", "parse", "refuse_out_in_inputs"]


COMMANDS: dict[str, Command] = {
    "synth": Command("generate the embedded synthetic benchmark (dataset folder + SQA3D "
                     "files + ScanNet scenes)", lambda: build.SynthOptions, build.cmd_synth),
    "demo": Command("run the main job on the embedded benchmark", demo_cmd.demo_config,
                    demo_cmd.cmd_demo),
    "evaluate": Command("score Real-3DQA predictions: EM, refined EM, P_k, VRS",
                        lambda: evaluate.EvaluateOptions, evaluate.cmd_evaluate),
    "build-real3dqa": Command("filter + rotate SQA3D-format data into Real-3DQA",
                              lambda: build.BuildReal3DQAOptions, build.cmd_build_real3dqa),
    "import-real3dqa": Command("the official Real-3DQA release as a dataset folder",
                               lambda: build.ImportReal3DQAOptions, build.cmd_import_real3dqa),
    "draw": Command("top-down PNG of a question from each viewpoint", lambda: build.DrawOptions,
                    build.cmd_draw),
    "build-real-scanqa": Command("filter ScanQA into Real-ScanQA (no rotation)",
                                 lambda: build.BuildRealScanQAOptions,
                                 build.cmd_build_real_scanqa),
    "evaluate-real-scanqa": Command("score Real-ScanQA predictions: EM, refined EM, BLEU, "
                                    "ROUGE-L, METEOR, CIDEr",
                                    lambda: evaluate.EvaluateRealScanQAOptions,
                                    evaluate.cmd_evaluate_real_scanqa),
    "render-views": Command("add rendered views (BEV + egocentric frames) for VLMs",
                            lambda: build.RenderViewsOptions, build.cmd_render_views),
    "build-3dsrbench": Command("3DSRBench dataset: official TSV and/or synthetic renders",
                               lambda: build.Build3DSRBenchOptions, build.cmd_build_3dsrbench),
    "evaluate-3dsrbench": Command("3DSRBench: vanilla/circular/flip accuracy + baselines",
                                  lambda: evaluate.Evaluate3DSRBenchOptions,
                                  evaluate.cmd_evaluate_3dsrbench),
    "explore": Command("browse questions, viewpoints, scenes, answers and a leaderboard in a "
                       "local web app", lambda: explore.ExploreOptions, explore.cmd_explore),
    "stress-test": Command("is a test set text-solvable? k-fold text-only diagnostic; --prune",
                           lambda: stress.StressTestConfig, stress.cmd_stress_test),
    "check-rotations": Command("a verdict for every rotated item against its turn (text, answer "
                               "and scene rules)", lambda: rotations.CheckRotationsOptions,
                               rotations.cmd_check_rotations),
    "correct-rotations": Command("a corrected rotation set: each turned item kept where the "
                                 "checker passes it, else derived from viewpoint 0 by its turn",
                                 lambda: rotations.CorrectRotationsOptions,
                                 rotations.cmd_correct_rotations),
    "judge": Command("the text-only filter: a language model answers from the text alone",
                     lambda: llm.JudgeOptions, llm.cmd_judge),
    "rotate": Command("each question from every turned viewpoint (geometry, else a language "
                      "model), checked", lambda: llm.RotateOptions, llm.cmd_rotate),
    "review-init": Command("prepare a review folder without a browser",
                           lambda: rotations.ReviewInitOptions, rotations.cmd_review_init),
    "review-import": Command("append an annotator's decisions made elsewhere (CSV or JSONL)",
                             lambda: rotations.ReviewImportOptions, rotations.cmd_review_import),
    "review-stats": Command("agreement of a rotation review: kappa, self-consistency, checker",
                            lambda: rotations.ReviewStatsOptions, rotations.cmd_review_stats),
    "export-rotations": Command("the reviewed rotations in the release's format",
                                lambda: rotations.ExportRotationsOptions,
                                rotations.cmd_export_rotations),
    "lmms-tasks": Command("lmms-eval task YAMLs for your built datasets",
                          lambda: build.LmmsTasksOptions, build.cmd_lmms_tasks),
    "publish-metrics": Command("upload the metric modules as Hub Spaces",
                               lambda: build.PublishMetricsOptions, build.cmd_publish_metrics),
}

# the packaged recipes: each parses its own flags (its YAML config, the trainer's arguments)
RECIPE_COMMANDS: dict[str, tuple[str, Callable[[list[str]], None]]] = {
    "train": (f"train a recipe: {', '.join(train.TRAINED)} (its YAML config, then flags)",
              train.cmd_train),
    "predict": ("predictions of a trained SceneLM at every viewpoint (the predict recipe)",
                train.cmd_predict),
}


def _usage() -> str:
    helps = {**{name: cmd.help for name, cmd in COMMANDS.items()},
             **{name: help_ for name, (help_, _) in RECIPE_COMMANDS.items()}}
    width = max(map(len, helps))
    lines = ["usage: hf-real3d COMMAND [--debug] [options]", "",
             "Honest 3D spatial-reasoning evaluation and training (Real-3DQA, 3DSRBench, 3DR-FT).",
             "", "commands:"]
    lines += [f"  {name:<{width}}  {help_}" for name, help_ in helps.items()]
    lines += ["", "`hf-real3d COMMAND --help` lists a command's options."]
    return "\n".join(lines)


def _on_sigterm(signum, frame):  # pragma: no cover - exercised through a subprocess
    request_stop(Terminated)


def _on_sigint(signum, frame):  # pragma: no cover - exercised through a subprocess
    request_stop(KeyboardInterrupt)


class _HelpFormatter(argparse.RawDescriptionHelpFormatter,
                     argparse.ArgumentDefaultsHelpFormatter):
    """The description as written, and each option's default after its help."""


def parse(argv: Sequence[str]) -> tuple[str, Any]:
    """(command name, its options object) from ``argv`` (without the program name)."""
    name, rest = argv[0], list(argv[1:])
    if name not in COMMANDS:
        near = difflib.get_close_matches(name, [*COMMANDS, *RECIPE_COMMANDS], n=1)
        raise ValueError(f"unknown command {name!r}" + (f"; did you mean {near[0]!r}?" if near
                                                         else f"; one of {list(COMMANDS)}"))
    cmd = COMMANDS[name]
    options_cls = cmd.options()
    plain = getattr(options_cls, "PLAIN", None)
    if plain and rest and not rest[0].startswith("-"):  # `CMD VALUE` for `CMD --plain VALUE`
        rest = [f"--{plain}", *rest]
    doc = options_cls.__doc__ if options_cls.__doc__ and not options_cls.__doc__.startswith(
        options_cls.__name__ + "(") else ""
    parser = DataclassParser(options_cls, prog=f"hf-real3d {name}",
                             description=textwrap.fill(f"{cmd.help}. {' '.join(doc.split())}",
                                                       88),
                             formatter_class=_HelpFormatter)
    return name, parser.parse_into_dataclass(rest)

# options that are not inputs: what is written, and the language model's reply cache
_NOT_INPUTS = frozenset({"out", "llm_cache", "push_to_hub", "host", "llm_url", "namespace"})

# commands whose --out is one file (only an input of the same path is refused)
_FILE_OUT = frozenset({"draw"})


def _input_paths(options: Any) -> list[tuple[str, Path]]:
    """(option, path) of every option value that names an existing file or folder."""
    out = []
    for f in dataclasses.fields(options):
        if f.name in _NOT_INPUTS:
            continue
        value = getattr(options, f.name)
        values = value if isinstance(value, list | tuple) else [value]
        for v in values:
            if not isinstance(v, str | os.PathLike) or not str(v):
                continue
            # NAME=FILE[,FILE...] names files after the "="
            parts = str(v).split("=", 1)[-1].split(",") if "=" in str(v) else [str(v)]
            out += [(f.name, Path(x)) for x in parts if x and Path(x).exists()]
    return out


def refuse_out_in_inputs(name: str, options: Any) -> None:
    """``--out`` is never an input, never inside one, and never holds one: checked before any
    work, for every command that writes (:func:`hf_real3d._io.check_out`)."""
    # the library's modules load per command; _io only once a command is chosen
    from hf_real3d._io import check_out

    out = getattr(options, "out", None)
    if not out:
        return
    for option, path in _input_paths(options):
        check_out(out, prefix="--", one_file=name in _FILE_OUT, **{option: path})


def _close_progress_bars() -> None:
    """Close the progress bars an error left open (the traceback holds them), so the error is
    printed on a line of its own and no bar is redrawn after it."""
    if "tqdm" not in sys.modules:
        return
    # tqdm only when a bar may be open (something imported it)
    from tqdm import tqdm

    for bar in list(getattr(tqdm, "_instances", ())):
        bar.close()


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``hf-real3d`` with ``argv``; returns the exit code (2 for an input error, one line on
    stderr; 130 / 143 for Ctrl-C / SIGTERM)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0 if argv else 2
    # a parent may have blocked these (the mask is inherited across exec): the exit codes
    # 130/143 and the clean-up are promised whatever started us
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    clear_stop()
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    previous_int = signal.signal(signal.SIGINT, _on_sigint)
    name, options = argv[0], None
    try:
        if name in RECIPE_COMMANDS:
            RECIPE_COMMANDS[name][1](argv[1:])
        else:
            name, options = parse(argv)
            refuse_out_in_inputs(name, options)
            COMMANDS[name].run(options)
        check_stop()  # a signal whose exception a finaliser swallowed
        return 0
    except KeyboardInterrupt:
        print(f"hf-real3d {name}: interrupted", file=sys.stderr)
        return 130
    except Terminated:
        print(f"hf-real3d {name}: terminated", file=sys.stderr)
        return 143
    except (ValueError, TypeError, OSError, KeyError, ImportError) as err:
        if debug:
            traceback.print_exc()
        msg = err.args[0] if isinstance(err, KeyError) and err.args else err
        if isinstance(err, ImportError):
            # a missing optional package: the message names the extra that installs it
            from hf_real3d._extras import missing_extra_message

            msg = missing_extra_message(err)
        fields = {f.name for f in dataclasses.fields(options)} if options is not None else ()
        _close_progress_bars()
        print(f"hf-real3d {name}: error: {as_flags(str(msg), fields)}", file=sys.stderr)
        return 2
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
