#!/usr/bin/env bash
# A private S3-compatible server on the loopback address: moto in server mode,
# from the moto installation of the active Python. It keeps everything in
# memory; stopping it forgets every bucket.
#
#   infra/s3_server.sh start DIR [PORT]
#   infra/s3_server.sh status DIR
#   infra/s3_server.sh stop DIR
#
# start prints endpoint=http://127.0.0.1:PORT once the server answers; its pid
# and log live in DIR. PYTHON selects the interpreter (default: python3).
set -euo pipefail

PYTHON="${PYTHON:-python3}"
HOST=127.0.0.1
DEFAULT_PORT=5000
TIMEOUT="${S3_SERVER_TIMEOUT:-30}"
STOP_TIMEOUT="${S3_SERVER_STOP_TIMEOUT:-10}"

answers() {  # answers PORT: exit 0 when an S3 request (list buckets) gets an HTTP reply
  "$PYTHON" - "$1" <<'PY'
import sys, urllib.error, urllib.request
try:
    urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/", timeout=2).close()
except urllib.error.HTTPError:
    pass  # any HTTP status means the server is up
except Exception:
    sys.exit(1)
PY
}

port_taken() {  # port_taken PORT: exit 0 when something already listens on 127.0.0.1:PORT
  "$PYTHON" - "$1" <<'PY'
import socket, sys
with socket.socket() as s:
    try:
        s.bind(("127.0.0.1", int(sys.argv[1])))
    except OSError:
        sys.exit(0)
sys.exit(1)
PY
}

running() {  # running DIR: exit 0 when the server recorded in DIR is alive
  [ -f "$1/s3_server.pid" ] && kill -0 "$(cat "$1/s3_server.pid")" 2>/dev/null
}

start() {
  local dir port pid waited=0
  dir="$(mkdir -p "$1" && cd "$1" && pwd)"
  port="${2:-$DEFAULT_PORT}"
  if status "$dir" >/dev/null 2>&1; then
    status "$dir"
    return 0
  fi
  if port_taken "$port"; then
    echo "s3 server: port $port is in use; choose another: $0 start DIR PORT" >&2
    return 1
  fi
  nohup "$PYTHON" -m moto.server -H "$HOST" -p "$port" >"$dir/s3_server.log" 2>&1 &
  pid=$!
  echo "$pid" >"$dir/s3_server.pid"
  until answers "$port"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "s3 server: exited before answering on port $port" >&2
      tail -n 20 "$dir/s3_server.log" >&2 || true
      rm -f "$dir/s3_server.pid"
      return 1
    fi
    if [ "$waited" -ge "$TIMEOUT" ]; then
      echo "s3 server: no answer on port $port within ${TIMEOUT}s" >&2
      tail -n 20 "$dir/s3_server.log" >&2 || true
      stop "$dir"
      return 1
    fi
    sleep 1
    waited=$((waited + 1))
  done
  echo "endpoint=http://$HOST:$port" >"$dir/s3_server.env"
  cat "$dir/s3_server.env"
}

status() {
  local dir="$1"
  running "$dir" && [ -f "$dir/s3_server.env" ] || return 1
  cat "$dir/s3_server.env"
}

stop() {
  local dir="$1" pid waited=0
  if [ -f "$dir/s3_server.pid" ]; then
    pid="$(cat "$dir/s3_server.pid")"
    kill -TERM "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do
      if [ "$waited" -ge "$STOP_TIMEOUT" ]; then
        kill -KILL "$pid" 2>/dev/null || true
        break
      fi
      sleep 1
      waited=$((waited + 1))
    done
    rm -f "$dir/s3_server.pid"
  fi
  rm -f "$dir/s3_server.env"
}

case "${1:-}" in
  start) shift; start "$@" ;;
  status) status "$2" ;;
  stop) stop "$2" ;;
  *) echo "usage: $0 start DIR [PORT] | status DIR | stop DIR" >&2; exit 2 ;;
esac
