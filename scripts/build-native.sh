#!/bin/sh
# Compile Doorman's C programs into dist/bin/ (npm run build runs this after tsc). For now one: doorman-shim,
# the per-child relay Squid runs for every helper (native/doorman-shim.c says why). CC overrides the compiler.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$root/dist/bin"
# Compiled to a name of this run's own and renamed: Squid may be running the old binary right now, and two
# builds at once (parallel tests) must not write one file.
tmp="$root/dist/bin/.doorman-shim.$$"
trap 'rm -f "$tmp"' EXIT
${CC:-cc} -std=c11 -D_POSIX_C_SOURCE=200809L -O2 -Wall -Wextra -Werror -o "$tmp" "$root/native/doorman-shim.c"
mv -f "$tmp" "$root/dist/bin/doorman-shim"
