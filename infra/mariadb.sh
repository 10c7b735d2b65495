#!/usr/bin/env bash
# Private MariaDB servers for tests, samples and benchmarks.
#
#   infra/mariadb.sh install            install mariadb-server/-client if missing
#   infra/mariadb.sh start DIR [PORT]   start a private server with its data in DIR
#   infra/mariadb.sh stop DIR           shut that server down
#   infra/mariadb.sh status DIR         report whether it is running
#   infra/mariadb.sh kill DIR           kill -9 that server (a crash, for failover tests)
#
# A private server never touches the system service or /etc/mysql: it runs with
# --no-defaults, keeps data, socket, pid file, error log, binary and relay logs
# under DIR, and listens on 127.0.0.1 only. SERVER_ID (default 1) and
# GTID_STRICT_MODE (default ON) set those server variables. See infra/README.md.
set -euo pipefail

DEFAULT_PORT=33306
START_TIMEOUT=${MARIADB_START_TIMEOUT:-60}
STOP_TIMEOUT=${MARIADB_STOP_TIMEOUT:-60}

die() { echo "mariadb.sh: $*" >&2; exit 1; }

usage() {
    sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

find_bin() {
    # find_bin NAME [FALLBACK...]: first executable found on PATH or in sbin dirs.
    local name
    for name in "$@"; do
        if command -v "$name" >/dev/null 2>&1; then command -v "$name"; return 0; fi
        for d in /usr/sbin /usr/local/sbin /usr/bin; do
            if [[ -x "$d/$name" ]]; then echo "$d/$name"; return 0; fi
        done
    done
    return 1
}

server_bin()  { find_bin mariadbd mysqld; }
client_bin()  { find_bin mariadb mysql; }
admin_bin()   { find_bin mariadb-admin mysqladmin; }
installdb_bin() { find_bin mariadb-install-db mysql_install_db; }

abs_dir() {
    mkdir -p "$1"
    (cd "$1" && pwd -P)
}

cmd_install() {
    if server_bin >/dev/null && client_bin >/dev/null; then
        echo "MariaDB already installed: $("$(server_bin)" --version)"
        return 0
    fi
    local sudo=()
    if [[ $(id -u) -ne 0 ]]; then sudo=(sudo); fi
    # Keep the packaging scripts from starting the distribution's service.
    local policy=/usr/sbin/policy-rc.d created_policy=0
    if [[ ! -e $policy ]]; then
        printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
        "${sudo[@]}" chmod 755 "$policy"
        created_policy=1
    fi
    local rc=0
    "${sudo[@]}" apt-get update -q || rc=$?
    if [[ $rc -eq 0 ]]; then
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
            apt-get install -y -q mariadb-server mariadb-client || rc=$?
    fi
    if [[ $created_policy -eq 1 ]]; then "${sudo[@]}" rm -f "$policy"; fi
    [[ $rc -eq 0 ]] || die "apt-get failed (exit $rc)"
    server_bin >/dev/null || die "mariadbd not found after installation"
    echo "MariaDB installed: $("$(server_bin)" --version)"
}

# Paths inside a server directory.
set_paths() {
    DIR=$(abs_dir "$1")
    DATADIR=$DIR/data
    BINLOG_DIR=$DIR/binlog
    RELAY_DIR=$DIR/relay
    SOCKET=$DIR/mariadb.sock
    PIDFILE=$DIR/mariadb.pid
    ERRLOG=$DIR/mariadb.err
    PORTFILE=$DIR/port
    # Unix socket paths are limited to 107 bytes.
    if (( ${#SOCKET} > 100 )); then
        die "socket path too long (${#SOCKET} bytes): $SOCKET; use a shorter DIR"
    fi
}

running_pid() {
    # Prints the server pid if the pid file points at a live mariadbd.
    [[ -s $PIDFILE ]] || return 1
    local pid
    pid=$(tr -dc '0-9' <"$PIDFILE")
    [[ -n $pid ]] || return 1
    alive "$pid" || return 1
    # Guard against pid reuse: the process must be a server using this datadir.
    if [[ -r /proc/$pid/cmdline ]]; then
        tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "--datadir=$DATADIR" || return 1
    fi
    echo "$pid"
}

alive() {
    # alive PID: the process exists and is not a zombie.
    kill -0 "$1" 2>/dev/null || return 1
    if [[ -r /proc/$1/stat ]]; then
        [[ $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) != Z ]] || return 1
    fi
}

answers() {
    "$(admin_bin)" --no-defaults --protocol=socket --socket="$SOCKET" -uroot \
        --connect-timeout=2 ping >/dev/null 2>&1
}

print_conn() {
    local port
    port=$(cat "$PORTFILE" 2>/dev/null || echo "?")
    echo "socket=$SOCKET"
    echo "port=$port"
    echo "datadir=$DATADIR"
    echo "binlog_dir=$BINLOG_DIR"
}

cmd_start() {
    [[ $# -ge 1 ]] || usage
    set_paths "$1"
    local port=${2:-$DEFAULT_PORT}
    [[ $port =~ ^[0-9]+$ ]] || die "bad port: $port"
    local server_id=${SERVER_ID:-1}
    # 1..2^32-1: a replica refuses to connect with server_id 0.
    [[ $server_id =~ ^[0-9]{1,10}$ ]] && (( 10#$server_id >= 1 && 10#$server_id <= 4294967295 )) \
        || die "bad SERVER_ID: $server_id (a number from 1 to 4294967295)"
    server_id=$((10#$server_id))
    local gtid_strict=${GTID_STRICT_MODE:-ON}
    case ${gtid_strict^^} in
        ON|1|TRUE) gtid_strict=ON ;;
        OFF|0|FALSE) gtid_strict=OFF ;;
        *) die "bad GTID_STRICT_MODE: $gtid_strict (ON or OFF)" ;;
    esac

    if pid=$(running_pid) && answers; then
        echo "already running (pid $pid)"
        print_conn
        return 0
    fi

    local mariadbd
    mariadbd=$(server_bin) || die "mariadbd not found; run: infra/mariadb.sh install"
    local user_opt=()
    if [[ $(id -u) -eq 0 ]]; then user_opt=(--user=root); fi

    if [[ ! -d $DATADIR/mysql ]]; then
        local installdb
        installdb=$(installdb_bin) || die "mariadb-install-db not found"
        rm -rf "$DATADIR"
        mkdir -p "$DATADIR"
        # --tmpdir: the bootstrap's own temporary tables stay in DIR. With the default
        # (/tmp), two installs at once crash now and then (SIGSEGV in ha_maria::drop_table,
        # 7 in 100 parallel pairs with MariaDB 10.11; none in 140 with private tmpdirs).
        if ! "$installdb" --no-defaults --datadir="$DATADIR" "${user_opt[@]}" \
                --tmpdir="$DIR" \
                --auth-root-authentication-method=normal \
                --skip-test-db >"$DIR/install-db.log" 2>&1; then
            tail -n 30 "$DIR/install-db.log" >&2
            die "mariadb-install-db failed (log: $DIR/install-db.log)"
        fi
    fi
    mkdir -p "$BINLOG_DIR" "$RELAY_DIR"
    rm -f "$PIDFILE" "$SOCKET"
    echo "$port" >"$PORTFILE"

    nohup "$mariadbd" --no-defaults \
        "${user_opt[@]}" \
        --datadir="$DATADIR" \
        --socket="$SOCKET" \
        --port="$port" \
        --bind-address=127.0.0.1 \
        --pid-file="$PIDFILE" \
        --log-error="$ERRLOG" \
        --tmpdir="$DIR" \
        --server-id="$server_id" \
        --log-bin="$BINLOG_DIR/mariadb-bin" \
        --log-slave-updates \
        --gtid-strict-mode="$gtid_strict" \
        --relay-log="$RELAY_DIR/relay-bin" \
        --binlog-format=ROW \
        --binlog-row-image="${BINLOG_ROW_IMAGE:-FULL}" \
        --binlog-row-metadata="${BINLOG_ROW_METADATA:-FULL}" \
        --binlog-checksum=CRC32 \
        --max-binlog-size="${MAX_BINLOG_SIZE:-1G}" \
        --skip-name-resolve \
        --character-set-server="${CHARACTER_SET_SERVER:-utf8mb4}" \
        --collation-server="${COLLATION_SERVER:-utf8mb4_general_ci}" \
        --innodb-buffer-pool-size="${INNODB_BUFFER_POOL_SIZE:-128M}" \
        --innodb-log-file-size="${INNODB_LOG_FILE_SIZE:-256M}" \
        --innodb-flush-log-at-trx-commit="${INNODB_FLUSH_LOG_AT_TRX_COMMIT:-2}" \
        --sync-binlog=0 \
        ${MARIADBD_EXTRA_ARGS:-} \
        </dev/null >>"$DIR/mariadbd.out" 2>&1 &
    local spawned=$!

    local waited=0
    until answers; do
        if ! alive "$spawned"; then
            echo "--- tail of $ERRLOG ---" >&2
            tail -n 30 "$ERRLOG" >&2 2>/dev/null || true
            die "mariadbd exited during startup"
        fi
        if (( waited >= START_TIMEOUT * 5 )); then
            echo "--- tail of $ERRLOG ---" >&2
            tail -n 30 "$ERRLOG" >&2 2>/dev/null || true
            kill "$spawned" 2>/dev/null || true
            die "server did not answer within ${START_TIMEOUT}s"
        fi
        sleep 0.2
        waited=$((waited + 1))
    done
    echo "started (pid $(cat "$PIDFILE" 2>/dev/null || echo "$spawned"))"
    print_conn
}

# The pid of the server of DIR ($1) in $pid, paths set; 1 (and "not running") when there is none.
server_of() {
    [[ $# -ge 1 ]] || usage
    [[ -d $1 ]] || { echo "not running (no directory $1)"; return 1; }
    set_paths "$1"
    pid=$(running_pid) && return 0
    echo "not running"
    return 1
}

cmd_stop() {
    local pid
    if ! server_of "$@"; then
        [[ -n ${SOCKET:-} ]] && rm -f "$SOCKET"
        return 0
    fi
    "$(admin_bin)" --no-defaults --protocol=socket --socket="$SOCKET" -uroot \
        --connect-timeout=5 shutdown >/dev/null 2>&1 || kill -TERM "$pid" 2>/dev/null || true
    local waited=0
    while alive "$pid"; do
        if (( waited == STOP_TIMEOUT * 5 )); then
            echo "server did not stop within ${STOP_TIMEOUT}s; sending SIGTERM" >&2
            kill -TERM "$pid" 2>/dev/null || true
        elif (( waited >= STOP_TIMEOUT * 5 + 50 )); then
            echo "sending SIGKILL to $pid" >&2
            kill -KILL "$pid" 2>/dev/null || true
            sleep 0.5
            break
        fi
        sleep 0.2
        waited=$((waited + 1))
    done
    rm -f "$SOCKET"
    echo "stopped"
}

cmd_kill() {
    # kill -9 the server of DIR, as a crash would; waits until the process is gone.
    local pid
    server_of "$@" || return 0
    kill -KILL "$pid" 2>/dev/null || true
    local waited=0
    while alive "$pid"; do
        if (( waited >= 100 )); then die "pid $pid still alive 20s after SIGKILL"; fi
        sleep 0.1
        waited=$((waited + 1))
    done
    # The pid file and the socket stay behind, as after a crash; start and stop cope.
    echo "killed (pid $pid)"
}

cmd_status() {
    [[ $# -ge 1 ]] || usage
    [[ -d $1 ]] || { echo "not running"; return 3; }
    set_paths "$1"
    local pid
    if pid=$(running_pid) && answers; then
        echo "running (pid $pid)"
        print_conn
        return 0
    fi
    echo "not running"
    return 3
}

[[ $# -ge 1 ]] || usage
sub=$1; shift
case $sub in
    install) cmd_install "$@" ;;
    start)   cmd_start "$@" ;;
    stop)    cmd_stop "$@" ;;
    status)  cmd_status "$@" ;;
    kill)    cmd_kill "$@" ;;
    -h|--help|help) usage ;;
    *) echo "unknown subcommand: $sub" >&2; usage ;;
esac
