#!/usr/bin/env bash
# Line coverage of hf_real3d on the full suite (RUN_SLOW=1), subprocesses included (coverage.py's
# patch = subprocess). From the repository root:
#     bench/coverage.sh CHECKOUT OUT
# CHECKOUT: this checkout (.) or a git worktree of an older commit, put first on PYTHONPATH (the
# "before" of a round); OUT: a folder for the data, pytest.log and report.txt (the last line of
# which is printed). The interpreter is this checkout's .venv (make install).
set -u
PY="$(cd "$(dirname "$0")/.." && pwd)/.venv/bin/python"
W="$(cd "$1" && pwd)"
mkdir -p "$2"
D="$(cd "$2" && pwd)"
cat > "$D/covrc" <<RC
[run]
source = hf_real3d
parallel = true
patch = subprocess
data_file = $D/.coverage
RC
cd "$W"
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 HF_EVALUATE_OFFLINE=1 RUN_SLOW=1 PYTHONPATH="$W" \
    COVERAGE_RCFILE="$D/covrc"
( time "$PY" -m coverage run -m pytest -q -n 2 --dist loadfile -p no:cacheprovider ) \
    > "$D/pytest.log" 2>&1
"$PY" -m coverage combine > "$D/combine.log" 2>&1
"$PY" -m coverage report --precision=2 > "$D/report.txt" 2>&1
tail -1 "$D/report.txt"
