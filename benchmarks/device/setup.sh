#!/bin/bash
# On a lent GPU machine (see docs/benchmarks.md, "Running on a lent GPU"): install the Python
# packages it lacks from carried wheels, freeze a copy of the repository with the benchmark data
# beside it (../shared/data, as the configs expect), and print what the machine is.
# Run from the repository root there, with .whl/ and .devdata/ (benchmarks/device/prepare.sh) carried.
set -e
mkdir -p /tmp/site
# prepare.sh carries polars' runtime unpacked and xz-compressed (a call's 64 MiB hold no 54 MB wheel)
# (--no-overwrite-dir: an archive's "./" entry must not change the site folder's mode or owner)
for archive in .whl/*.tar.xz; do if [ -e "$archive" ]; then tar xJf "$archive" --no-overwrite-dir -C /tmp/site; fi; done
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
rm -rf /tmp/awrsr && mkdir -p /tmp/awrsr /tmp/shared/data/ml-1m /tmp/shared/data/beauty /tmp/gpu
cp -r src configs benchmarks /tmp/awrsr/  # the workers run this copy: later calls re-sync the repo
# The copy has no .git: the commit it was made from, written before the call (docs/benchmarks.md,
# "Running on a lent GPU"), names the code in each run's metrics.json (start.sh exports it).
if [ -f .devdata/source-version ]; then cp .devdata/source-version /tmp/awrsr/SOURCE_VERSION; fi
gunzip -c .devdata/ml-1m.txt.gz > /tmp/shared/data/ml-1m/ml-1m.txt
gunzip -c .devdata/Beauty.txt.gz > /tmp/shared/data/beauty/Beauty.txt
# Records of runs finished in earlier leases (metrics.json + config.yaml), so the queue reuses them.
if [ -d .devdata/gpu ]; then cp -r .devdata/gpu/. /tmp/gpu/; fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"
