# Sourced by the scripts that build Go tools once per machine (tests/e2e/build-binaries.sh,
# tests/oracle/build-oracle.sh): their shared argument parsing, logging and go setup.
#
#   go_build_setup NAME HELP_LAST_LINE "$@"
#     sets check_only and force from --check and --force; -h prints the calling script's
#     header comment (lines 2 to HELP_LAST_LINE); other arguments exit 2. Defines log and
#     die (prefixed [NAME HH:MM:SS], on stderr), gives go a HOME when a CI job has none,
#     and sets cache_root (KUBEGAP_E2E_CACHE, default ~/.cache/kubegap-e2e).
#   mod_version GO_MOD MODULE_PATH
#     the version GO_MOD requires of MODULE_PATH (not a replace target), or nothing.

go_build_setup() {
  local name="$1" help_last="$2" arg
  shift 2
  check_only=0
  force=0
  for arg in "$@"; do
    case "$arg" in
      --check) check_only=1 ;;
      --force) force=1 ;;
      -h|--help) sed -n "2,${help_last}p" "${BASH_SOURCE[1]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
      *) echo "$name.sh: unknown argument: $arg" >&2; exit 2 ;;
    esac
  done
  go_build_name="$name"
  # A CI job may run with HOME unset; go needs it for GOCACHE/GOPATH defaults.
  if [[ -z "${HOME:-}" ]]; then
    HOME="$(getent passwd "$(id -u)" 2>/dev/null | cut -d: -f6 || true)"
    [[ -n "$HOME" ]] || HOME=/root
    export HOME
  fi
  cache_root="${KUBEGAP_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kubegap-e2e}"
}

log() { printf '[%s %(%H:%M:%S)T] %s\n' "$go_build_name" -1 "$*" >&2; }
die() { log "error: $*"; exit 1; }

mod_version() {
  awk -v m="$2" '$1 == m && $2 ~ /^v[0-9]/ { print $2; exit }' "$1"
}
