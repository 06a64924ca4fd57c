"""Real-ScanQA: ScanQA filtered by the Real-3DQA pipeline, published and scored.

Modules: :mod:`.format` (citation, row schema), :mod:`.build`, :mod:`.predictions`,
:mod:`.evaluate`, :mod:`.report`.

The paper builds its second de-biased benchmark from ScanQA with the same filter as
Real-3DQA (a question goes when a (full, blind) pair answers it both with and without 3D,
or a text-only judge answers it). ScanQA has no situation or agent pose, so there is no
rotation: the scores are EM / refined EM (the Real-3DQA rules, including the
reproduce-official switch) and ScanQA's captioning metrics.

Captioning metrics: BLEU-1..4, ROUGE-L, METEOR and CIDEr from ``pycocoevalcap`` (the
package ScanQA's own evaluation uses), tokenised by its PTB tokenizer; the tokenizer and
METEOR run Java (a JRE). SPICE is left out: it downloads Stanford CoreNLP models at first
use, which this library never does at run time.
"""

from hf_real3d.real_scanqa.build import build_real_scanqa
from hf_real3d.real_scanqa.evaluate import caption_metrics, evaluate_real_scanqa, score_real_scanqa
from hf_real3d.real_scanqa.format import CAPTION_METRICS, CITATION

__all__ = ["build_real_scanqa", "score_real_scanqa", "caption_metrics", "evaluate_real_scanqa",
           "CAPTION_METRICS", "CITATION"]
