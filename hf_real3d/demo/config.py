"""The demo's settings and its cast: which models it trains, the role of each, and each
3DR-FT arm's equal-training control."""

from __future__ import annotations

import difflib
import time
from dataclasses import dataclass

from hf_real3d._fields import help_field
from hf_real3d.modeling.settings import SceneModelArguments
from hf_real3d.synth import SynthConfig

__all__ = ["DemoConfig", "MODELS", "CORE_MODELS", "OPTIONAL_ARMS", "DEFAULT_ARMS", "ROLES",
           "ARM_CONTROLS", "FAMILY_ARMS", "ROTATION_ARMS", "ROTATION_CONTROLS", "ROTATION_NEEDS",
           "ARM_SETS", "COUNTER_PRIOR_SEED_OFFSET", "FILTER_SEED_OFFSET", "log"]

# every scored model, in report order; the filter's pair builds the filtered set and is
# scored too (marked)
MODELS = ("filter_full", "filter_blind", "sft", "blind", "3drft_paper", "3drft_official",
          "sft_more", "3drft_paper_grad", "cal_ft", "prior_ft", "excess_ft",
          "3drft_paper_normalised", "3drft_from_blind", "sft_from_blind", "sft_no3d",
          "sft_rot", "sft_rot_dro", "sft_rot_more", "3drft_rot", "sft_rot_transfer")
# the models every run trains: the filter's pair, the control, the blind reference, the
# paper's arm and its equal-training control (sft_no3d is the control without its 3D input)
CORE_MODELS = ("filter_full", "filter_blind", "sft", "blind", "3drft_paper", "sft_more",
               "sft_no3d")
ROLES = {"filter_full": "filter's full model (builds the filtered set)",
         "filter_blind": "filter's blind model (builds the filtered set)",
         "sft": "control: SFT not used by the filter", "blind": "3DR-FT's blind reference",
         "3drft_paper": "3DR-FT, paper variant", "3drft_official": "3DR-FT, official variant",
         "sft_more": "the control trained as long as 3DR-FT, without reweighting",
         "3drft_paper_grad": "3DR-FT, paper weights with gradient through the text-only "
                             "pass (Appendix E's reading), fine-tuning the control",
         "3drft_from_blind": "3DR-FT (paper) starting from the blind model's weights (§4.2)",
         "sft_from_blind": "SFT starting from the blind model's weights (3drft_from_blind's "
                           "control)",
         "sft_no3d": "the control without its 3D input",
         "sft_rot": "SFT on the rotation-augmented train split (every question from its 4 "
                    "viewpoints), as many optimizer steps as the control",
         "sft_rot_dro": "sft_rot with the viewpoint objective (viewpoint_dro: per question, "
                        "the viewpoint of highest loss weighted up), the same steps",
         "sft_rot_more": "sft_rot fine-tuned as many further steps as sft_more, augmented, "
                         "without reweighting (3drft_rot's control)",
         "3drft_rot": "3DR-FT (paper) fine-tuning sft_rot on the augmented split, the same "
                      "steps as sft_rot_more",
         "sft_rot_transfer": "SFT augmented on some question kinds only (transfer_kinds), "
                             "the control's steps: consistency on kinds never seen turned",
         # the reweighting family's arms (FAMILY_ARMS)
         "cal_ft": "CAL-style: the control fine-tuned with weights = its own gain from the "
                   "3D input, clamped to [1, 5]",
         "prior_ft": "PRIOR-style: the control fine-tuned with weights = the blind "
                     "reference's surprise, capped",
         "excess_ft": "Rho-1-style: the control fine-tuned on the 60% of tokens of highest "
                      "excess loss over the blind reference",
         "3drft_paper_normalised": "3DR-FT paper weights rescaled to mean 1 per batch"}
