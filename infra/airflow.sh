#!/usr/bin/env bash
# A private Airflow for a developer machine: `airflow standalone` (scheduler,
# DAG processor, triggerer and API server with the UI) on the loopback
# address, with SQLite and everything else under DIR, the repository's dags/
# and plugins/ folders, no example DAGs, and no login (everyone is admin).
#
#   infra/airflow.sh start DIR [PORT]
#   infra/airflow.sh status DIR
#   infra/airflow.sh stop DIR
#
# start returns once the API server answers and prints key=value lines
# (url=http://127.0.0.1:PORT, home=DIR, log=DIR/standalone.log). The first
# start of a DIR creates the metadata database, which takes a while.
# AIRFLOW selects the airflow executable (default: .venv/bin/airflow of this
# repository); the Airflow processes find each other and the `airflow`
# command through its folder, put first on PATH.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
AIRFLOW="${AIRFLOW:-$REPO/.venv/bin/airflow}"
HOST=127.0.0.1
TIMEOUT="${AIRFLOW_START_TIMEOUT:-300}"
STOP_TIMEOUT="${AIRFLOW_STOP_TIMEOUT:-30}"

api_answers() {  # the API server's health endpoint needs no login
  "$(dirname "$AIRFLOW")/python" - "$1" <<'EOF'
import sys, urllib.request
try:
    with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/api/v2/monitor/health", timeout=2) as reply:
        sys.exit(0 if reply.status == 200 else 1)
except Exception:
    sys.exit(1)
EOF
}

free_port() {
  "$(dirname "$AIRFLOW")/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

port_in_use() {
  "$(dirname "$AIRFLOW")/python" -c 'import socket, sys; s = socket.socket(); sys.exit(s.connect_ex(("127.0.0.1", int(sys.argv[1]))) != 0)' "$1"
}

descendants() {  # every process below PID, deepest last
  local pid
  for pid in $(ps -o pid= --ppid "$1" 2>/dev/null); do
    echo "$pid"
    descendants "$pid"
  done
}

start() {
  local dir port
  dir="$(mkdir -p "$1" && cd "$1" && pwd)"
  port="${2:-8080}"
  if status "$dir" >/dev/null 2>&1; then
    status "$dir"
    return 0
  fi
  if port_in_use "$port"; then
    echo "airflow: port $port on $HOST is already in use" >&2
    return 1
  fi
  [ -x "$AIRFLOW" ] || { echo "airflow: $AIRFLOW not found (run make setup, or set AIRFLOW)" >&2; return 1; }
  (
    export PATH="$(dirname "$AIRFLOW"):$PATH"
    export AIRFLOW_HOME="$dir"
    export AIRFLOW__CORE__DAGS_FOLDER="$REPO/dags"
    export AIRFLOW__CORE__PLUGINS_FOLDER="$REPO/plugins"
    export AIRFLOW__CORE__LOAD_EXAMPLES=False
    export AIRFLOW__DATABASE__SQL_ALCHEMY_CONN="sqlite:///$dir/airflow.db"
    export AIRFLOW__API__HOST="$HOST"
    export AIRFLOW__API__PORT="$port"
    export AIRFLOW__API__BASE_URL="http://$HOST:$port"
    export AIRFLOW__CORE__EXECUTION_API_SERVER_URL="http://$HOST:$port/execution/"
    export AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS=True
    # The scheduler's and the triggerer's log servers (fixed ports 8793 and 8794 by default)
    # get free ports, so that several private Airflows can run side by side.
    export AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT="$(free_port)"
    export AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT="$(free_port)"
    export AIRFLOW__CORE__PARALLELISM="${AIRFLOW__CORE__PARALLELISM:-4}"
    # A session of its own, so that stop can signal the whole group standalone spawns.
    exec setsid "$AIRFLOW" standalone >"$dir/standalone.log" 2>&1 </dev/null
  ) &
  echo $! >"$dir/standalone.pid"
  printf 'url=http://%s:%s\nhome=%s\nlog=%s\n' "$HOST" "$port" "$dir" "$dir/standalone.log" >"$dir/airflow.env"
  local waited=0
  until api_answers "$port"; do
    if ! kill -0 "$(cat "$dir/standalone.pid")" 2>/dev/null || [ "$waited" -ge "$TIMEOUT" ]; then
      echo "airflow: the API server did not answer on $HOST:$port within ${waited}s; end of $dir/standalone.log:" >&2
      tail -n 40 "$dir/standalone.log" >&2 || true
      stop "$dir"
      return 1
    fi
    sleep 2
    waited=$((waited + 2))
  done
  cat "$dir/airflow.env"
}

status() {
  local dir="$1"
  [ -f "$dir/airflow.env" ] && [ -f "$dir/standalone.pid" ] || return 1
  kill -0 "$(cat "$dir/standalone.pid")" 2>/dev/null || return 1
  cat "$dir/airflow.env"
}

alive() {  # any of the PIDs still running (zombies waiting to be reaped do not count)
  ps -o stat= -p "$(IFS=,; echo "$*")" 2>/dev/null | grep -qv '^Z'
}

stop() {
  local dir="$1" pid tree waited=0
  [ -f "$dir/standalone.pid" ] || return 0
  pid="$(cat "$dir/standalone.pid")"
  tree=("$pid" $(descendants "$pid"))
  # standalone leads a process group of its own: every component gets SIGTERM at once and
  # shuts down cleanly; what is still there after STOP_TIMEOUT seconds is killed.
  kill -TERM -- "-$pid" "${tree[@]}" 2>/dev/null || true
  while alive "${tree[@]}" && [ "$waited" -lt "$STOP_TIMEOUT" ]; do
    sleep 1
    waited=$((waited + 1))
  done
  kill -KILL -- "-$pid" "${tree[@]}" 2>/dev/null || true
  rm -f "$dir/standalone.pid" "$dir/airflow.env"
}

case "${1:-}" in
  start) shift; start "$@" ;;
  status) status "$2" ;;
  stop) stop "$2" ;;
  *) echo "usage: $0 start DIR [PORT] | status DIR | stop DIR" >&2; exit 2 ;;
esac
