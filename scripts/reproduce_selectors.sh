#!/usr/bin/env bash
# Refit the shipped selectors from their records and compare them with the shipped files, byte for byte.
#
#   bash scripts/reproduce_selectors.sh [OUT_DIR]      (default: a temporary folder)
#
# The records are bench/selector-records/; the commands are the README's ("What it was trained on").
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
out="$(realpath -m "${1:-$(mktemp -d)}")"
mkdir -p "$out"
cd "$ROOT/bench/selector-records"
# shellcheck disable=SC2046  # the records files, one word each, in C order
psle selector fit $(LC_ALL=C ls selection-records*.h5) --target truth --portfolio portfolio --tolerance 0.01 \
  -o "$out/truth.json"
psle selector fit selection-records.h5 --target bic --portfolio learned -o "$out/bic.json"
for name in truth bic; do
  if cmp -s "$out/$name.json" "$ROOT/hpc/select/selectors/$name.json"; then
    echo "$name.json: identical to the shipped selector"
  else
    echo "$name.json: differs from hpc/select/selectors/$name.json" >&2
    exit 1
  fi
done
