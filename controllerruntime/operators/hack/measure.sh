#!/usr/bin/env bash
# measure.sh runs operator test suites on the bench and on envtest and
# prints, per suite, a Markdown table row: specs passed (of those run, and
# how many were skipped) on each, the wall time of each run of the test
# binary (build excluded), and the startup time (Ginkgo's BeforeSuite,
# or what a plain suite's TestMain
# logs as "... started in D"). A suite that runs its specs with
# envtest.RunSpecs runs on the bench twice: on the wall clock
# (CTRLKIT_WALL_CLOCK=1) and in virtual time; its startup is the wall-clock
# run's (in virtual time Ginkgo reports virtual durations). Each wall time
# is followed by the run's CPU time (user+sys, of the test binary and what
# it starts: envtest's etcd and kube-apiserver too), the figure to compare
# on a loaded machine. Heavy: prefix with nice -n 10 on a shared machine.
#
#   measure.sh                      this repository's three operator suites
#   measure.sh NAME BENCHDIR ENVDIR another suite: its package directory as
#                                   changed for the bench, and as it was
#
# A suite of this repository is one directory: CTRLKIT_ENVTEST=1 (with
# CTRLKIT_WALL_CLOCK=1) runs it on envtest. envtest needs the control plane binaries: KUBEBUILDER_ASSETS
# (default ~/.cache/ctrlkit/realcluster/v1.37.1/bin). RACE=1 builds with
# -race. Run from anywhere.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd) # the controllerruntime module
export KUBEBUILDER_ASSETS=${KUBEBUILDER_ASSETS:-$HOME/.cache/ctrlkit/realcluster/v1.37.1/bin}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run DIR ENVTEST [WALL]: runs the package's test binary in DIR, on envtest
# if ENVTEST, on the wall clock if WALL; prints "passed/ran wall cpu startup".
run() {
  local dir=$1 envtest=$2 wall=${3-1} bin="$tmp/suite.test" out="$tmp/out" start end flags=(-test.v -test.count=1)
  (cd "$dir" && go test ${RACE:+-race} -c -o "$bin" .)
  if grep -qs 'onsi/ginkgo' "$dir"/*_test.go; then
    flags+=(-ginkgo.v)
  fi
  start=$(date +%s.%N)
  if (cd "$dir" && CTRLKIT_ENVTEST=$envtest CTRLKIT_WALL_CLOCK=$wall /usr/bin/time -f '%U %S' -o "$tmp/cpu" "$bin" "${flags[@]}" >"$out" 2>&1); then :; else
    echo "measure: $dir (CTRLKIT_ENVTEST=$envtest CTRLKIT_WALL_CLOCK=$wall) failed:" >&2
    sed 's/\x1b\[[0-9;]*m//g' "$out" | grep -E 'FAIL|Expected|Timed out|panic' | head -20 >&2 || true
  fi
  end=$(date +%s.%N)
  sed -i 's/\x1b\[[0-9;]*m//g' "$out"
  local passed ran skipped startup
  if grep -q '^Ran [0-9]* of [0-9]* Specs' "$out"; then
    passed=$(grep -oE '[0-9]+ Passed' "$out" | tail -1 | grep -oE '[0-9]+' || true)
    ran=$(grep -oE '^Ran [0-9]+' "$out" | tail -1 | grep -oE '[0-9]+' || true)
    skipped=$(grep -oE '[0-9]+ Skipped' "$out" | tail -1 | grep -oE '[0-9]+' || true)
    startup=$(grep -oE '\[BeforeSuite\] PASSED \[[0-9.]+ seconds\]' "$out" | grep -oE '[0-9.]+' | head -1 || true)
  else
    passed=$(grep -c -- '^--- PASS' "$out" || true)
    ran=$(( passed + $(grep -c -- '^--- FAIL' "$out" || true) ))
    skipped=$(grep -c -- '^--- SKIP' "$out" || true)
    # A Go duration: 1.2s, 340.5ms, 80µs.
    startup=$(grep -oE 'started in [0-9.]+(ms|µs|s)' "$out" | head -1 | sed 's/started in //' |
      awk '/ms$/ {sub(/ms/, ""); print $0/1000; next} /µs$/ {sub(/µs/, ""); print $0/1e6; next} {sub(/s/, ""); print}' || true)
  fi
  printf '%s/%s:%s %.2f %.2f %s\n' "$passed" "$ran" "${skipped:-0}" "$(echo "$end - $start" | bc)" "$(tail -1 "$tmp/cpu" | awk '{print $1+$2}')" "${startup:+$(printf '%.2f' "$startup")}"
}

# specs P/R:S prints "P/R", with ", S skipped" when S > 0.
specs() {
  local s=${1#*:}
  if [ "$s" -gt 0 ]; then echo "${1%%:*}, $s skipped"; else echo "${1%%:*}"; fi
}

# secs S prints "S s", or "-" for nothing measured.
secs() {
  if [ -n "$1" ]; then echo "$1 s"; else echo "-"; fi
}

row() {
  local name=$1 bench=$2 env=$3 envvar=${4:-} vp="-" vw="-" vc=""
  read -r ep ew ec es < <(run "$env" "$envvar")
  read -r bp bw bc bs < <(run "$bench" "")
  if grep -qs 'envtest.RunSpecs' "$bench"/*_test.go; then
    read -r vp vw vc _ < <(run "$bench" "" "")
    vp=$(specs "$vp") vw="$vw s (CPU $vc s)"
  fi
  echo "| $name | $(specs "$ep") | $(specs "$bp") | $vp | $ew s (CPU $ec s) | $bw s (CPU $bc s) | $vw | $(secs "$es") | $(secs "$bs") |"
}

echo "| suite | specs passed/run on envtest | on the bench (wall clock) | (virtual time) | wall (CPU), envtest | wall (CPU), bench (wall clock) | (virtual time) | startup, envtest | startup, bench |"
echo "|---|---|---|---|---|---|---|---|---|"
if [ $# -eq 0 ]; then
  row "envtestshape (kubebuilder scaffold, Ginkgo)" "$here/clustertest/envtestshape" "$here/clustertest/envtestshape" 1
  row "operators/database (server-side apply, Ginkgo)" "$here/operators/database" "$here/operators/database" 1
  row "operators/greeter (client-go, go test)" "$here/operators/greeter" "$here/operators/greeter" 1
  row "operators/website (webhooks, Ginkgo)" "$here/operators/website" "$here/operators/website" 1
else
  while [ $# -ge 3 ]; do
    row "$1" "$2" "$3"
    shift 3
  done
fi
