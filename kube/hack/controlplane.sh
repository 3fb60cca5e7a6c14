#!/usr/bin/env bash
# controlplane.sh builds and runs a throwaway Kubernetes control plane on loopback:
# etcd + kube-apiserver (+ optionally the upstream kube-controller-manager), for the
# end-to-end tests of github.com/ctrlkit/ctrlkit/kube.
#
#   controlplane.sh build                  build the binaries into the cache (skipped when present); prints the bin dir
#   controlplane.sh start                  start etcd + kube-apiserver; prints the state dir (kubeconfig, token, pidfiles)
#   controlplane.sh start-kcm DIR [CTRLS]  start the upstream kube-controller-manager against DIR's apiserver, running the
#                                          controllers CTRLS (a --controllers list; default: deployment, replicaset,
#                                          garbage collector, serviceaccount and resourcequota, the last one what
#                                          ResourceQuotas need: it computes their usage and gives room back as pods go)
#   controlplane.sh stop-kcm DIR           stop that kube-controller-manager
#   controlplane.sh stop DIR               stop everything started in DIR (by pidfile only) and remove DIR
#
# kube-apiserver runs with its default admission plugins, none turned off (v1.37: NamespaceLifecycle,
# LimitRanger, ServiceAccount, PodSecurity, Priority, DefaultTolerationSeconds, ResourceQuota, the
# admission webhooks and policies, …), so that what a cluster's admission rejects can be reproduced.
# ServiceAccount admission refuses pods whose ServiceAccount does not exist, the namespace's "default"
# one included: kube-controller-manager's serviceaccount-controller creates it (start-kcm runs it by
# default; the Go harness in kube/internal/cluster creates it in every namespace itself). Extra
# kube-apiserver flags: CTRLKIT_APISERVER_FLAGS (e.g. --disable-admission-plugins=ServiceAccount).
#
# Binaries are cached in ${CTRLKIT_CACHE:-$HOME/.cache/ctrlkit}/realcluster/$KUBE_VERSION, outside
# the work tree. A cold build costs 875–1012 s of CPU (user+sys) and ~3 GB of RAM, and runs under nice:
# ~15 min of wall time on two idle cores, 26–41 min measured on a busy 2-core machine.
# Everything listens on 127.0.0.1 on free ports chosen at random. Only PIDs recorded in
# DIR's pidfiles are ever signalled.
set -euo pipefail

