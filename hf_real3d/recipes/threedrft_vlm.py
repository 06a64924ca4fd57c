"""3D-reweighted fine-tuning (3DR-FT) of a Hugging Face VLM on a built dataset's rendered
views (a BEV with numbered objects + the agent's egocentric frame, GPT4Scene-style).

    hf-real3d synth --out data/synth && hf-real3d render-views --dataset data/synth
    hf-real3d train 3drft_vlm --config recipes/configs/3drft_vlm.yaml
    accelerate launch recipes/3drft_vlm.py --config recipes/configs/3drft_vlm.yaml
    accelerate launch --config_file recipes/accelerate/zero3.yaml recipes/3drft_vlm.py \
        --config recipes/configs/3drft_vlm.yaml --model_name_or_path path/to/your/vlm

The views config is rendered when the folder lacks it (one log line says so).
"""

from pathlib import Path

from hf_real3d.synth import ensure_benchmark
from hf_real3d.training import ReweightedConfig, ReweightedTrainer
from hf_real3d.training.args import DEFAULT_DATASET, VLMScriptArguments, parse_recipe_args
from hf_real3d.training.inputs import check_recipe_inputs
from hf_real3d.training.vlm import VLMCollator
from hf_real3d.training.vlm_recipe import (
    announce_vlm,
    blind_vlm,
    build_small_llava,
    load_vlm,
    vlm_rows,
)

# without arguments: the settings the README measured
CONFIG = Path(__file__).resolve().parent / "configs" / "3drft_vlm.yaml"

__all__ = ["main", "parse"]


def parse(argv=None):
    """Arguments: the YAML config's settings, then ``--config`` and flags over them."""
    return parse_recipe_args(argv, CONFIG, (VLMScriptArguments, ReweightedConfig),
                             recipe="the 3drft_vlm recipe")


def main(script_args, training_args):
    """3DR-FT of a Hugging Face VLM on rendered views: data, model, trainer, train, save."""
    # what it reads and writes, checked before any data is read
    check_recipe_inputs(script_args, training_args, kind="vlm")
    # data: the questions joined with their rendered views (rendered when the folder lacks
    # them; the default dataset is built first when absent)
    with training_args.main_process_first(desc="dataset"):
        if script_args.dataset_name == DEFAULT_DATASET:
            ensure_benchmark(DEFAULT_DATASET)
        train = vlm_rows(script_args.dataset_name, script_args.dataset_config,
                         script_args.dataset_train_split, limit=script_args.max_train_questions,
                         augment=script_args.rotation_augment,
                         rotation_viewpoints=script_args.rotation_viewpoints)
    # model: a local VLM folder with its processor, or a small LLaVA built from config
    if script_args.model_name_or_path:
        model, proc = load_vlm(script_args.model_name_or_path)
    else:
        model, proc = build_small_llava(train, script_args.hidden_size, script_args.num_layers,
                                        script_args.image_size)
    # the blind reference, for the modes that read one: a frozen blind VLM
    ref = blind_vlm(script_args, training_args)
    # trainer: the 3DR-FT loss of the mode asked for
    announce_vlm(script_args, training_args, len(train))
    trainer = ReweightedTrainer(model=model, args=training_args, train_dataset=train,
                                data_collator=VLMCollator(proc), processing_class=proc,
                                ref_model=ref)
    # train
    trainer.train()
    # save: the model and its processor
    trainer.save_model(training_args.output_dir)
    if trainer.is_world_process_zero():
        proc.save_pretrained(training_args.output_dir)
    return trainer
