"""Generation speed and peak memory of the default synthetic benchmark.

Target, as a ratio measured in the same run (the foundation issue's "under 60 s on the
2-core machine" depends on the machine; issue 13 asks for ratios): the default benchmark
(260 scenes, ~25k questions, ScanNet files written) built with 2 workers takes at most
0.75x the same build with one worker process (the build uses both cores). Seconds and
questions per second are printed too.

    python bench/synth.py [--quick]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _common import peak_rss_mib, report

from hf_real3d.synth import SynthConfig, build_benchmark


def timed_build(cfg: SynthConfig, workers: int) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        summary = build_benchmark(Path(tmp) / "synth", cfg, workers=workers, progress=False)
        dt = time.perf_counter() - t0
    return dt, sum(s["questions"] for s in summary.splits.values())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="a tenth of the default size")
    args = ap.parse_args()
    cfg = SynthConfig()
    if args.quick:
        cfg.scenes = {k: max(1, v // 10) for k, v in cfg.scenes.items()}
    one, n = timed_build(cfg, workers=1)
    two, _ = timed_build(cfg, workers=2)
    print(f"synth: {n} questions, {sum(cfg.scenes.values())} scenes")
    print(f"  1 worker : {one:6.1f} s  {n / one:8.0f} questions/s")
    print(f"  2 workers: {two:6.1f} s  {n / two:8.0f} questions/s  (x{one / two:.2f})")
    print(f"  peak memory: {peak_rss_mib():.0f} MiB")
    report("synth default build, 2 workers / 1 worker", two / one, "x", target="<= 0.75x",
           ok=two / one <= 0.75 if not args.quick else None, seconds=round(two, 1),
           baseline_seconds=round(one, 1), questions_per_s=round(n / two))
    report("synth peak memory", peak_rss_mib(), "MiB")


if __name__ == "__main__":
    main()
