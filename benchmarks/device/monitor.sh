#!/bin/bash
# On a lent GPU machine: every minute for $1 seconds (default 540), report the queues' progress and
# pack every run's records (not its checkpoints or model) into $OUT/gpu-runs.tgz, which comes back,
# and the runs not finished yet, with what they need to continue elsewhere, into
# $OUT/gpu-partial-K.tar (pack_partial.py; the device tool returns 8 files of 16 MiB, 64 MiB in all).
# Packing each minute means a call cut short by the lease's end still brings back what finished.
end=$(( $(date +%s) + ${1:-540} ))
here=$(dirname "$0")
pack() {
  (cd /tmp/gpu && tar czf "$OUT/.gpu-runs.partial" --exclude='*.ckpt' --exclude='*.safetensors' \
    --exclude='vocab.json' --exclude='.awrsr.lock' --exclude=./.returned --exclude=./.packed-last . && mv "$OUT/.gpu-runs.partial" "$OUT/gpu-runs.tgz")
  # what is left of 64 MiB, less 2 MiB for a file being written when the call is cut off
  budget=$(( 62 * 1024 * 1024 - $(stat -c %s "$OUT/gpu-runs.tgz") ))
  python3 "$here/pack_partial.py" /tmp/gpu "$OUT" --budget "$budget"
}
while [ "$(date +%s)" -lt "$end" ]; do
  sleep 60
  echo "$(date -u +%T) finished=$(find /tmp/gpu -name metrics.json | wc -l)" \
       "workers=$(pgrep -fc '[-]-worker')" \
       "$(nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader)"
  pack
done
# the runs this call brings back go after the others in the next call's packs
if [ -f /tmp/gpu/.packed-last ]; then cat /tmp/gpu/.packed-last >> /tmp/gpu/.returned; fi
grep -h "@@" $(find /tmp/gpu -path '*/logs/*.log') | tail -n 30
ls -la "$OUT"
