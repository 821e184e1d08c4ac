#!/usr/bin/env bash
# Shell completion and the install step: `completion bash|zsh` scripts complete commands,
# flags, flag values and case ids in a real bash and a real zsh (driven through zpty),
# and `cmake --install` (what ./dev install runs) puts the binary and both scripts where
# bash-completion and zsh look for them.
#   tests/cli/completion_test.sh BINARY BUILD_DIR
set -uo pipefail
bin=$1 build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
pass() { echo "ok   - $1"; }
fail() { echo "FAIL - $1"; failures=$((failures + 1)); }

"$bin" completion bash >"$tmp/kubegap.bash" || fail "completion bash exited $?"
"$bin" completion zsh >"$tmp/kubegap.zsh" || fail "completion zsh exited $?"

# bash_complete WORD...: COMPREPLY for the command line WORD... (the last word is the one
# being completed), as bash-completion would call the function.
bash_complete() {
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _kubegap_webhook; printf "%s\n" "${COMPREPLY[@]}"' \
    _ "$tmp/kubegap.bash" kubegap-webhook "$@"
}
bash_expect() {  # bash_expect "WANTED WORDS" WORD...
  local want=$1; shift
  local got; got=$(bash_complete "$@" | tr '\n' ' ' | sed 's/ $//')
  if [[ $got == "$want" ]]; then pass "bash: kubegap-webhook $* -> $want"
  else fail "bash: kubegap-webhook $*: got '$got', want '$want'"; fi
}
bash_expect "check cases completion" c
bash_expect "--output" check --ou
bash_expect "text json sarif" check -o ""
bash_expect "auto always never" check --color ""
bash_expect "text json" cases --output ""
bash_expect "bloom-176b-training-2022" cases bloom
bash_expect "zone-spread" cases zone
bash_expect "--log-level --log-format" serve --log-
bash_expect "bash zsh" completion ""
bash_expect "" serve --listen ""  # a free value: nothing to offer
touch "$tmp/policy-a.yaml"
bash_expect "$tmp/policy-a.yaml" check --policy "$tmp/policy-"
# A file name with a space (and a glob character) is one candidate, as it is.
touch "$tmp/my policy*.yaml"
mapfile -t got < <(bash_complete check --policy "$tmp/my")
if [[ ${#got[@]} -eq 1 && ${got[0]} == "$tmp/my policy*.yaml" ]]; then pass "bash: a file name with a space is one candidate"
else fail "bash: file name with a space: got ${#got[@]} candidate(s): ${got[*]}"; fi

# zsh: the script loaded after compinit in an interactive zsh on a pseudo-terminal; TAB
# completes the line, and what the line became is read back.
if ! command -v zsh >/dev/null; then
  fail "zsh is not installed (./dev test installs it)"
else
  cat >"$tmp/drive.zsh" <<'ZSH'
zmodload zsh/zpty
script=$1 line=$2 want=$3
zpty z 'zsh -f -i'
zpty -w z "PS1='> '; autoload -Uz compinit; compinit -u -D; source ${(q)script}"
zpty -w -n z "$line"$'\t'
# Read until the completed text appears (zpty -r with a pattern), or give up.
if zpty -r z out "*$want*"; then exit 0; fi
exit 1
ZSH
  zsh_expect() {  # zsh_expect LINE WANTED
    if timeout 20 zsh -f "$tmp/drive.zsh" "$tmp/kubegap.zsh" "$1" "$2" >/dev/null 2>&1; then
      pass "zsh: '$1<TAB>' completes to '$2'"
    else fail "zsh: '$1<TAB>' did not complete to '$2'"; fi
  }
  zsh_expect "kubegap-webhook check --out" "check --output"
  zsh_expect "kubegap-webhook cases bloom" "cases bloom-176b-training-2022"
  zsh_expect "kubegap-webhook serve --log-f" "serve --log-format"
  zsh_expect "kubegap-webhook comp" "kubegap-webhook completion"
  if zsh -n "$tmp/kubegap.zsh"; then pass "zsh: the script parses"; else fail "zsh -n rejects the script"; fi
fi

out=$("$bin" completion fish 2>&1); rc=$?
if [[ $rc -eq 2 && $out == *"bash or zsh"* ]]; then pass "completion fish exits 2 naming bash and zsh"
else fail "completion fish: exit $rc: $out"; fi
out=$("$bin" completion 2>&1); rc=$?
if [[ $rc -eq 2 && $out == *"bash or zsh"* ]]; then pass "completion without a shell exits 2"
else fail "completion: exit $rc: $out"; fi
out=$("$bin" help completion 2>&1); rc=$?
if [[ $rc -eq 0 && $out == *"Usage: kubegap-webhook completion"* ]]; then pass "help completion"
else fail "help completion: exit $rc: $out"; fi

# The install step: the binary and both completion scripts under the prefix.
prefix=$tmp/prefix
if cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1; then
  if [[ $("$prefix/bin/kubegap-webhook" version) == "kubegap-webhook "* ]]; then pass "installed binary runs"
  else fail "installed binary: $("$prefix/bin/kubegap-webhook" version 2>&1)"; fi
  if cmp -s "$prefix/share/bash-completion/completions/kubegap-webhook" "$tmp/kubegap.bash"; then
    pass "bash completion installed under share/bash-completion/completions"
  else fail "bash completion missing or stale under $prefix/share/bash-completion/completions"; fi
  if cmp -s "$prefix/share/zsh/site-functions/_kubegap-webhook" "$tmp/kubegap.zsh"; then
    pass "zsh completion installed under share/zsh/site-functions"
  else fail "zsh completion missing or stale under $prefix/share/zsh/site-functions"; fi
else
  fail "cmake --install failed: $(cat "$tmp/install.log")"
fi

echo "# completion and install: $failures failure(s)"
[[ $failures -eq 0 ]]