COUNTER_PRIOR_SEED_OFFSET = 2000  # the counter-prior evaluation rooms
FILTER_SEED_OFFSET = 1000  # the filter's pair: other initial weights and data order
# the reweighting family's arms: each fine-tunes the trained control exactly as 3drft_paper
# does, with its own token weights (the reweighting mode)
FAMILY_ARMS = {"cal_ft": "cal", "prior_ft": "prior", "excess_ft": "excess",
               "3drft_paper_normalised": "paper_normalised"}
# the viewpoint-consistency arms (--arms rotation): rotation-augmented training, the
# viewpoint objective, 3DR-FT on augmented data and the transfer test
ROTATION_ARMS = ("sft_rot", "sft_rot_dro", "sft_rot_more", "3drft_rot", "sft_rot_transfer")
# each rotation arm and its equal-compute control (same optimizer steps, same rooms)
ROTATION_CONTROLS = {"sft_rot": "sft", "sft_rot_dro": "sft_rot", "3drft_rot": "sft_rot_more",
                     "sft_rot_transfer": "sft"}
# what an arm needs trained besides itself (its start or its control)
ROTATION_NEEDS = {"sft_rot_dro": ("sft_rot",), "sft_rot_more": ("sft_rot",),
                  "3drft_rot": ("sft_rot", "sft_rot_more")}
# the arms beyond the core (--arms): 3DR-FT's other readings, the family and the rotation
# arms; naming 3drft_from_blind brings its control sft_from_blind
OPTIONAL_ARMS = tuple(m for m in MODELS if m not in CORE_MODELS)
# named sets --arms takes beside single arms
ARM_SETS = {"rotation": ROTATION_ARMS}
# `make demo`'s arms beside the core: the family's best arm of the 3-seed study (README)
DEFAULT_ARMS = ("prior_ft",)
# each 3DR-FT arm and its equal-compute control
ARM_CONTROLS = {"3drft_paper": "sft_more", "3drft_official": "sft_more",
                "3drft_paper_grad": "sft_more", "3drft_from_blind": "sft_from_blind",
                **{arm: "sft_more" for arm in FAMILY_ARMS}}


