#!/bin/bash
# Here, before a lease (see docs/benchmarks.md, "Running on a lent GPU"): build what travels with each
# call, .whl/ (the packages the GPU machine lacks) and .devdata/ (the benchmark data and the name of
# the code the runs will record), and keep both out of git. Run from the repository root, with the
# project's environment active; again before every lease, since .devdata/source-version names the
# commit that lease runs.
set -eo pipefail  # a failed tar must not leave a truncated archive in place of the wheel
exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")" .whl .devdata
for path in /.whl/ /.devdata/; do grep -qxF "$path" "$exclude" 2>/dev/null || echo "$path" >> "$exclude"; done
# The machine runs Python 3.12 with torch, lightning, rich, scipy, matplotlib and safetensors.
wheels=(jsonargparse==4.53.0 docstring_parser==0.18.0 typeshed_client==2.14.0 polars==2.1.0)
# the runtime archive of an earlier run is kept (its wheel is 54 MB and xz takes minutes)
if [ ! -s .whl/polars-runtime.tar.xz ]; then wheels+=(polars-runtime-32==2.1.0); fi
pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl "${wheels[@]}"
# A call carries 64 MiB with the repository, and polars' runtime wheel alone is 54 MB. Unpacked and
# xz-compressed it is 31 MB; setup.sh unpacks it into the machine's site folder (a wheel is a zip of
# what installing it puts there).
for wheel in .whl/polars_runtime_32-*.whl; do
  [ -e "$wheel" ] || continue
  unpacked=$(mktemp -d)
  python3 -m zipfile -e "$wheel" "$unpacked"
  chmod 755 "$unpacked"  # mktemp's 0700 would be the archive's "./", and so the site folder's mode there
  tar cf - -C "$unpacked" . | xz -9 -T0 > .whl/polars-runtime.tar.xz.partial
  mv .whl/polars-runtime.tar.xz.partial .whl/polars-runtime.tar.xz
  rm -rf "$unpacked" "$wheel"
done
gzip -9c ../shared/data/ml-1m/ml-1m.txt > .devdata/ml-1m.txt.gz
gzip -9c ../shared/data/beauty/Beauty.txt > .devdata/Beauty.txt.gz
echo "g$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src || echo .dirty)" > .devdata/source-version
# what a call carries: tracked files, untracked ones git does not ignore, and the two folders
tree=$( (git ls-files -z; git ls-files -z --others --exclude-standard) | du -cb --files0-from=- | tail -n 1 | cut -f 1)
carried=$(du -cb .whl .devdata | tail -n 1 | cut -f 1)
mib() { echo $(( ($1 + 1048575) / 1048576 )); }  # rounded up
echo "code $(cat .devdata/source-version); a call carries $(mib $((tree + carried))) MiB of 64 (the working tree's files $(mib "$tree"), .whl and .devdata $(mib "$carried"))"
if [ $((tree + carried)) -gt $((64 * 1048576)) ]; then echo "too large for a call: carry less" >&2; exit 1; fi
