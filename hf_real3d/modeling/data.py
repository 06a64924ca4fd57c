"""Tokenizer, scene tensors and the collator that turns QA rows into SceneLM batches.

A training example is ``"<situation> <question> <sep> <answer> </s>"`` with labels only on
the answer and ``</s>``. Scenes become fixed-size tensors once (:class:`SceneBank`); the
collator moves them into the agent's frame for each row (``egocentric=True``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from hf_real3d.geometry import Pose, direction_bin
from hf_real3d.scene import COLORS, Scene

__all__ = ["SPECIAL_TOKENS", "train_tokenizer", "SceneBank", "SceneInputs", "SceneQACollator",
           "ABLATIONS", "qa_rows", "collator_for"]

SPECIAL_TOKENS = {"pad_token": "<pad>", "unk_token": "<unk>", "bos_token": "<s>",
                  "eos_token": "</s>", "sep_token": "<sep>"}
# the words of the front / right / back / left bins, as the questions say them
DIRECTION_WORDS = ("front", "right", "behind", "left")
ABLATIONS = ("none", "no_3d", "shuffle_3d", "no_situation", "no_question")


def train_tokenizer(texts: Iterable[str], vocab_size: int = 512, save_to: str | None = None):
    """A lower-cased word-level tokenizer trained with ``tokenizers`` on ``texts``."""
    tok = Tokenizer(models.WordLevel(unk_token=SPECIAL_TOKENS["unk_token"]))
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Whitespace()])
    trainer = trainers.WordLevelTrainer(vocab_size=vocab_size,
                                        special_tokens=list(SPECIAL_TOKENS.values()))
    tok.train_from_iterator(texts, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, **SPECIAL_TOKENS)
    if save_to:
        fast.save_pretrained(save_to)
    return fast


@dataclass
class SceneBank:
    """Per-scene object tensors: points (O, P, 6) and boxes (O, 6) in world coordinates."""

    points: dict[str, np.ndarray] = field(default_factory=dict)
    boxes: dict[str, np.ndarray] = field(default_factory=dict)
    mask: dict[str, np.ndarray] = field(default_factory=dict)
    origin: dict[str, np.ndarray] = field(default_factory=dict)
    names: dict[str, list[str]] = field(default_factory=dict)  # object labels, token order
    label_ids: dict[str, np.ndarray] = field(default_factory=dict)  # (O, L), -1 padded
    colors: dict[str, list[str]] = field(default_factory=dict)  # named colour of the points
    color_ids: dict[str, np.ndarray] = field(default_factory=dict)  # (O,), -1 unknown/padding
    max_objects: int = 24
    points_per_object: int = 16

    @classmethod
    def from_scenes(cls, scenes: Iterable[Scene], max_objects: int = 24,
                    points_per_object: int = 16) -> SceneBank:
        bank = cls(max_objects=max_objects, points_per_object=points_per_object)
        for s in scenes:
            bank.add(s)
        return bank

    def add(self, scene: Scene) -> None:
        o, p = self.max_objects, self.points_per_object
        pts = np.zeros((o, p, 6), np.float32)
        boxes = np.zeros((o, 6), np.float32)
        mask = np.zeros(o, np.int64)
        objs = sorted(scene.non_structural(), key=lambda x: x.object_id)[:o]
        rng = np.random.default_rng(int(scene.scene_id[-7:-3]) if scene.scene_id[-7:-3].isdigit()
                                    else 0)
        for i, obj in enumerate(objs):
            src = obj.points if obj.points is not None and len(obj.points) else \
                np.concatenate([np.tile(obj.center, (1, 1)), np.full((1, 3), 0.5)], 1)
            idx = rng.choice(len(src), size=p, replace=len(src) < p)
            pts[i] = src[idx]
            boxes[i, :3], boxes[i, 3:] = obj.center, obj.size
            mask[i] = 1
        self.points[scene.scene_id] = pts
        self.boxes[scene.scene_id] = boxes
        self.mask[scene.scene_id] = mask
        self.origin[scene.scene_id] = np.asarray(scene.origin, np.float32)
        self.names[scene.scene_id] = [obj.label for obj in objs]
        self.colors[scene.scene_id] = [color_name(pts[i, :, 3:6]) for i in range(len(objs))]

    def tokenize_labels(self, tokenizer, max_tokens: int = 3) -> SceneBank:
        """Label token ids of every object (``label_ids``) and the token of its colour name
        (``color_ids``; -1 when the tokenizer does not know it), for models that read them."""
        for sid, names in self.names.items():
            ids = np.full((self.max_objects, max_tokens), -1, np.int64)
            for i, name in enumerate(names):
                toks = tokenizer(name, add_special_tokens=False)["input_ids"][:max_tokens]
                ids[i, :len(toks)] = toks
            self.label_ids[sid] = ids
            cids = np.full(self.max_objects, -1, np.int64)
            for i, name in enumerate(self.colors.get(sid, [])):
                toks = tokenizer(name, add_special_tokens=False)["input_ids"]
                if len(toks) == 1 and toks[0] != tokenizer.unk_token_id:
                    cids[i] = toks[0]
            self.color_ids[sid] = cids
        return self

    def tensors(self, scene_id: str, pose: Pose | None) -> tuple[np.ndarray, ...]:
        """Points, boxes, mask of a scene, moved into ``pose``'s frame when given."""
        if scene_id not in self.points:
            raise KeyError(f"scene {scene_id!r} is not in the scene bank; add its Scene first")
        pts, boxes = self.points[scene_id].copy(), self.boxes[scene_id].copy()
        if pose is not None:
            n = pts.shape[0] * pts.shape[1]
            pts[..., :3] = pose.to_ego(pts[..., :3].reshape(n, 3)).reshape(pts.shape[:2] + (3,))
            boxes[:, :3] = pose.to_ego(boxes[:, :3])
            m = self.mask[scene_id].astype(bool)
            pts[~m] = 0
            boxes[~m] = 0
        return pts, boxes, self.mask[scene_id]