KUBE_VERSION=${KUBE_VERSION:-v1.37.1}
ETCD_VERSION=${ETCD_VERSION:-v3.7.1}
STAGING_VERSION=v0.${KUBE_VERSION#v1.}
CACHE_ROOT=${CTRLKIT_CACHE:-$HOME/.cache/ctrlkit}
CACHE=$CACHE_ROOT/realcluster/$KUBE_VERSION
BIN=$CACHE/bin

log() { echo "controlplane: $*" >&2; }
die() { log "$*"; exit 1; }

have_binaries() {
  [ -x "$BIN/etcd" ] && [ -x "$BIN/kube-apiserver" ] && [ -x "$BIN/kube-controller-manager" ]
}

# build compiles etcd, kube-apiserver and kube-controller-manager into $BIN.
# kube-apiserver and kube-controller-manager are built in a throwaway tools module that
# requires k8s.io/kubernetes and replaces each staging module (mapped to ./staging/src/...
# in k8s.io/kubernetes's own go.mod) with the published k8s.io/<name> $STAGING_VERSION.
build() {
  if have_binaries; then echo "$BIN"; return 0; fi
  command -v go >/dev/null || die "go is not installed"
  mkdir -p "$CACHE"
  exec 9>"$CACHE/.build.lock"
  flock 9
  if have_binaries; then echo "$BIN"; return 0; fi
  local start=$SECONDS tmp="$CACHE/bin.tmp"
  rm -rf "$tmp"; mkdir -p "$tmp"
  # Builds must not see the caller's module or workspace.
  export GOWORK=off GOFLAGS=-buildvcs=false
  unset GOOS GOARCH CGO_ENABLED || true

  log "building etcd $ETCD_VERSION"
  # etcd's server module carries replace directives, so it cannot be 'go install'ed by
  # version; build it from a tools module of its own (the replaces of a dependency are ignored).
  local etcdtools="$CACHE/etcd-tools"
  rm -rf "$etcdtools"; mkdir -p "$etcdtools"
  printf 'module ctrlkit.local/etcd-tools\n\ngo 1.26.0\n' >"$etcdtools/go.mod"
  (cd "$etcdtools" &&
    go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" &&
    nice -n 10 go build -trimpath -ldflags "-s -w" -o "$tmp/etcd" go.etcd.io/etcd/server/v3)

  log "building kube-apiserver and kube-controller-manager $KUBE_VERSION (cold: ~1000 s of CPU: ~15 min on two idle cores, 26–41 min measured under load)"
  local tools="$CACHE/tools" modfile
  rm -rf "$tools"; mkdir -p "$tools"
  modfile=$(cd "$tools" && go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" |
    sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')
  [ -f "$modfile" ] || die "cannot find the go.mod of k8s.io/kubernetes@$KUBE_VERSION"
  {
    echo "module ctrlkit.local/realcluster-tools"
    echo
    echo "go 1.26.0"
    echo
    echo "require k8s.io/kubernetes $KUBE_VERSION"
    echo
    echo "replace ("
    grep -E '^[[:space:]]*k8s\.io/[^[:space:]]+ => \./staging/src/' "$modfile" |
      awk -v v="$STAGING_VERSION" '{ printf "\t%s => %s %s\n", $1, $1, v }' | sort -u
    echo ")"
  } >"$tools/go.mod"
  log "$(grep -c ' => ' "$tools/go.mod") staging replaces generated"
  local pkg=k8s.io/component-base/version
  local minor=${KUBE_VERSION#v1.}; minor=${minor%%.*}
  local ldflags="-s -w -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags="$ldflags -X $pkg.gitTreeState=clean"
  (cd "$tools" &&
    go get "k8s.io/kubernetes/cmd/kube-apiserver@$KUBE_VERSION" "k8s.io/kubernetes/cmd/kube-controller-manager@$KUBE_VERSION" &&
    nice -n 10 go build -trimpath -ldflags "$ldflags" -o "$tmp/" \
      k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager)
  rm -rf "$BIN"; mv "$tmp" "$BIN"
  log "built in $((SECONDS - start)) s of wall time; CPU of the build (user, sys): $(times | tail -n 1)"
  echo "$BIN"
}

# free_port prints a TCP port on 127.0.0.1 that nothing listens on now. It
# picks below Linux's ephemeral range (32768+), where outgoing connections
# would make a port look free yet fail to bind.
free_port() {
  local p i
  for i in $(seq 1 200); do
    p=$((20000 + RANDOM % 12000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return 0; fi
  done
  die "no free port found"
}

# wait_url PIDFILE URL TIMEOUT [CURL ARGS...] waits until curl succeeds on
# URL, up to TIMEOUT seconds, and fails early if the process in PIDFILE dies.
wait_url() {
  local pidfile=$1 url=$2 timeout=$3; shift 3
  local deadline=$((SECONDS + timeout))
  until curl -fsS -o /dev/null --max-time 2 "$@" "$url" 2>/dev/null; do
    [ $SECONDS -lt $deadline ] || return 1
    kill -0 "$(cat "$pidfile")" 2>/dev/null || return 1
    sleep 0.2
  done
}

# spawn NAME DIR CMD... starts CMD in the background with its output in DIR/NAME.log and
# records its PID in DIR/NAME.pid.
spawn() {
  local name=$1 dir=$2; shift 2
  setsid "$@" >"$dir/$name.log" 2>&1 </dev/null &
  echo $! >"$dir/$name.pid"
}

start() {
  have_binaries || die "binaries missing in $BIN: run '$0 build' first"
  command -v openssl >/dev/null || die "openssl is required (apt-get install openssl)"
  local dir; dir=$(mktemp -d "${TMPDIR:-/tmp}/ctrlkit-cp.XXXXXX")
  local etcd_port peer_port api_port token
  etcd_port=$(free_port); peer_port=$(free_port); api_port=$(free_port)
  token=$(openssl rand -hex 16)
  echo "$token,admin,admin,system:masters" >"$dir/tokens.csv"
  echo "$token" >"$dir/token"
  openssl genrsa -out "$dir/sa.key" 2048 2>/dev/null
  openssl rsa -in "$dir/sa.key" -pubout -out "$dir/sa.pub" 2>/dev/null
  mkdir -p "$dir/etcd" "$dir/certs"

  spawn etcd "$dir" "$BIN/etcd" --name=ctrlkit --data-dir="$dir/etcd" --unsafe-no-fsync \
    --listen-client-urls="http://127.0.0.1:$etcd_port" --advertise-client-urls="http://127.0.0.1:$etcd_port" \
    --listen-peer-urls="http://127.0.0.1:$peer_port" --initial-advertise-peer-urls="http://127.0.0.1:$peer_port" \
    --initial-cluster="ctrlkit=http://127.0.0.1:$peer_port" --log-level=warn
  wait_url "$dir/etcd.pid" "http://127.0.0.1:$etcd_port/health" 30 || { tail -20 "$dir/etcd.log" >&2; stop "$dir"; die "etcd not healthy"; }

  spawn kube-apiserver "$dir" "$BIN/kube-apiserver" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$api_port" --cert-dir="$dir/certs" \
    --etcd-servers="http://127.0.0.1:$etcd_port" --token-auth-file="$dir/tokens.csv" \
    --authorization-mode=RBAC --endpoint-reconciler-type=none \
    --service-account-issuer=https://kubernetes.default.svc --service-account-key-file="$dir/sa.pub" \
    --service-account-signing-key-file="$dir/sa.key" --service-cluster-ip-range=10.0.0.0/24 \
    --allow-privileged=true --profiling=false ${CTRLKIT_APISERVER_FLAGS:-}
  wait_url "$dir/kube-apiserver.pid" "https://127.0.0.1:$api_port/readyz" 90 -k -H "Authorization: Bearer $token" ||
    { tail -30 "$dir/kube-apiserver.log" >&2; stop "$dir"; die "kube-apiserver not ready"; }

  echo "https://127.0.0.1:$api_port" >"$dir/server"
  cat >"$dir/kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: ctrlkit
  cluster:
    server: https://127.0.0.1:$api_port
    certificate-authority: $dir/certs/apiserver.crt
users:
- name: admin
  user:
    token: $token
contexts:
- name: ctrlkit
  context: {cluster: ctrlkit, user: admin}
current-context: ctrlkit
KUBECONFIG
  echo "$dir"
}

start_kcm() {
  local dir=${1:?state dir}
  local controllers=${2:-deployment-controller,replicaset-controller,garbage-collector-controller,serviceaccount-controller,resourcequota-controller}
  [ -f "$dir/kubeconfig" ] || die "$dir is not a control plane state dir"
  mkdir -p "$dir/kcm-certs"
  local port attempt
  for attempt in 1 2 3; do # a port can be taken between the check and the bind
    port=$(free_port)
    spawn kube-controller-manager "$dir" "$BIN/kube-controller-manager" \
      --kubeconfig="$dir/kubeconfig" --bind-address=127.0.0.1 --secure-port="$port" --cert-dir="$dir/kcm-certs" \
      --leader-elect=false --use-service-account-credentials=false \
      --service-account-private-key-file="$dir/sa.key" --controllers="$controllers"
    if wait_url "$dir/kube-controller-manager.pid" "https://127.0.0.1:$port/healthz" 60 -k; then
      break
    fi
    tail -5 "$dir/kube-controller-manager.log" >&2
    stop_pid "$dir" kube-controller-manager
    [ "$attempt" -lt 3 ] || die "kube-controller-manager not healthy"
  done
  echo "$port" >"$dir/kcm-port"
}

# stop_pid DIR NAME terminates the process recorded in DIR/NAME.pid and waits for it.
stop_pid() {
  local dir=$1 name=$2 pid i
  [ -f "$dir/$name.pid" ] || return 0
  pid=$(cat "$dir/$name.pid")
  if kill -TERM "$pid" 2>/dev/null; then
    for i in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$dir/$name.pid"
}

stop() {
  local dir=${1:?state dir}
  [ -d "$dir" ] || return 0
  stop_pid "$dir" kube-controller-manager
  stop_pid "$dir" kube-apiserver
  stop_pid "$dir" etcd
  case "$dir" in
    "${TMPDIR:-/tmp}"/ctrlkit-cp.*) rm -rf "$dir" ;;
  esac
}

case "${1:-}" in
  build) build ;;
  start) start ;;
  start-kcm) shift; start_kcm "$@" ;;
  stop-kcm) stop_pid "${2:?state dir}" kube-controller-manager ;;
  stop) stop "${2:-}" ;;
  bin) echo "$BIN" ;;
  *) sed -n '2,27p' "$0" >&2; exit 2 ;;
esac
