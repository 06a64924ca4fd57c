"""SceneLM: an object-centric 3D encoder whose outputs are prefix tokens of any causal LM.

Each scene object is a set of ``P`` points (xyz + rgb) plus its box (centre + size). A small
point MLP with max-pooling and a box MLP encode an object; a projection maps it into the
language model's embedding space. The sequence the LM sees is ``[3D tokens] + [text]``.

``blind=True`` drops the 3D tokens (the text-only model the papers call *blind*);
``blind_mode="zeroed"`` keeps them but feeds zeros, as the Real-3DQA pseudocode does.
Logits are returned for the text positions only, so full and text-only passes align token
by token.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from transformers import AutoConfig, AutoModelForCausalLM, LlamaConfig, PretrainedConfig
from transformers import initialization as init
from transformers.modeling_outputs import ModelOutput
from transformers.modeling_utils import PreTrainedModel

from hf_real3d.modeling.settings import DEFAULTS, SceneModelArguments

__all__ = ["SceneLMConfig", "SceneLM", "SceneLMOutput", "SCENE_INPUT_NAMES", "causal_lm_loss",
           "QuestionReader"]

SCENE_INPUT_NAMES = ("object_points", "object_boxes", "object_mask", "object_labels",
                     "object_directions", "object_colors")
DIRECTION_FEATURES = 7  # cos, sin of the egocentric angle, planar distance, 4-way bin one-hot


class SceneLMConfig(PretrainedConfig):
    """Configuration of :class:`SceneLM`.

    Args:
        text_config: the language model's config (a dict or ``PretrainedConfig``); default
            a 2-layer Llama with hidden size 128, the embedded benchmark's model. The 3D
            input's defaults are :data:`hf_real3d.modeling.settings.DEFAULTS`, the ones the
            recipes and the demo use.
        lm_path: a local checkpoint of the language model to load instead of building it
            from ``text_config`` (Qwen, Llama, ...).
        point_dim: features per point (xyz + rgb = 6).
        encoder_hidden: width of the object encoder.
        max_objects, points_per_object: the 3D input's shape.
        egocentric: objects are given in the agent's frame (x forward, y left), computed
            from the annotated pose, as in SQA3D's oracle-localisation setting.
        blind: drop the 3D input entirely (text-only model).
        blind_mode: how the text-only pass removes 3D: ``"drop"`` or ``"zeroed"``.
        direction_features: each box also gets the egocentric angle (cos, sin), the planar
            distance and the front/right/back/left bin (one-hot), computed from the pose.
        object_labels: each object token also carries the mean word embedding of its label
            (``object_labels`` input: label token ids, -1 padded), sharing the language
            model's embeddings, as 3D-LLMs that read detected object labels do.
        direction_words: each object token also carries the word embedding of its
            egocentric direction ("front", "right", "behind", "left"; ``object_directions``
            input), the words the questions use, so a question's "left" and a left object
            share a vector.
        question_reader: prepend ``reader_heads`` + 1 question-guided tokens to the 3D
            tokens (:class:`QuestionReader`): attention pools over the objects whose label
            (and direction word) the question's own words match, and a count token. Needs
            ``object_labels`` and the ``question_mask`` input.
        reader_heads: pooling heads of the question reader.
        object_tokens: put the object tokens in the language model's sequence (False: the
            question reader's tokens only, a shorter sequence).
        color_words: each object token also carries the word embedding of its colour name,
            the named colour nearest to its points' mean colour (``object_colors`` input), as
            scene graphs with attributes give it.
    """

    model_type = "scene_lm"
    sub_configs = {"text_config": AutoConfig}

    def __init__(self, text_config=None, lm_path: str | None = None, point_dim: int = 6,
                 encoder_hidden: int = 128, max_objects: int = DEFAULTS.max_objects,
                 points_per_object: int = DEFAULTS.points_per_object, egocentric: bool = True,
                 blind: bool = False, blind_mode: str = "drop",
                 object_labels: bool = DEFAULTS.object_labels,
                 direction_features: bool = DEFAULTS.direction_features,
                 direction_words: bool = DEFAULTS.direction_words,
                 question_reader: bool = DEFAULTS.question_reader, reader_heads: int = 5,
                 color_words: bool = DEFAULTS.color_words,
                 object_tokens: bool = DEFAULTS.object_tokens, **kwargs):
        if isinstance(text_config, dict):
            text_config = AutoConfig.for_model(**text_config)
        self.text_config = text_config or text_config_for(512, DEFAULTS)
        if blind_mode not in ("drop", "zeroed"):
            raise ValueError(f"Expected blind_mode 'drop' or 'zeroed' but got {blind_mode!r}")
        self.lm_path = lm_path
        self.point_dim = point_dim
        self.encoder_hidden = encoder_hidden
        self.max_objects = max_objects
        self.points_per_object = points_per_object
        self.egocentric = egocentric
        self.blind = blind
        self.blind_mode = blind_mode
        self.object_labels = object_labels
        self.direction_features = direction_features
        self.direction_words = direction_words
        if question_reader and not object_labels:
            raise ValueError("question_reader=True needs object_labels=True (it matches the "
                             "question's words to the objects' labels)")
        if not 1 <= reader_heads <= len(_READER_INIT):
            raise ValueError(f"Expected 1 <= reader_heads <= {len(_READER_INIT)} but got "
                             f"{reader_heads}")
        self.question_reader = question_reader
        self.color_words = color_words
        self.reader_heads = reader_heads
        if not object_tokens and not question_reader:
            raise ValueError("object_tokens=False leaves the language model no 3D input "
                             "unless question_reader=True")
        self.object_tokens = object_tokens
        super().__init__(**kwargs)


    @classmethod
    def from_settings(cls, settings: SceneModelArguments, tokenizer=None, *,
                      lm_path: str | None = None, blind: bool = False) -> SceneLMConfig:
        """The config of a SceneLM with these settings: a Llama of ``settings.hidden_size``
        and ``num_layers`` over ``tokenizer``'s vocabulary (or the local checkpoint
        ``lm_path``), the 3D input as ``settings`` say."""
        s = settings.settings()
        return cls(text_config=text_config_for(len(tokenizer) if tokenizer else 512, settings,
                                               tokenizer),
                   lm_path=lm_path, blind=blind,
                   **{k: s[k] for k in ("max_objects", "points_per_object", "object_labels",
                                        "direction_features", "direction_words",
                                        "question_reader", "color_words", "object_tokens")})


def text_config_for(vocab_size: int, settings: SceneModelArguments, tokenizer=None
                    ) -> LlamaConfig:
    """The language model SceneLM builds from settings: a Llama of ``hidden_size`` and
    ``num_layers`` (4 heads, MLP twice as wide, tied embeddings)."""
    ids = {} if tokenizer is None else {"pad_token_id": tokenizer.pad_token_id,
                                        "bos_token_id": tokenizer.bos_token_id,
                                        "eos_token_id": tokenizer.eos_token_id}
    return LlamaConfig(vocab_size=vocab_size, hidden_size=settings.hidden_size,
                       intermediate_size=2 * settings.hidden_size,
                       num_hidden_layers=settings.num_layers, num_attention_heads=4,
                       num_key_value_heads=4, max_position_embeddings=256,
                       tie_word_embeddings=True, **ids)


# initial weights of each reader head on (label match, direction-word match, distance), and
# the head's count threshold: the object the question names; the nearest object in the
# direction it names; an object matching both (counts need both); the nearest and the
# farthest of the objects it names
_READER_INIT = ((10.0, 0.0, 0.0), (0.0, 10.0, -2.0), (10.0, 10.0, 0.0), (10.0, 0.0, -2.0),
                (10.0, 0.0, 2.0))
_COUNT_BIAS = (-5.0, -5.0, -15.0, -5.0, -5.0)
_COUNT_STEPS = (0.5, 1.5, 2.5, 3.5)


def _unit(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm(dim=-1, keepdim=True).clamp_min(1e-6)


class QuestionReader(nn.Module):
    """Question-guided pooling over object tokens (as VQA models fuse question and objects).

    For each object: how well the question's words match its label (mean over the label's
    words of the best cosine with a question word, in the language model's own word
    embeddings, so "chair" matches a chair from the first step), how well they match its
    egocentric direction word, and its distance. Each head pools the object tokens with a
    softmax over a learned mix of these and a learned content score; a count token sums
    a per-head sigmoid of the same scores (soft counts, as thresholds). Output: ``heads`` + 1
    tokens to put before the object tokens.
    """

    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.mix = nn.Parameter(torch.tensor(_READER_INIT[:heads]))
        self.content = nn.Linear(d, heads)
        self.value = nn.Linear(d, d)
        self.count_bias = nn.Parameter(torch.tensor(_COUNT_BIAS[:heads]))
        self.count = nn.Linear(heads * len(_COUNT_STEPS), d)

    def reset_parameters(self) -> None:
        # transformers' init functions skip parameters loaded from a checkpoint
        init.copy_(self.mix, torch.tensor(_READER_INIT[:self.heads]))
        init.copy_(self.count_bias, torch.tensor(_COUNT_BIAS[:self.heads]))
        for lin in (self.content, self.value):  # start as plain pooling of the tokens
            init.zeros_(lin.weight)
            init.zeros_(lin.bias)
        init.normal_(self.count.weight, std=0.02)
        init.zeros_(self.count.bias)

    def forward(self, objects: torch.Tensor, object_mask: torch.Tensor, words: nn.Embedding,
                text_embeds: torch.Tensor, question_mask: torch.Tensor,
                object_labels: torch.Tensor, object_directions: torch.Tensor | None,
                distance: torch.Tensor, return_weights: bool = False):
        """``text_embeds``: the word embeddings of the text (B, T, D), as the language model
        gets them; ``words``: its embedding table (for the labels and direction words)."""
        q = _unit(text_embeds).to(objects.dtype)  # (B, T, D)
        qm = question_mask.bool()
        keep = object_labels.ge(0)  # (B, O, L)
        lab = _unit(words(object_labels.clamp_min(0))).to(objects.dtype)  # (B, O, L, D)
        sim = torch.einsum("bold,btd->bolt", lab, q).masked_fill(~qm[:, None, None], -1.0)
        per_word = sim.amax(-1).clamp_min(0)  # best question word per label word
        s_lab = (per_word * keep).sum(-1) / keep.sum(-1).clamp_min(1)  # (B, O)
        if object_directions is not None:
            dirs = _unit(words(object_directions.clamp_min(0))).to(objects.dtype)  # (B, O, D)
            s_dir = torch.einsum("bod,btd->bot", dirs, q).masked_fill(~qm[:, None], -1.0)
            s_dir = s_dir.amax(-1).clamp_min(0) * object_directions.ge(0)
        else:
            s_dir = torch.zeros_like(s_lab)
        feats = torch.stack([s_lab, s_dir, distance.to(objects.dtype)], -1)  # (B, O, 3)
        logits = feats @ self.mix.t().to(objects.dtype) + self.content(objects)  # (B, O, H)
        valid = object_mask.bool()[..., None]
        att = torch.softmax(logits.masked_fill(~valid, -1e4), dim=1) * valid
        pooled = torch.einsum("boh,bod->bhd", att, objects + self.value(objects))
        # soft counts of the objects matching the words (distance and content left out)
        matched = feats[..., :2] @ self.mix[:, :2].t().to(objects.dtype)
        soft = torch.sigmoid(matched + self.count_bias) * valid  # (B, O, H)
        counts = soft.sum(1)  # (B, H)
        # (a constant made here: transformers leaves non-persistent buffers of a loaded
        # model uninitialised)
        steps = torch.tensor(_COUNT_STEPS, dtype=counts.dtype, device=counts.device)
        steps = torch.sigmoid(4 * (counts[..., None] - steps))
        count_tok = self.count(steps.flatten(1))[:, None]  # (B, 1, D)
        tokens = torch.cat([pooled, count_tok], dim=1)
        return (tokens, att) if return_weights else tokens


@dataclass
class SceneLMOutput(ModelOutput):
    """What :class:`SceneLM` returns: the loss (with labels), the text positions' logits, the
    attentions over the whole sequence (3D tokens first) and how many 3D tokens lead it."""
    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None  # (B, T_text, V)
    attentions: tuple | None = None  # over the full sequence, 3D tokens first
    n_prefix: int | None = None


def causal_lm_loss(logits: torch.Tensor, labels: torch.Tensor,
                   num_items_in_batch: torch.Tensor | int | None = None) -> torch.Tensor:
    """Summed next-token cross-entropy over ``labels != -100``, divided by
    ``num_items_in_batch`` (tokens in the whole accumulated batch) or the local count."""
    shift_logits = logits[:, :-1].float()
    shift_labels = labels[:, 1:]
    ce = nn.functional.cross_entropy(shift_logits.reshape(-1, shift_logits.size(-1)),
                                     shift_labels.reshape(-1), ignore_index=-100,
                                     reduction="sum")
    denom = num_items_in_batch if num_items_in_batch is not None else \
        shift_labels.ne(-100).sum().clamp_min(1)
    return ce / denom


class SceneLM(PreTrainedModel):
    """A causal language model that reads a scene: object tokens (points, box, label and direction
    words) before the text. ``blind`` models read the text alone."""
    config_class = SceneLMConfig
    base_model_prefix = "scene_lm"
    main_input_name = "input_ids"
    accepts_loss_kwargs = True  # the Trainer passes num_items_in_batch
    loss_type = "ForCausalLM"
    _supports_sdpa = True
    _supports_attention_backend = True

    def __init__(self, config: SceneLMConfig, language_model: nn.Module | None = None):
        super().__init__(config)
        if language_model is not None:
            self.lm = language_model
        elif config.lm_path:
            self.lm = AutoModelForCausalLM.from_pretrained(config.lm_path)
        else:
            self.lm = AutoModelForCausalLM.from_config(config.text_config)
        d = self.lm.get_input_embeddings().embedding_dim
        h = config.encoder_hidden
        self.point_mlp = nn.Sequential(nn.Linear(config.point_dim, h), nn.GELU(), nn.Linear(h, h))
        box_dim = 6 + (DIRECTION_FEATURES if config.direction_features else 0)
        self.box_mlp = nn.Sequential(nn.Linear(box_dim, h), nn.GELU(), nn.Linear(h, h))
        self.proj = nn.Sequential(nn.GELU(), nn.Linear(h, d))
        self.reader = QuestionReader(d, config.reader_heads) if config.question_reader else None
        self.post_init()

    def _init_weights(self, module):
        # the language model initialises itself; only the 3D encoder is ours
        own = {id(m) for part in ("point_mlp", "box_mlp", "proj")
               if getattr(self, part, None) is not None
               for m in getattr(self, part).modules()}
        if isinstance(module, nn.Linear) and id(module) in own:
            nn.init.normal_(module.weight, std=0.02)
            nn.init.zeros_(module.bias)
        if isinstance(module, QuestionReader):
            module.reset_parameters()

    scene_input_names = SCENE_INPUT_NAMES  # the keyword inputs that carry the scene

    def text_only_inputs(self, inputs: dict, mode: str = "drop") -> dict:
        """The keyword inputs of a text-only pass (3DR-FT): the 3D inputs dropped, or fed
        with no information (``"zeroed"``: points and boxes 0, word ids -1, the object
        mask kept so the sequence layout stays)."""
        if mode == "drop":
            return {k: v for k, v in inputs.items() if k not in SCENE_INPUT_NAMES}
        if mode != "zeroed":
            raise ValueError(f"Expected mode 'drop' or 'zeroed' for SceneLM but got {mode!r}")
        ids = ("object_labels", "object_directions", "object_colors")
        return {k: (torch.full_like(v, -1) if k in ids else torch.zeros_like(v))
                if k in SCENE_INPUT_NAMES and k != "object_mask" else v
                for k, v in inputs.items()}

    def get_input_embeddings(self):
        return self.lm.get_input_embeddings()

    def set_input_embeddings(self, value):
        self.lm.set_input_embeddings(value)

    def encode_scene(self, object_points: torch.Tensor, object_boxes: torch.Tensor,
                     object_labels: torch.Tensor | None = None,
                     object_directions: torch.Tensor | None = None,
                     object_colors: torch.Tensor | None = None) -> torch.Tensor:
        """(B, O, P, 6) points, (B, O, 6) boxes and optional (B, O, L) label token ids (-1:
        padding) -> (B, O, D) prefix embeddings."""
        pts = self.point_mlp(object_points).amax(dim=2)
        prefix = self.proj(pts + self.box_mlp(object_boxes))
        if object_labels is not None:
            keep = object_labels.ge(0)
            words = self.lm.get_input_embeddings()(object_labels.clamp_min(0))
            words = (words * keep.unsqueeze(-1)).sum(2) / keep.sum(2, keepdim=True).clamp_min(1)
            prefix = prefix + words.to(prefix.dtype)
        for ids in (object_directions, object_colors):
            if ids is not None:
                keep = ids.ge(0).unsqueeze(-1)
                words = self.lm.get_input_embeddings()(ids.clamp_min(0))
                prefix = prefix + (words * keep).to(prefix.dtype)
        return prefix

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        object_points: torch.Tensor | None = None,
        object_boxes: torch.Tensor | None = None,
        object_mask: torch.Tensor | None = None,
        object_labels: torch.Tensor | None = None,
        object_directions: torch.Tensor | None = None,
        object_colors: torch.Tensor | None = None,
        question_mask: torch.Tensor | None = None,
        blind: bool | None = None,
        output_attentions: bool = False,
        num_items_in_batch: torch.Tensor | int | None = None,
        **kwargs,
    ) -> SceneLMOutput:
        blind = self.config.blind if blind is None else blind
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        embeds = self.lm.get_input_embeddings()(input_ids)
        n_prefix = 0
        drop = object_points is None or (blind and self.config.blind_mode == "drop")
        if not drop:
            if object_boxes is None or object_mask is None:
                raise ValueError("Expected object_points, object_boxes and object_mask together")
            if blind:  # zeroed: same sequence layout, no 3D information
                object_points = torch.zeros_like(object_points)
                object_boxes = torch.zeros_like(object_boxes)
                object_labels = None
                object_directions = None
                object_colors = None
            prefix = self.encode_scene(object_points.to(embeds.dtype),
                                       object_boxes.to(embeds.dtype), object_labels,
                                       object_directions, object_colors)
            if self.reader is not None:
                if blind:  # zeroed: the reader's tokens are there, empty
                    read = prefix.new_zeros(prefix.size(0), self.reader.heads + 1,
                                            prefix.size(-1))
                elif question_mask is None or object_labels is None:
                    raise ValueError("question_reader needs the question_mask and "
                                     "object_labels inputs (SceneQACollator(question_mask="
                                     "True, object_labels=True))")
                else:
                    qm = question_mask[:, :input_ids.size(1)]
                    if qm.size(1) < input_ids.size(1):  # tokens generated after the prompt
                        qm = nn.functional.pad(qm, (0, input_ids.size(1) - qm.size(1)))
                    read = self.reader(prefix, object_mask, self.lm.get_input_embeddings(),
                                       embeds, qm, object_labels, object_directions,
                                       object_boxes[..., :2].norm(dim=-1))
                if self.config.object_tokens:
                    prefix = torch.cat([read, prefix], dim=1)
                    object_mask = torch.cat([object_mask.new_ones(read.shape[:2]), object_mask],
                                            1)
                else:  # the language model sees the reader's tokens only
                    prefix, object_mask = read, object_mask.new_ones(read.shape[:2])
            n_prefix = prefix.size(1)
            embeds = torch.cat([prefix, embeds], dim=1)
            attention_mask = torch.cat([object_mask.to(attention_mask.dtype), attention_mask], 1)
        position_ids = (attention_mask.long().cumsum(-1) - 1).clamp_min(0)
        out = self.lm(inputs_embeds=embeds, attention_mask=attention_mask,
                      position_ids=position_ids, output_attentions=output_attentions,
                      use_cache=False)
        logits = out.logits[:, n_prefix:]
        loss = causal_lm_loss(logits, labels, num_items_in_batch) if labels is not None else None
        return SceneLMOutput(loss=loss, logits=logits,
                             attentions=out.attentions if output_attentions else None,
                             n_prefix=n_prefix)

    @torch.no_grad()
    def generate_answers(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                         eos_token_id: int, pad_token_id: int, max_new_tokens: int = 6,
                         **scene_inputs) -> tuple[list[list[int]], torch.Tensor]:
        """Greedy answers for left-padded prompts; returns token ids and their summed
        log-probabilities (the answer's log-prob under this model)."""
        ids, mask = input_ids, attention_mask
        done = torch.zeros(ids.size(0), dtype=torch.bool, device=ids.device)
        logp = torch.zeros(ids.size(0), device=ids.device)
        out_tokens: list[list[int]] = [[] for _ in range(ids.size(0))]
        for _ in range(max_new_tokens):
            logits = self(input_ids=ids, attention_mask=mask, **scene_inputs).logits[:, -1]
            lp = torch.log_softmax(logits.float(), -1)
            nxt = lp.argmax(-1)
            logp += torch.where(done, torch.zeros_like(logp), lp.gather(1, nxt[:, None])[:, 0])
            for i, t in enumerate(nxt.tolist()):
                if not done[i] and t != eos_token_id:
                    out_tokens[i].append(t)
            done |= nxt.eq(eos_token_id)
            nxt = torch.where(done, torch.full_like(nxt, pad_token_id), nxt)
            ids = torch.cat([ids, nxt[:, None]], 1)
            mask = torch.cat([mask, (~done).long()[:, None] | mask.new_zeros(mask.size(0), 1)], 1)
            if done.all():
                break
        return out_tokens, logp


AutoConfig.register("scene_lm", SceneLMConfig, exist_ok=True)
