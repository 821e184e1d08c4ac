#!/usr/bin/env bash
# Reads a built binary for the hardening the release build promises (cmake/Warnings.cmake,
# issue 31): PIE, full RELRO (GNU_RELRO and BIND_NOW), a non-executable stack, the stack
# protector (__stack_chk_fail) and FORTIFY_SOURCE (checked __*_chk variants of libc calls).
#   tests/hardening/check_binary.sh BINARY
# Exit 0 all present, 1 something missing (each line says what), 77 readelf is missing.
set -uo pipefail
bin="$1"
command -v readelf >/dev/null || { echo "skipped: readelf (binutils) is not installed"; exit 77; }
[[ -x "$bin" ]] || { echo "FAIL - no binary at $bin"; exit 1; }
failures=0
expect() { # description, command...
  local what="$1"
  shift
  if "$@" >/dev/null 2>&1; then echo "ok   - $what"; else echo "FAIL - $what"; failures=$((failures + 1)); fi
}
header=$(readelf -h "$bin")
segments=$(readelf -lW "$bin")
dynamic=$(readelf -dW "$bin")
symbols=$(readelf -sW --dyn-syms "$bin")
expect "PIE (ELF type DYN)" grep -q "Type:[[:space:]]*DYN" <<<"$header"
expect "RELRO segment (GNU_RELRO)" grep -q "GNU_RELRO" <<<"$segments"
expect "immediate binding (BIND_NOW, full RELRO)" grep -Eq "BIND_NOW|FLAGS_1.*NOW" <<<"$dynamic"
expect "non-executable stack (GNU_STACK RW)" grep -Eq "GNU_STACK.* RW " <<<"$segments"
expect "stack protector (__stack_chk_fail)" grep -q "__stack_chk_fail" <<<"$symbols"
expect "FORTIFY_SOURCE (__*_chk calls)" grep -Eq "__[a-z_]+_chk(@|$| )" <<<"$symbols"
echo "# hardening of $bin: $failures missing"
[[ $failures -eq 0 ]]
