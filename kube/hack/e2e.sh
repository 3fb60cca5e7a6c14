#!/usr/bin/env bash
# e2e.sh runs the end-to-end suites of the kube module against a real
# etcd + kube-apiserver (+ the upstream kube-controller-manager for the
# side-by-side comparison). The binaries are built once into
# ${CTRLKIT_CACHE:-$HOME/.cache/ctrlkit}/realcluster/<version> (cold: 875–1012 s
# of CPU, 15–41 min of wall time depending on the machine's load) and reused
# afterwards.
#
# Environment:
#   CTRLKIT_E2E_TIMEOUT  go test timeout (default 30m)
#   CTRLKIT_E2E_REPORT   where to write the side-by-side table (default: a temp file, printed)
#   CTRLKIT_E2E_RUN      a go test -run pattern (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v openssl >/dev/null; then
  echo "e2e: installing openssl"
  apt-get update -qq && apt-get install -y -qq openssl >/dev/null
fi

start=$SECONDS
bash hack/controlplane.sh build >/dev/null
echo "e2e: control plane binaries ready in $((SECONDS - start)) s ($(bash hack/controlplane.sh bin))"

report=${CTRLKIT_E2E_REPORT:-$(mktemp "${TMPDIR:-/tmp}/ctrlkit-e2e-report.XXXXXX")}
export CTRLKIT_E2E_REPORT=$report
# -p 1: one package at a time, so that the side-by-side timings do not
# compete with the other suite for the CPUs.
go test -tags e2e -p 1 -count=1 -timeout "${CTRLKIT_E2E_TIMEOUT:-30m}" ${CTRLKIT_E2E_RUN:+-run "$CTRLKIT_E2E_RUN"} ./e2e/... "$@"
# The controller-runtime module: both controllers in a Manager against the
# same binaries (envtest starts etcd and kube-apiserver from them).
if [ -f ../controllerruntime/go.mod ] && [ -z "${CTRLKIT_E2E_RUN:-}" ]; then
  echo "e2e: controllerruntime module"
  (cd ../controllerruntime && CTRLKIT_CONTROLPLANE_BIN=$(bash ../kube/hack/controlplane.sh bin) \
    go test -tags e2e -count=1 -timeout 10m ./e2e/...)
  # The example operators' suites on envtest, for comparison with the bench
  # (the default suite runs them on the bench), on the wall clock: a real
  # control plane cannot run in envtest.RunSpecs' virtual time.
  echo "e2e: example operators on envtest"
  (cd ../controllerruntime && CTRLKIT_ENVTEST=1 CTRLKIT_WALL_CLOCK=1 KUBEBUILDER_ASSETS=$(bash ../kube/hack/controlplane.sh bin) \
    go test -count=1 -timeout 10m ./clustertest/envtestshape/ ./operators/...)
  # The WebApp example's one test file on envtest (its bench and fake-client
  # backends run in the default suite).
  echo "e2e: WebApp example on envtest"
  (cd ../examples/controllerruntime && CTRLKIT_CONTROLPLANE_BIN=$(bash ../../kube/hack/controlplane.sh bin) \
    go test -count=1 -timeout 10m ./webapp/)
fi
if [ -s "$report" ]; then
  echo "e2e: side by side with upstream kube-controller-manager:"
  cat "$report"
fi
