#!/usr/bin/env bash
# deploy/lint.sh — `make lint`: the layering rule (deploy/layers.sh), banned
# calls, cppcheck and clang-tidy over the C sources. Exits non-zero on any
# finding.
set -euo pipefail
cd "$(dirname "$0")/.."

src=$(ls server/*.c handlers/*.c db/*.c scheduler/*.c control/*.c billing/*.c gcp/*.c identity/*.c lib/*.c 2>/dev/null || true)
status=0

# the house's layering: which room may include which (deploy/layers.sh)
if ! deploy/layers.sh; then
  echo "lint: an include breaks the layering (ARCHITECTURE.md)"
  status=1
fi

# STYLE §14: calls that have a bounded or checked replacement
if grep -nHE '\b(sprintf|strcpy|strcat|strtok|atoi|gets|system)[[:space:]]*\(' \
     $src tests/unit/*.c tests/integration/*.c tests/fuzz/*.c 2>/dev/null; then
  echo "lint: banned call (use snprintf, memcpy with a bound, strtol, posix_spawn)"
  status=1
fi

cflags=$(pkg-config --cflags libmicrohttpd jansson libpq libjwt libcurl)
jobs=$(nproc 2>/dev/null || echo 2)
# shellcheck disable=SC2086
if ! cppcheck --quiet --error-exitcode=1 --enable=warning,portability \
     --inline-suppr --std=c11 -D_GNU_SOURCE -I. -j "$jobs" $src; then
  echo "lint: cppcheck found problems"
  status=1
fi

checks='-*,clang-analyzer-*,-clang-analyzer-valist.Uninitialized,-clang-analyzer-security.insecureAPI.DeprecatedOrUnsafeBufferHandling,bugprone-*,-bugprone-easily-swappable-parameters,-bugprone-reserved-identifier,-bugprone-narrowing-conversions,-bugprone-macro-parentheses,-bugprone-assignment-in-if-condition,cert-err34-c'
tidy_log=$(mktemp /tmp/gpugate-tidy.XXXXXX)
trap 'rm -f "$tidy_log"' EXIT
# a few files per clang-tidy, one clang-tidy per core
tidy() {
  # shellcheck disable=SC2086
  clang-tidy --quiet --warnings-as-errors='*' --checks="$checks" "$@" -- \
    -std=c11 -D_GNU_SOURCE -I. -Ibuild/gen $cflags
}
export -f tidy
export checks cflags
# shellcheck disable=SC2086
if ! printf '%s\n' $src | xargs -P "$jobs" -n 6 bash -c 'tidy "$@"' tidy \
     >"$tidy_log" 2>&1; then
  grep -E 'warning:|error:' "$tidy_log" | head -n 40
  echo "lint: clang-tidy found problems"
  status=1
fi
exit $status
