import os
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")
# datasets caches local folders by folder + config name only: keep test runs apart
os.environ["HF_DATASETS_CACHE"] = tempfile.mkdtemp(prefix="hf_real3d_ds_cache_")

ROOT = Path(__file__).resolve().parents[1]
SHARED_REAL = ROOT.parent / "shared" / "real"


@pytest.fixture(scope="session")
def real_dir() -> Path:
    if not SHARED_REAL.is_dir():
        pytest.skip(f"real release files not found at {SHARED_REAL} (project machines only)")
    return SHARED_REAL


@pytest.fixture(scope="session")
def small_synth():
    """A tiny in-memory synthetic split (scenes + records)."""
    from hf_real3d.synth import SynthConfig, generate_split

    cfg = SynthConfig(seed=3, scenes={"train": 0, "val": 0, "test": 4},
                      questions_per_scene={"test": 60})
    return generate_split(cfg, "test")
