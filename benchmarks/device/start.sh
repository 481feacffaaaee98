#!/bin/bash
# On a lent GPU machine, after setup.sh: start queues of comparisons that outlive the call, each
# in its own root and process session (see docs/benchmarks.md, "Running on a lent GPU").
# Each argument is one queue, "ROOT WORKERS NICE COMPARISON [COMPARISON ...]", e.g.
#   bash benchmarks/device/start.sh \
#     "a 2 0 refine-ml-1m=configs/sasrec/ml-1m.yaml:simp,value,add" \
#     "b 11 5 neighbours-beauty=configs/sasrec/beauty.yaml:configs/compare/neighbours-beauty.yaml"
# Queue ROOT trains into /tmp/gpu/ROOT (setup.sh copies the carried records of .devdata/gpu/ROOT
# there, so finished runs are reused). A few important runs get a queue of their own with few
# workers: they then share the GPU with fewer processes and finish sooner.
# With MPS=1 the CUDA MPS daemon is started first, so that the workers' small kernels may run side
# by side instead of taking turns (untried on these machines: compare the runs' s / epoch with
# session 16's, docs/benchmarks.md).
set -e
cd /tmp/awrsr
if [ "${MPS:-0}" = 1 ]; then
  if command -v nvidia-cuda-mps-control > /dev/null && nvidia-cuda-mps-control -d; then echo "MPS daemon started"
  else echo "MPS could not be started: the queues share the GPU by time-slicing"; fi
fi
export PYTHONPATH=/tmp/site:/tmp/awrsr/src PYTHONUNBUFFERED=1
if [ -f SOURCE_VERSION ]; then export AWRSR_SOURCE_VERSION="$(cat SOURCE_VERSION)"; fi
# SKIP="PATTERN ..." leaves those runs out of every queue (compare_queue.py --skip), e.g.
# SKIP="neighbours-beauty/*bert4rec* neighbours-beauty/ac-*" for runs longer than a lease.
skip=()
read -r -a patterns <<< "${SKIP:-}"  # no pathname expansion here: the patterns stay as given
if [ ${#patterns[@]} -gt 0 ]; then skip=(--skip "${patterns[@]}"); fi
for queue in "$@"; do
  read -r root workers niceness comparisons <<< "$queue"
  mkdir -p "/tmp/gpu/$root"
  # shellcheck disable=SC2086  # the comparisons are separate words
  (setsid nohup nice -n "$niceness" python3 benchmarks/compare_queue.py $comparisons --workers "$workers" \
      --root "/tmp/gpu/$root" --seeds 42 43 44 --set train.num_threads=1 "${skip[@]}" \
      > "/tmp/gpu/queue-$root.log" 2>&1 < /dev/null &)
  echo "queue $root: $workers worker(s), nice $niceness: $comparisons"
done