def qa_rows(records: Sequence[Any]) -> list[dict[str, Any]]:
    """Rows the collator reads from :class:`~hf_real3d.sqa3d.SQA3DRecord` objects."""
    return [{"question_id": r.question_id, "rotation_deg": 0, "scene_id": r.scene_id,
             "situation": r.situation, "question": r.question, "answers": list(r.answers),
             "position": dict(r.position), "rotation": dict(r.rotation)} for r in records]


@dataclass(frozen=True)
class SceneInputs:
    """What a batch carries beside the tokens, as a SceneLM's config reads it
    (:func:`collator_for`): boxes in the agent's frame (``egocentric``), label ids
    (``object_labels``), the direction features appended to the boxes
    (``direction_features``), direction word ids (``direction_words``), the question's
    tokens (``question_mask``) and colour word ids (``color_words``)."""
    egocentric: bool = True
    object_labels: bool = False
    direction_features: bool = False
    direction_words: bool = False
    question_mask: bool = False
    color_words: bool = False


class SceneQACollator:
    """Batches for :class:`~hf_real3d.modeling.SceneLM` from QA rows.

    Rows need ``scene_id``, ``situation``, ``question``, ``position``, ``rotation`` and, for
    training, ``answers``. ``inputs``: what the batches carry beside the tokens
    (:class:`SceneInputs`). ``for_generation=True`` builds left-padded prompts only.
    ``ablation`` removes an input at inference: ``no_3d`` (drop the scene), ``shuffle_3d``
    (each row gets another scene), ``no_situation``, ``no_question``.
    ``blind_logprob_column``: a per-row list of the blind model's log-probs of the label
    tokens in answer order, packed into a tensor of that name (B, L) and ``<name>_mask``.
    """

    def __init__(self, tokenizer, bank: SceneBank, *, inputs: SceneInputs | None = None,
                 max_length: int = 64, for_generation: bool = False, ablation: str = "none",
                 blind_logprob_column: str | None = None, seed: int = 0):
        if ablation not in ABLATIONS:
            raise ValueError(f"Expected ablation in {ABLATIONS} but got {ablation!r}")
        self.tok, self.bank, self.max_length = tokenizer, bank, max_length
        self.inputs = inputs or SceneInputs()
        self.for_generation, self.ablation = for_generation, ablation
        self.blind_col = blind_logprob_column
        self.seed = seed
        self._direction_ids: np.ndarray | None = None

    def prompt(self, row: Mapping[str, Any]) -> str:
        sit = "" if self.ablation == "no_situation" else row["situation"]
        q = "" if self.ablation == "no_question" else row["question"]
        return f"{sit} {q}".strip()

    def encode(self, row: Mapping[str, Any]) -> tuple[list[int], list[int]]:
        tok = self.tok
        prompt = tok(self.prompt(row), add_special_tokens=False)["input_ids"]
        answer = [] if self.for_generation else \
            tok(row["answers"][0], add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
        head = [tok.bos_token_id]
        room = self.max_length - len(head) - 1 - len(answer)
        prompt = prompt[-room:] if room > 0 else []  # keep the question's end
        ids = head + prompt + [tok.sep_token_id] + answer
        labels = [-100] * (len(ids) - len(answer)) + answer
        return ids, labels

    def __call__(self, rows: Sequence[Mapping[str, Any]]) -> dict[str, torch.Tensor]:
        pretokenized = not self.for_generation and self.ablation == "none"
        enc = [(list(r["input_ids"]), list(r["labels"]))
               if pretokenized and r.get("input_ids") is not None else self.encode(r)
               for r in rows]
        width = max(len(i) for i, _ in enc)
        pad = self.tok.pad_token_id
        ids, mask, labels = [], [], []
        for i, lab in enc:
            n = width - len(i)
            if self.for_generation:  # left padding for generation
                ids.append([pad] * n + i)
                mask.append([0] * n + [1] * len(i))
            else:
                ids.append(i + [pad] * n)
                mask.append([1] * len(i) + [0] * n)
                labels.append(lab + [-100] * n)
        batch = {"input_ids": torch.tensor(ids), "attention_mask": torch.tensor(mask)}
        if not self.for_generation:
            batch["labels"] = torch.tensor(labels)
        if self.inputs.question_mask:
            batch["question_mask"] = self._question_mask(rows, batch["input_ids"])
        if self.blind_col is not None:
            batch[self.blind_col], batch[f"{self.blind_col}_mask"] = \
                self._blind(rows, batch["labels"])
        if self.ablation != "no_3d":
            scene_ids = [r["scene_id"] for r in rows]
            if self.ablation == "shuffle_3d":
                scene_ids = self._shuffled(scene_ids)
            ego = self.inputs.egocentric
            pts, boxes, m = zip(*[self.bank.tensors(sid, self._pose(r) if ego else None)
                                  for r, sid in zip(rows, scene_ids)])
            batch["object_points"] = torch.from_numpy(np.stack(pts))
            boxes = np.stack(boxes)
            if self.inputs.direction_features:
                boxes = np.concatenate([boxes, direction_features(boxes, np.stack(m))], -1)
            if self.inputs.direction_words:
                batch["object_directions"] = torch.from_numpy(
                    self._directions(boxes, np.stack(m)))
            batch["object_boxes"] = torch.from_numpy(boxes)
            batch["object_mask"] = torch.from_numpy(np.stack(m))
            for wanted, key, table, what in (
                    (self.inputs.object_labels, "object_labels", self.bank.label_ids, "label"),
                    (self.inputs.color_words, "object_colors", self.bank.color_ids, "colour")):
                if not wanted:
                    continue
                missing = [s for s in scene_ids if s not in table]
                if missing:
                    raise ValueError(f"scene {missing[0]!r} has no {what} ids; call "
                                     "bank.tokenize_labels(tokenizer) first")
                batch[key] = torch.from_numpy(np.stack([table[s] for s in scene_ids]))
        return batch

    def _question_mask(self, rows: Sequence[Mapping[str, Any]], ids: torch.Tensor
                       ) -> torch.Tensor:
        """(B, T) 1 on the question's tokens: the last ones before ``<sep>`` (the prompt is
        situation then question, truncated from the left)."""
        n_q = [0] * len(rows) if self.ablation == "no_question" else \
            [len(x) for x in self.tok([r["question"] for r in rows],
                                       add_special_tokens=False)["input_ids"]]
        out = torch.zeros(ids.shape, dtype=torch.long)
        sep = ids.eq(self.tok.sep_token_id).int().argmax(1).tolist()
        for i, (end, n) in enumerate(zip(sep, n_q)):
            out[i, max(1, end - n):end] = 1
        return out

    def _directions(self, boxes: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """(B, O) token ids of each object's egocentric direction word, -1 where masked."""
        if self._direction_ids is None:
            ids = []
            for word in DIRECTION_WORDS:  # a word the tokenizer does not know: no embedding
                toks = self.tok(word, add_special_tokens=False)["input_ids"]
                ids.append(toks[0] if len(toks) == 1 and toks[0] != self.tok.unk_token_id
                           else -1)
            self._direction_ids = np.array(ids, dtype=np.int64)
        ang = np.degrees(np.arctan2(boxes[..., 1], boxes[..., 0]))
        out = self._direction_ids[direction_bin(ang, 4)]
        return np.where(mask.astype(bool), out, -1)

    def _pose(self, row: Mapping[str, Any]) -> Pose:
        return Pose.from_sqa3d(row["position"], row["rotation"], self.bank.origin[row["scene_id"]],
                               item=f"question_id {row.get('question_id', '?')}")

    def _shuffled(self, scene_ids: list[str]) -> list[str]:
        """Each row gets a scene other than its own (from the bank), deterministically."""
        pool = sorted(self.bank.points)
        rng = np.random.default_rng(self.seed)
        out = []
        for sid in scene_ids:
            others = [s for s in pool if s != sid]
            out.append(others[int(rng.integers(len(others)))] if others else sid)
        return out

    def _blind(self, rows: Sequence[Mapping[str, Any]], labels: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor]:
        """The column's per-row log-probs, packed (B, L) with their mask, in answer order."""
        n_ans = labels[:, 1:].ne(-100).sum(1).tolist()
        width = max(n_ans, default=0)
        out = torch.zeros(len(rows), width, dtype=torch.float32)
        mask = torch.zeros(len(rows), width, dtype=torch.bool)
        for i, (r, n) in enumerate(zip(rows, n_ans)):
            vals = r.get(self.blind_col)
            if vals is None or len(vals) != n:
                raise ValueError(
                    f"question_id {r.get('question_id', '?')}: column {self.blind_col!r} has "
                    f"{0 if vals is None else len(vals)} log-probs but the row has {n} "
                    "answer tokens; recompute it with precompute_blind_logprobs for this "
                    "tokenizer")
            out[i, :n] = torch.tensor(vals, dtype=torch.float32)
            mask[i, :n] = True
        return out, mask


def color_name(rgb: np.ndarray) -> str:
    """The named colour (of :data:`hf_real3d.scene.COLORS`) nearest to the mean of ``rgb``
    (N, 3) in [0, 1]: a fixed colour classifier of an object's points."""
    names = list(COLORS)
    ref = np.asarray([COLORS[n] for n in names], np.float32) / 255.0
    mean = np.asarray(rgb, np.float32).reshape(-1, 3).mean(0)
    return names[int(((ref - mean) ** 2).sum(1).argmin())]


def direction_features(boxes: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """(..., O, 7) float32 from egocentric boxes (..., O, 6): cos and sin of the angle
    (0 front, +90 left), planar distance, one-hot front/right/back/left bin."""
    x, y = boxes[..., 0], boxes[..., 1]
    ang = np.degrees(np.arctan2(y, x))
    one_hot = np.eye(4, dtype=np.float32)[direction_bin(ang, 4)]
    feats = np.concatenate([np.stack([np.cos(np.radians(ang)), np.sin(np.radians(ang)),
                                      np.hypot(x, y)], -1), one_hot], -1).astype(np.float32)
    return feats * mask[..., None].astype(np.float32)


def default_tokenizer_corpus(items: Iterable[Any]) -> list[str]:
    """Texts to train the word-level tokenizer on: situations, questions, answers and
    alternative situations of :class:`~hf_real3d.sqa3d.SQA3DRecord` objects or row dicts."""
    texts: list[str] = []
    for r in items:
        get = r.__getitem__ if isinstance(r, Mapping) else r.__getattribute__
        texts += [get("situation"), get("question"), *get("answers"),
                  *get("alternative_situation")]
    return texts


def collator_for(model: Any, tokenizer, bank: SceneBank, **kwargs) -> SceneQACollator:
    """The :class:`SceneQACollator` giving ``model`` (a SceneLM) the inputs its config reads."""
    c = model.config
    inputs = SceneInputs(egocentric=c.egocentric, object_labels=c.object_labels,
                         direction_features=c.direction_features,
                         direction_words=c.direction_words,
                         question_mask=getattr(c, "question_reader", False),
                         color_words=getattr(c, "color_words", False))
    return SceneQACollator(tokenizer, bank, inputs=inputs, **kwargs)