@dataclass
class DemoConfig(SceneModelArguments):
    """Sizes and settings of the demo (its defaults are the README's figures). SceneLM's own
    settings (``--hidden_size``, ``--object_tokens`` ...) are those of
    :class:`~hf_real3d.modeling.settings.SceneModelArguments`, with its defaults."""

    out: str = help_field("Output folder (report.md, results.json, plots, seed*/).",
                          default="outputs/demo")
    seeds: int = help_field("Repeat with seeds first_seed .. first_seed + N - 1 and report "
                            "mean ± std.", default=1)
    first_seed: int = help_field("The first seed (--first_seed 2 --seeds 1 runs seed 2 alone, "
                                 "with the figures it has in a longer run).", default=0)
    train_scenes: int = help_field("Synthetic rooms in the train split.", default=60)
    val_scenes: int = help_field("Synthetic rooms in the val split.", default=6)
    test_scenes: int = help_field("Synthetic rooms in the test split.", default=20)
    questions_per_scene: int = help_field("Questions per room (every split).", default=60)
    guessable_fraction: float = help_field("Share of questions that follow a language prior.",
                                           default=0.5)
    counter_prior_rate: float = help_field(
        "Share of usual-colour objects given another colour (counter-prior questions).",
        default=0.3)
    counter_prior_fraction: float = help_field("Share of questions that are counter-prior.",
                                               default=0.1)
    epochs: float = help_field("Training epochs of the scored models.", default=12.0)
    drft_from_sft: bool = help_field(
        "3DR-FT fine-tunes the trained control SFT (as the paper fine-tunes a trained 3D-LLM) "
        "for drft_epochs; `sft_more` gets the same extra epochs without reweighting. False: "
        "3DR-FT trains from scratch for `epochs`.", default=True)
    drft_epochs: float = help_field("3DR-FT epochs when it fine-tunes the control.",
                                    default=2.0)
    drft_learning_rate: float = help_field("3DR-FT peak learning rate when it fine-tunes the "
                                           "control.", default=3e-4)
    filter_epochs: float = help_field(
        "Training epochs of the filter's own (full, blind) pair (a smaller pair than the "
        "scored models: the filter needs only its blind model's answers).", default=4.0)
    batch_size: int = help_field("Training batch size.", default=16)
    learning_rate: float = help_field("Peak learning rate (cosine schedule).", default=1e-3)
    srbench_scenes: int = help_field("Rendered scenes of the synthetic 3DSRBench (0: skip).",
                                     default=5)
    srbench_views: int = help_field("Camera pairs (common + uncommon) per 3DSRBench scene.",
                                    default=3)
    srbench_questions_per_scene: int = help_field("3DSRBench questions tried per scene.",
                                                  default=18)
    counter_prior_scenes: int = help_field(
        "Rooms of the separate counter-prior evaluation subset (other rooms, seed + 2000, the "
        "same generator settings, every question counter-prior: ~20 per room).", default=20)
    srbench_model: bool = help_field(
        "Also train a small VLM on synthetic 3DSRBench renders per seed (common viewpoints "
        "only, and common + uncommon mixed) and score it, with a blank-image control, on the "
        "demo's 3DSRBench (the paper's viewpoint finding; several minutes per seed).",
        default=False)
    skip_real3dqa: bool = help_field(
        "Skip the Real-3DQA part (with --srbench_model: the 3DSRBench study alone).",
        default=False)
    srbench_train_scenes: int = help_field(
        "Rendered training scenes of the 3DSRBench VLM (generator seed 300 + seed; the test "
        "set is seed 0).", default=40)
    srbench_vlm_epochs: float = help_field("Training epochs of the 3DSRBench VLM.",
                                           default=20.0)
    arms: str = help_field(
        "Which models to train beside the core (filter pair, sft, blind, 3drft_paper, "
        "sft_more, sft_no3d): 'default' (the family's best arm, prior_ft), 'none', 'all' "
        "(3drft_official, 3drft_paper_grad, the reweighting family cal_ft, prior_ft, "
        "excess_ft, 3drft_paper_normalised, 3drft_from_blind with sft_from_blind, and the "
        "rotation arms sft_rot, sft_rot_dro, sft_rot_more, 3drft_rot, sft_rot_transfer), "
        "'rotation' (the rotation arms) or a comma-separated list of those.",
        default="default")
    viewpoint_temperature: float = help_field(
        "The rotation arm sft_rot_dro: the softmax temperature over a question's viewpoints' "
        "losses (viewpoint_dro).", default=1.0)
    transfer_kinds: str = help_field(
        "The rotation arm sft_rot_transfer: the question kinds it sees turned "
        "(comma-separated); consistency is measured on the other kinds that turn.",
        default="navigate,relation_direction,count_direction")
    jobs: int = help_field(
        "Models trained side by side, each on one CPU thread (1: one after the other). Every "
        "training runs on one thread whatever this is, so the figures do not depend on it.",
        default=2)
    progress: bool = help_field("Show progress bars.", default=True)

    def check(self) -> None:
        """Refuse settings that would fail later or do something else than meant, before any
        work: unknown or empty --arms, --jobs or --seeds below 1, sizes below what a run
        needs."""
        self.optional_arms()
        if self.seeds < 1 and not (self.skip_real3dqa and self.srbench_model):
            raise ValueError(f"`seeds` {self.seeds}: expected at least 1")
        if self.first_seed < 0:
            raise ValueError(f"`first_seed` {self.first_seed}: expected 0 or more")
        if self.jobs < 1:
            raise ValueError(f"`jobs` {self.jobs}: expected at least 1 (1: one training after "
                             "the other)")
        for name in ("train_scenes", "test_scenes", "questions_per_scene", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name} {getattr(self, name)}: expected at least 1")
        for name in ("epochs", "filter_epochs", "learning_rate"):
            if not getattr(self, name) > 0:
                raise ValueError(f"--{name} {getattr(self, name)}: expected a positive number")
        if not self.viewpoint_temperature > 0:
            raise ValueError(f"`viewpoint_temperature` {self.viewpoint_temperature}: expected a "
                             "positive number")
        if "sft_rot_transfer" in self.optional_arms() and not self.transfer_kind_list():
            raise ValueError("`transfer_kinds` is empty; name the kinds sft_rot_transfer sees "
                             "turned, comma-separated")
        if self.rotation_arms() and self.batch_size % 4:
            raise ValueError(f"`batch_size` {self.batch_size}: the rotation arms keep a "
                             "question's 4 viewpoints in one batch; use a multiple of 4")
        if self.skip_real3dqa and not self.srbench_model:
            raise ValueError("`skip_real3dqa` leaves nothing to run without `srbench_model`")

    def seed_list(self) -> list[int]:
        return list(range(self.first_seed, self.first_seed + self.seeds))

    def synth_config(self, seed: int) -> SynthConfig:
        return SynthConfig(
            seed=seed, guessable_fraction=self.guessable_fraction,
            counter_prior_rate=self.counter_prior_rate,
            counter_prior_fraction=self.counter_prior_fraction,
            scenes={"train": self.train_scenes, "val": self.val_scenes,
                    "test": self.test_scenes},
            questions_per_scene={s: self.questions_per_scene for s in ("train", "val", "test")})

    def optional_arms(self) -> tuple[str, ...]:
        """The arms beyond :data:`CORE_MODELS` this run trains (``--arms``), in report
        order; ``3drft_from_blind`` brings its control ``sft_from_blind``."""
        if self.arms == "default":
            names = set(DEFAULT_ARMS)
        elif self.arms == "none":
            names = set()
        elif self.arms == "all":
            names = set(OPTIONAL_ARMS)
        else:
            names = {a.strip() for a in self.arms.split(",") if a.strip()}
            for key, members in ARM_SETS.items():
                if key in names:
                    names = (names - {key}) | set(members)
            bad = sorted(names - set(OPTIONAL_ARMS))
            if bad or not names:
                near = difflib.get_close_matches(bad[0], OPTIONAL_ARMS, n=1) if bad else []
                raise ValueError(
                    f"`arms`: unknown arm {bad[0] if bad else self.arms!r}"
                    + (f" (did you mean {near[0]!r}?)" if near else "")
                    + f"; use 'default', 'none', 'all', 'rotation' or a comma-separated "
                    f"list of {list(OPTIONAL_ARMS)}")
        if "3drft_from_blind" in names:
            names.add("sft_from_blind")
        for arm in list(names):
            names |= set(ROTATION_NEEDS.get(arm, ()))
        return tuple(a for a in OPTIONAL_ARMS if a in names)

    def rotation_arms(self) -> tuple[str, ...]:
        """The viewpoint-consistency arms this run trains."""
        return tuple(a for a in self.optional_arms() if a in ROTATION_ARMS)

    def transfer_kind_list(self) -> list[str]:
        """``transfer_kinds`` as a list."""
        return [k.strip() for k in self.transfer_kinds.split(",") if k.strip()]

    def family_arms(self) -> tuple[str, ...]:
        """The reweighting family's arms this run trains."""
        return tuple(a for a in self.optional_arms() if a in FAMILY_ARMS)

    def models(self) -> tuple[str, ...]:
        """Every model this run scores, in :data:`MODELS` order: the core and the
        ``--arms``."""
        chosen = set(CORE_MODELS) | set(self.optional_arms())
        return tuple(m for m in MODELS if m in chosen)


def log(msg: str) -> None:
    """Print one timestamped line of the demo's progress."""
    print(f"[demo {time.strftime('%H:%M:%S')}] {msg}", flush=True)
