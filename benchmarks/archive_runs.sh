#!/bin/bash
# Pack the records of a comparison's finished runs (config.yaml, metrics.json, history.csv,
# metrics.csv, test_ranks.npy; not checkpoints, models or locks) and its tables (runs.csv, table.*,
# by_length.*: figures drawn from the unpacked archive keep the table's order of variants and its
# bars by history length) into one archive for git, so the table survives the loss of runs/
# (docs/benchmarks.md, "Run records"). Linked run directories
# (runs shared with another comparison) are packed as their contents. A tune's directory works
# too: its finished trials (NAME/trial-*/, one level less deep than NAME/variant/seed-N/) and the
# records of trials it skipped (skipped.json), so that no later tune trains them again.
#   bash benchmarks/archive_runs.sh runs/gpu16/a/blocks-beauty benchmarks/results/run-records/blocks-beauty.tar.gz
# Unpack under the parent of the comparison's directory: tar xzf ARCHIVE -C runs/gpu16/a
set -euo pipefail
comparison=${1:?the comparison directory, ROOT/NAME}
archive=$(realpath -m "${2:?the archive to write, .tar.gz}")
cd "$(dirname "$comparison")"
name=$(basename "$comparison")
files=$(find -L "$name" -mindepth 2 -maxdepth 3 -name metrics.json | sort | while read -r m; do
  run=$(dirname "$m")
  # not `[ -f ] && echo`: a run without an optional file would end the loop, and the script, with status 1
  for f in config.yaml metrics.json history.csv metrics.csv test_ranks.npy; do if [ -f "$run/$f" ]; then echo "$run/$f"; fi; done
done)
[ -n "$files" ] || { echo "no finished run under $comparison" >&2; exit 1; }
skipped=$(find -L "$name" -mindepth 2 -maxdepth 2 -name skipped.json | sort)
# a tune's trials.csv and best.yaml are not packed: its report writes them again from the trials
tables=$(for f in runs.csv table.csv table.md by_length.csv by_length.md; do if [ -f "$name/$f" ]; then echo "$name/$f"; fi; done)
# one path per line, quoted: a folder name may hold spaces
{ echo "$files"; if [ -n "$skipped" ]; then echo "$skipped"; fi; if [ -n "$tables" ]; then echo "$tables"; fi; } | tar czhf "$archive" -T -
echo "$(echo "$files" | grep -c metrics.json) finished run(s)${skipped:+, $(echo "$skipped" | wc -l) skipped trial(s)} -> $archive"
