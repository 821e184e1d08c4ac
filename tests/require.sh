#!/usr/bin/env bash
# require.sh CONDITION... -- COMMAND [ARG]...: runs COMMAND when everything it needs is
# there; otherwise prints one "skipped: WHAT (WHY)" line and exits 77, which ctest reports
# as skipped (SKIP_RETURN_CODE 77) instead of the test silently not existing. `./dev test`
# ends with a line that collects these reasons.
#   --tool NAME WHY     NAME is on PATH (or an executable path)
#   --built FILE WHY    FILE exists and is executable (a binary of another build tree)
#   --dir DIR WHY       DIR exists
# Example: require.sh --tool go "the e2e tests build kube-apiserver with it" -- run-e2e.sh ...
set -euo pipefail
skip() { echo "skipped: $*"; exit 77; }
while (($#)); do
  case $1 in
    --tool)
      (($# >= 3)) || { echo "require.sh: --tool NAME WHY" >&2; exit 2; }
      command -v "$2" >/dev/null 2>&1 || skip "$2 not on PATH ($3)"
      shift 3 ;;
    --built)
      (($# >= 3)) || { echo "require.sh: --built FILE WHY" >&2; exit 2; }
      [[ -x $2 ]] || skip "$2 is not built ($3)"
      shift 3 ;;
    --dir)
      (($# >= 3)) || { echo "require.sh: --dir DIR WHY" >&2; exit 2; }
      [[ -d $2 ]] || skip "$2 does not exist ($3)"
      shift 3 ;;
    --) shift; break ;;
    *) echo "require.sh: unknown condition $1 (--tool, --built, --dir, then -- COMMAND)" >&2; exit 2 ;;
  esac
done
(($#)) || { echo "require.sh: no command after --" >&2; exit 2; }
exec "$@"
