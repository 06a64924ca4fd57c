#!/usr/bin/env bash
# Line coverage of hf_real3d on the full suite (RUN_SLOW=1), subprocesses included (coverage.py
# patch = subprocess): bench/coverage.sh CHECKOUT NAME; the report lands in /tmp/cov_NAME/report.txt.
# CHECKOUT may be a git worktree of an older commit (it is put first on PYTHONPATH).
set -u
W=$(cd "$1" && pwd); NAME=$2
PY=$(cd "$(dirname "$0")/.." && pwd)/.venv/bin/python
D=/tmp/cov_$NAME; rm -rf $D; mkdir -p $D
cat > $D/covrc <<RC
[run]
source = hf_real3d
parallel = true
patch = subprocess
data_file = $D/.coverage
RC
cd $W
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 HF_EVALUATE_OFFLINE=1 RUN_SLOW=1 PYTHONPATH=$W COVERAGE_RCFILE=$D/covrc
( time "$PY" -m coverage run -m pytest -q -n 2 --dist loadfile -p no:cacheprovider ) > $D/pytest.log 2>&1
"$PY" -m coverage combine > $D/combine.log 2>&1
"$PY" -m coverage report > $D/report.txt 2>&1
tail -1 $D/report.txt
