#!/bin/sh
# The demo: build smtd and run the example job of examples/ on this machine.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
scripts/setup.sh
scripts/build.sh build

root=$(mktemp -d /tmp/smtd-demo.XXXXXX)
cp -r examples/single/input "$root/input"
cp -r examples/code "$root/code"
mkdir -p "$root/output" "$root/model"
echo "demo: job root $root"
echo "demo: the plan (smtd --dry-run):"
build/smtd --root "$root" --dry-run
