#!/usr/bin/env bash
# Does CI hold on a busy machine? Clones HEAD fresh, installs it once as .ci/run does, then runs
# .ci/run's test command N times while one busy process per core but one spins beside it (the load
# CI meets on a shared 2-core machine), and prints pass/fail counts and durations.
#
#   scripts/ci_under_load.sh N [--quiet]   N loaded runs; --quiet adds one run with no load first
#
# Commit first: the clone holds HEAD, not the working tree.
set -uo pipefail
runs="${1:?usage: scripts/ci_under_load.sh N [--quiet]}"
quiet="${2:-}"
repo="$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)"
work="$(mktemp -d /tmp/rlbench-ci-load.XXXXXX)"
trap 'kill ${spinners[*]:-} 2>/dev/null; rm -rf "$work"' EXIT
git clone -q --no-hardlinks "$repo" "$work/rlbench"
echo "clone of $(git -C "$work/rlbench" rev-parse --short HEAD) in $work/rlbench; installing ..."
t0=$(date +%s)
bash "$work/rlbench/.ci/run" --install-only > "$work/install.log" 2>&1 || { tail -20 "$work/install.log"; exit 1; }
echo "install: $(( $(date +%s) - t0 )) s"

cores=$(nproc)
busy=$(( cores > 1 ? cores - 1 : 1 ))
spinners=()
results=()
one_run() {  # $1: label; prints one result line
    local t=$(date +%s) log="$work/run-$1.log" code
    bash "$work/rlbench/.ci/run" --tests-only > "$log" 2>&1
    code=$?
    local summary
    summary=$(grep -E "[0-9]+ (passed|failed)" "$log" | tail -1)
    results+=("$1: exit $code in $(( $(date +%s) - t )) s: ${summary:-no summary, see $log}")
    echo "${results[-1]}"
    [ $code -eq 0 ] || { grep -E "^(FAILED|ERROR) " "$log" | head -20; cp "$log" "/tmp/rlbench-ci-load-$1.log"; echo "log: /tmp/rlbench-ci-load-$1.log"; }
    return $code
}
passed=0; failed=0
if [ "$quiet" = "--quiet" ]; then
    if one_run quiet; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
fi
for _ in $(seq "$busy"); do python3 -c "while True: pass" & spinners+=($!); done
echo "load: $busy busy process(es) beside the tests on $cores cores"
for i in $(seq "$runs"); do
    if one_run "loaded-$i"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done
kill "${spinners[@]}" 2>/dev/null
echo "---"
printf '%s\n' "${results[@]}"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
