#!/bin/bash
# On a lent GPU machine: report the queue's progress every minute for $1 seconds, then pack every
# run's records (not its checkpoints or model) into $OUT/gpu-runs.tgz, which comes back.
# Default: 540 s.
end=$(( $(date +%s) + ${1:-540} ))
while [ "$(date +%s)" -lt "$end" ]; do
  sleep 60
  echo "$(date -u +%T) finished=$(find /tmp/gpu -name metrics.json | wc -l)" \
       "workers=$(pgrep -fc '[-]-worker')" \
       "$(nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader)"
done
grep -h "@@" /tmp/gpu/logs/*.log | tail -n 30
cd /tmp/gpu && tar czf "$OUT/gpu-runs.tgz" --exclude='*.ckpt' --exclude='*.safetensors' \
  --exclude='vocab.json' --exclude='.awrsr.lock' . && ls -la "$OUT"
