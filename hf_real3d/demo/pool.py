"""Training several of a seed's models at once, each on one CPU thread.

SceneLM's training steps are compute-bound and small: one training gains less from a second
thread than a second training does from its own core, so trainings side by side, one thread
each, finish a seed sooner. :class:`TrainingPool` runs a list of independent trainings that
way (``--jobs N`` worker processes, started with ``spawn``) and hands back the saved models.
Each training is a recipe's ``main`` (:mod:`hf_real3d.recipes`: ``sft``, ``blind_ft``,
``3drft``, the one training flow), given the seed's data already loaded. Every training, in a
worker or in this process, runs on one thread, so the figures do not depend on ``--jobs``; a
list of one trains here. Each model is read back from its saved folder.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import multiprocessing
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any

__all__ = ["TrainingJob", "TrainingPool", "one_thread"]


@dataclass
class TrainingJob:
    """One model to train: its name, the recipe that trains it (``sft``, ``blind_ft`` or
    ``3drft``) and that recipe's arguments."""

    name: str
    recipe: str
    script_args: Any  # ScriptArguments
    training_args: Any  # ReweightedConfig
    cost: float = field(default=1.0, compare=False)  # longest first when sharing workers


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Run torch's CPU kernels on one thread inside the block (then as before)."""
    # torch only when a model trains
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


_WORKER_DATA: dict[tuple, Any] = {}  # a worker's training data, by dataset and settings


def _worker_init() -> None:
    # torch in the worker process only
    import torch

    torch.set_num_threads(1)


def _data_key(sargs: Any) -> tuple:
    """What decides a training's data: two jobs with the same key train on the same rows."""
    return (sargs.dataset_name, sargs.dataset_config, sargs.dataset_train_split,
            sargs.dataset_test_split, sargs.max_objects, sargs.points_per_object,
            sargs.max_length, sargs.max_train_questions, sargs.rotation_augment,
            sargs.rotation_viewpoints, sargs.rotation_set, sargs.rotation_kinds,
            sargs.rotation_kind_column)


def _cached_data(cache: dict[tuple, Any], sargs: Any, tokenizer: Any) -> Any:
    """The training data of ``sargs`` (loaded once per key, with ``tokenizer`` so that
    token ids are the parent's); only one dataset's entries are kept."""
    # the recipes' data loading, when a training needs other data than it was given
    from hf_real3d.training.recipe import load_training_data

    key = _data_key(sargs)
    if key not in cache:
        for k in [k for k in cache if k[0] != key[0]]:
            del cache[k]  # one seed's data at a time
        cache[key] = load_training_data(sargs, tokenizer=tokenizer)
    return cache[key]


def _train(job: TrainingJob, data: Any) -> None:
    """``job``'s recipe trains it on ``data`` (the training data of its arguments)."""
    # the recipes (and the training stack they import), when something trains
    from hf_real3d.recipes import load_recipe

    load_recipe(job.recipe).main(job.script_args, job.training_args, data=data)


def _train_in_worker(job: TrainingJob, tokenizer: Any) -> str:
    """Train ``job`` in a worker (its data loaded once per dataset, with the parent's
    tokenizer, so token ids are the parent's); return the saved model's folder."""
    _train(job, _cached_data(_WORKER_DATA, job.script_args, tokenizer))
    return job.training_args.output_dir


class TrainingPool:
    """``jobs`` worker processes for independent trainings (``jobs`` <= 1: none, each
    training runs here, one after the other). Use as a context manager."""

    def __init__(self, jobs: int = 2):
        self.jobs = max(1, int(jobs))
        self._executor: ProcessPoolExecutor | None = None
        self._data: dict[tuple, Any] = {}  # other data than the given, by key (jobs=1)

    def __enter__(self) -> TrainingPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None

    def _pool(self) -> ProcessPoolExecutor:
        if self._executor is None:
            self._executor = ProcessPoolExecutor(
                max_workers=self.jobs, mp_context=multiprocessing.get_context("spawn"),
                initializer=_worker_init)
        return self._executor

    def train(self, jobs: Sequence[TrainingJob], data: Any, data_args: Any = None
              ) -> dict[str, Any]:
        """Train every job (``data``: the parent's :class:`TrainingData` of ``data_args``,
        whose tokenizer every training uses; a job whose arguments read other data, e.g.
        rotation-augmented, loads its own once); return ``{name: SceneLM}`` in the jobs'
        order."""
        # SceneLM, when something trains
        from hf_real3d.modeling import SceneLM

        if self.jobs == 1 or len(jobs) == 1:
            with one_thread():
                for job in jobs:
                    own = data if data_args is None or \
                        _data_key(job.script_args) == _data_key(data_args) else \
                        _cached_data(self._data, job.script_args, data.tokenizer)
                    _train(job, own)
        else:
            self._train_side_by_side(jobs, data)
        # every model as saved, wherever it trained
        return {job.name: SceneLM.from_pretrained(job.training_args.output_dir) for job in jobs}

    def _train_side_by_side(self, jobs: Sequence[TrainingJob], data: Any) -> None:
        """The workers train ``jobs``, longest first. Their own step bars would share one
        terminal line, so they are off there; one bar here counts the finished models
        (shown when a job asked for progress bars; the bar does not change training)."""
        # tqdm comes with transformers; imported where the bar is drawn
        from tqdm.auto import tqdm

        show = any(not job.training_args.disable_tqdm for job in jobs)
        pool = self._pool()
        futures: dict[Future, TrainingJob] = {}
        for job in sorted(jobs, key=lambda j: -j.cost):  # longest first
            quiet = dataclasses.replace(job, training_args=copy.copy(job.training_args))
            quiet.training_args.disable_tqdm = True
            futures[pool.submit(_train_in_worker, quiet, data.tokenizer)] = job
        names = ", ".join(job.name for job in jobs)
        with tqdm(total=len(jobs), disable=not show, unit="model",
                  desc=f"training side by side ({self.jobs} at a time): {names}") as bar:
            for f in as_completed(futures):
                f.result()
                bar.set_postfix_str(f"{futures[f].name} done", refresh=False)
                bar.update()
