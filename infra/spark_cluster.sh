#!/usr/bin/env bash
# A private Spark standalone cluster on the loopback address: one master and
# N workers, started from the pyspark installation of the active Python (the
# pip wheel has no sbin/ scripts, so the daemons are run with spark-class).
#
#   infra/spark_cluster.sh start DIR [WORKERS] [CORES_PER_WORKER]
#   infra/spark_cluster.sh status DIR
#   infra/spark_cluster.sh stop DIR
#
# start prints key=value lines (master=spark://127.0.0.1:PORT, workers=N) once
# every worker has registered with the master; logs live in DIR, and each
# worker has its own work and temporary folders (DIR/workerN/work, .../tmp):
# the workers share no folder with each other. PYTHON selects the interpreter
# (default: python3); executors run Python workers with that same interpreter.
#
# SPARK_CLUSTER_HIDE (folders, separated by ':') hides folders of this machine
# from the workers, as on a cluster whose nodes share no folder with the
# driver: each worker runs in a mount namespace of its own (unshare) where
# each of those folders is an empty tmpfs. It needs the privilege to unshare
# (root); start fails, saying so, without it.
set -euo pipefail

PYTHON="${PYTHON:-python3}"
HOST=127.0.0.1
TIMEOUT="${SPARK_CLUSTER_TIMEOUT:-90}"

spark_home() {
  "$PYTHON" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))'
}

free_port() {
  "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

daemon() {  # daemon DIR NAME HIDE CLASS ARGS...: start one daemon in the background, record its pid;
  # HIDE=yes: in a mount namespace where the SPARK_CLUSTER_HIDE folders are empty
  local dir="$1" name="$2" hide="$3"
  shift 3
  local launch=()
  if [ "$hide" = yes ]; then
    launch=(unshare --mount --propagation private bash -c '
      IFS=: read -ra hidden <<<"$SPARK_CLUSTER_HIDE"
      for folder in "${hidden[@]}"; do mount -t tmpfs binlake-hidden "$folder" || exit 70; done
      exec "$@"' "$name")
  fi
  mkdir -p "$dir/$name/work" "$dir/$name/tmp"
  SPARK_LOCAL_IP="$HOST" SPARK_LOG_DIR="$dir/logs" SPARK_WORKER_DIR="$dir/$name/work" \
    SPARK_LOCAL_DIRS="$dir/$name/tmp" TMPDIR="$dir/$name/tmp" PYSPARK_PYTHON="$PYTHON" \
    nohup "${launch[@]}" "$SPARK_HOME/bin/spark-class" "$@" >"$dir/logs/$name.out" 2>&1 &
  echo $! >"$dir/$name.pid"
}

can_hide() {
  unshare --mount --propagation private true 2>/dev/null
}

registered_workers() {  # the master's web UI JSON lists the workers that are ALIVE
  "$PYTHON" - "$1" <<'EOF'
import json, sys, urllib.request
try:
    with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/json/", timeout=2) as reply:
        print(sum(w.get("state") == "ALIVE" for w in json.load(reply).get("workers", [])))
except Exception:
    print(0)
EOF
}

start() {
  local dir workers cores port ui
  dir="$(mkdir -p "$1" && cd "$1" && pwd)"
  workers="${2:-2}"
  cores="${3:-1}"
  if status "$dir" >/dev/null 2>&1; then
    status "$dir"
    return 0
  fi
  mkdir -p "$dir/logs"
  if [ -n "${SPARK_CLUSTER_HIDE:-}" ] && ! can_hide; then
    echo "spark cluster: SPARK_CLUSTER_HIDE needs a mount namespace (unshare --mount), which is not permitted here" >&2
    return 1
  fi
  SPARK_HOME="$(spark_home)"
  export SPARK_HOME
  port="$(free_port)"
  ui="$(free_port)"
  daemon "$dir" master no org.apache.spark.deploy.master.Master --host "$HOST" --port "$port" --webui-port "$ui"
  local hide=no
  [ -n "${SPARK_CLUSTER_HIDE:-}" ] && hide=yes
  for n in $(seq 1 "$workers"); do
    daemon "$dir" "worker$n" "$hide" org.apache.spark.deploy.worker.Worker "spark://$HOST:$port" \
      --host "$HOST" --cores "$cores" --memory 1g --webui-port 0 --work-dir "$dir/worker$n/work"
  done
  printf 'master=spark://%s:%s\nui_port=%s\nworkers=%s\n' "$HOST" "$port" "$ui" "$workers" >"$dir/cluster.env"
  local waited=0
  until [ "$(registered_workers "$ui")" -ge "$workers" ]; do
    if [ "$waited" -ge "$TIMEOUT" ]; then
      echo "spark cluster: $workers workers did not register within ${TIMEOUT}s" >&2
      tail -n 20 "$dir"/logs/*.out >&2 || true
      stop "$dir"
      return 1
    fi
    sleep 1
    waited=$((waited + 1))
  done
  cat "$dir/cluster.env"
}

status() {
  local dir="$1" pid
  [ -f "$dir/cluster.env" ] || return 1
  for pidfile in "$dir"/*.pid; do
    pid="$(cat "$pidfile")"
    kill -0 "$pid" 2>/dev/null || return 1
  done
  cat "$dir/cluster.env"
}

stop() {
  local dir="$1" pid
  for pidfile in "$dir"/*.pid; do
    [ -f "$pidfile" ] || continue
    pid="$(cat "$pidfile")"
    pkill -TERM -P "$pid" 2>/dev/null || true
    kill -TERM "$pid" 2>/dev/null || true
    rm -f "$pidfile"
  done
  rm -f "$dir/cluster.env"
}

case "${1:-}" in
  start) shift; start "$@" ;;
  status) status "$2" ;;
  stop) stop "$2" ;;
  *) echo "usage: $0 start DIR [WORKERS] [CORES] | status DIR | stop DIR" >&2; exit 2 ;;
esac
