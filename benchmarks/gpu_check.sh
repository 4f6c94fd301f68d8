#!/usr/bin/env bash
# The GPU check of DEVELOPERS.md ("Determinism, CPU and GPU"), for a machine with a CUDA GPU:
# every chapter at smoke scale run as a plain script, once on the GPU and once on the same
# machine's CPU (CUDA_VISIBLE_DEVICES=), then the unit tests on the GPU. Run from the
# repository root, with transferkit's dependencies importable (PYTHONPATH may point at them)
# and the data sets where transferkit.data finds them (TRANSFERKIT_MNIST_DIR, ...).
#
#   benchmarks/gpu_check.sh [chapter ...]        default: every notebooks/*.py
#
# Writes under $OUT (default /tmp/gpu-check): <chapter>.<cpu|gpu>.txt (output, last line
# "status: rc=.. seconds=.."), pytest-gpu.txt and pytest-gpu.xml (junit: the failing tests'
# names survive an interrupted run), and prints per chapter whether the two devices printed
# the same text (lines that hold times left out).
# Environment: NB_LIMIT seconds per chapter (360), NB_P chapters at once (8), PYTEST_LIMIT
# seconds for the tests (400; 0 skips them), PYTEST_N test processes (6).
set -u
root=$(pwd)
O=${OUT:-/tmp/gpu-check}; mkdir -p "$O"
export PYTHONUNBUFFERED=1 MPLBACKEND=Agg TRANSFERKIT_PROGRESS=0 TRANSFERKIT_SCALE=smoke
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"
python3 -c "from transferkit.models.device import default_device; print('default device:', default_device())" || exit 2
if [ $# -gt 0 ]; then chapters="$*"; else chapters=$(cd notebooks && ls *.py | sed 's/\.py$//'); fi
run_chapter() {  # $1 chapter, $2 cpu|gpu
  local log=$O/$1.$2.txt start rc
  start=$(date +%s.%N)
  ( cd "$root/notebooks"
    if [ "$2" = cpu ]; then export CUDA_VISIBLE_DEVICES=; fi
    export TRANSFERKIT_CACHE=/tmp/gpu-check-cache-$2 TRANSFERKIT_FIGURES=/tmp/gpu-check-figures-$2
    PYTHONPATH=$root/benchmarks/ipython_stub:${PYTHONPATH:-} timeout "${NB_LIMIT:-360}" python3 "$1.py" ) > "$log" 2>&1
  rc=$?
  echo "status: rc=$rc seconds=$(python3 -c "print(round($(date +%s.%N) - $start, 1))")" >> "$log"
  echo "$1 $2: $(tail -n 1 "$log")"
}
export -f run_chapter; export O root
if [ "${PYTEST_LIMIT:-400}" != 0 ]; then
  timeout -s INT "${PYTEST_LIMIT:-400}" python3 -m pytest -q -n "${PYTEST_N:-6}" --dist loadfile \
    -p no:cacheprovider --junitxml="$O/pytest-gpu.xml" -rf tests --ignore=tests/test_browser.py \
    --ignore=tests/test_book_offline.py --ignore=tests/test_benchmarks.py > "$O/pytest-gpu.txt" 2>&1 &
fi
for c in $chapters; do echo "$c gpu"; echo "$c cpu"; done | xargs -P "${NB_P:-8}" -n 2 bash -c 'run_chapter "$0" "$1"'
wait
tail -n 3 "$O/pytest-gpu.txt" 2>/dev/null
timing='wall time| s$| s;|[0-9] s \(|s here|: [0-9.]+ s|^[0-9]+ s|^status:'
for c in $chapters; do
  if diff -q <(grep -v -E "$timing" "$O/$c.cpu.txt") <(grep -v -E "$timing" "$O/$c.gpu.txt") > /dev/null; then
    echo "$c: same text on the CPU and the GPU"
  else
    echo "$c: $(diff <(grep -v -E "$timing" "$O/$c.cpu.txt") <(grep -v -E "$timing" "$O/$c.gpu.txt") | grep -c '^<') line(s) differ"
  fi
done
