"""What this package's ``evaluate`` modules share: ``compute`` without the Arrow round trip,
and their publishing as Hub Spaces (:func:`publish_metrics`, ``hf-real3d publish-metrics``).

``evaluate``'s ``compute(predictions=..., references=...)`` writes every input row to an
Arrow cache file and reads it back before calling ``_compute``; on a million rows that round
trip costs several times the scoring itself. :class:`InMemoryCompute` calls ``_compute`` on
the given inputs directly when nothing needs the cache: one process (``num_process == 1``),
no rows added earlier with ``add_batch``, every input given. Everything else (``add_batch``
then ``compute()``, distributed evaluation) takes ``evaluate``'s own path, and both paths
return the same values (tested).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from datasets.utils.py_utils import temp_seed  # the seed context evaluate's compute uses

from hf_real3d import METRICS, metric_path

__all__ = ["InMemoryCompute", "publish_metrics"]


class InMemoryCompute:
    """Mixin placed before ``evaluate.Metric`` in a module's bases."""

    def compute(self, *, predictions: Any = None, references: Any = None,
                **kwargs: Any) -> dict | None:
        """Compute the metric (keyword arguments only); the inputs are described below.
        """
        names = list(self._feature_names())
        given = {"predictions": predictions, "references": references, **kwargs}
        direct = (getattr(self, "num_process", 1) == 1 and self.writer is None
                  and self.buf_writer is None
                  and all(given.get(n) is not None for n in names))
        if not direct:
            return super().compute(predictions=predictions, references=references, **kwargs)
        inputs = {n: given[n] for n in names}
        lengths = {n: len(v) for n, v in inputs.items()}
        if len(set(lengths.values())) > 1:
            raise ValueError("Mismatch in the number of rows: "
                             + ", ".join(f"{n}={k}" for n, k in lengths.items()))
        compute_kwargs = {k: v for k, v in kwargs.items() if k not in names}
        with temp_seed(self.seed):
            return self._compute(**inputs, **compute_kwargs)


def publish_metrics(namespace: str, *, private: bool = False, token: str | None = None,
                    names: Sequence[str] | None = None) -> list[str]:
    """Upload the metric modules as Hub Spaces (evaluate's convention), so that
    ``evaluate.load("<namespace>/vrs")`` works for anyone with hf-real3d installed."""
    # the Hub client only to publish
    from huggingface_hub import HfApi

    # likewise
    from hf_real3d.hub import hub_errors

    api = HfApi(token=token)
    urls = []
    for name in names or METRICS:
        src = Path(metric_path(name))
        repo_id = f"{namespace}/{name}"
        with tempfile.TemporaryDirectory() as tmp:
            t = Path(tmp)
            for f in src.iterdir():
                if f.is_file() and f.suffix in (".py", ".md", ".txt"):
                    (t / f.name).write_bytes(f.read_bytes())
            (t / "app.py").write_text(
                "import evaluate\nfrom evaluate.utils import launch_gradio_widget\n\n"
                f"module = evaluate.load({repo_id!r})\nlaunch_gradio_widget(module)\n")
            with hub_errors(f"publish metric {name} as {repo_id}"):
                api.create_repo(repo_id, repo_type="space", space_sdk="gradio",
                                private=private, exist_ok=True)
                api.upload_folder(folder_path=tmp, repo_id=repo_id, repo_type="space",
                                  commit_message=f"Upload {name} metric with hf_real3d")
        urls.append(f"{api.endpoint}/spaces/{repo_id}")
    return urls
