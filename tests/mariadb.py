"""Test helpers for a private MariaDB server and for ``mariadb-binlog`` output.

``MariaDBServer`` drives ``infra/mariadb.sh`` to run a throw-away server whose
data, socket and binary logs live in one directory.  ``parse_mariadb_binlog``
turns the text printed by ``mariadb-binlog FILE`` into a list of
``ReferenceEvent`` records, which the integration tests use as the reference
to compare ``binlog-codec`` against.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
INFRA_SCRIPT = REPO_ROOT / "infra" / "mariadb.sh"


def run_infra(script: Path, args, env: dict, timeout: float, error: type[Exception]) -> str:
    """``bash infra/<script> ARGS...``: its standard output; ``error`` with everything it printed
    when it fails."""
    proc = subprocess.run(["bash", str(script), *args], capture_output=True, text=True, env=env, timeout=timeout)
    if proc.returncode != 0:
        raise error(
            f"infra/{script.name} {' '.join(args)} failed (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}"
        )
    return proc.stdout


class ServerError(RuntimeError):
    """The private server could not be started or did not answer."""


# The user a replica logs in to its primary with (created by ``replicate_from``).
REPL_USER = "repl"
REPL_PASSWORD = "repl-pw"


def parse_gtid_pos(text: str) -> dict[int, tuple[int, int]]:
    """A GTID position such as ``"0-1-12,7-2-3"`` as ``{domain: (server_id, seq_no)}``.
    (Parse a binlog *state*, which may repeat a domain, with ``text.split(",")`` instead.)"""
    out: dict[int, tuple[int, int]] = {}
    for part in text.replace("\n", ",").split(","):
        part = part.strip()
        if not part:
            continue
        domain, server, seq = (int(x) for x in part.split("-"))
        out[domain] = (server, seq)
    return out


def gtid_pos_covers(
    have: dict[int, tuple[int, int]], want: dict[int, tuple[int, int]], same_server: bool = False
) -> bool:
    """Whether position ``have`` is at or past ``want`` in every domain of ``want`` (with
    ``same_server``, only where ``have`` names the same server id as ``want``)."""
    return all(
        domain in have and have[domain][1] >= seq and (not same_server or have[domain][0] == server)
        for domain, (server, seq) in want.items()
    )


def _find(*names: str) -> str | None:
    for name in names:
        found = shutil.which(name)
        if found:
            return found
        for d in ("/usr/sbin", "/usr/local/sbin"):
            cand = Path(d) / name
            if cand.is_file() and os.access(cand, os.X_OK):
                return str(cand)
    return None


def missing_tools() -> list[str]:
    """Names of the MariaDB programs the tests need that are not installed."""
    wanted = {
        "mariadbd": ("mariadbd", "mysqld"),
        "mariadb": ("mariadb", "mysql"),
        "mariadb-install-db": ("mariadb-install-db", "mysql_install_db"),
        "mariadb-admin": ("mariadb-admin", "mysqladmin"),
        "mariadb-binlog": ("mariadb-binlog", "mysqlbinlog"),
    }
    return [name for name, alts in wanted.items() if _find(*alts) is None]


def mariadb_binlog_path() -> str:
    path = _find("mariadb-binlog", "mysqlbinlog")
    if path is None:
        raise FileNotFoundError("mariadb-binlog is not installed")
    return path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MariaDBServer:
    """A private server managed by ``infra/mariadb.sh``.

    Statements are sent with the ``mariadb`` command-line client over the
    server's Unix socket; each ``sql()`` call is one client session.

    ``server_id`` is passed to the script as ``SERVER_ID``. Two servers make a GTID
    primary/replica pair with ``replica.replicate_from(primary)``; ``wait_caught_up``,
    ``kill`` and ``promote`` drive a failover (see the ``mariadb_pair`` fixture).
    """

    def __init__(self, directory: Path, port: int | None = None, env: dict | None = None, server_id: int = 1):
        self.directory = Path(directory)
        self.port = port or free_port()
        self.server_id = int(server_id)
        self.datadir = self.directory / "data"
        self.binlog_dir = self.directory / "binlog"
        self.relay_dir = self.directory / "relay"
        self.socket = self.directory / "mariadb.sock"
        self._env = dict(os.environ, **(env or {}))
        self._env["SERVER_ID"] = str(self.server_id)
        self._client = _find("mariadb", "mysql")

    # -- lifecycle -----------------------------------------------------------
    def _infra(self, *args: str, timeout: float = 180) -> str:
        return run_infra(INFRA_SCRIPT, args, self._env, timeout, ServerError)

    def start(self) -> "MariaDBServer":
        out = self._infra("start", str(self.directory), str(self.port))
        info = dict(
            line.split("=", 1) for line in out.splitlines() if "=" in line
        )
        if "socket" in info:
            self.socket = Path(info["socket"])
        return self

    def stop(self) -> None:
        self._infra("stop", str(self.directory))

    def restart(self) -> None:
        """Clean shutdown (ends the current binlog with a STOP event) and start."""
        self.stop()
        self.start()

    def kill(self) -> None:
        """``kill -9`` the server (a crash: no STOP event, no shutdown of the engine) and wait
        until the process is gone. ``stop()`` and ``start()`` still work afterwards."""
        self._infra("kill", str(self.directory), timeout=60)

    def is_running(self) -> bool:
        proc = subprocess.run(
            ["bash", str(INFRA_SCRIPT), "status", str(self.directory)],
            capture_output=True,
            text=True,
        )
        return proc.returncode == 0

    # -- SQL -----------------------------------------------------------------
    def sql(self, text: str, database: str | None = None) -> str:
        """Run one or more statements in one session; return the client's stdout
        (tab-separated, with a header line per result set)."""
        if self._client is None:
            raise ServerError("the mariadb client is not installed")
        cmd = [
            self._client,
            "--no-defaults",
            "--protocol=socket",
            f"--socket={self.socket}",
            "--user=root",
            "--batch",
            "--raw",
            "--default-character-set=utf8mb4",
        ]
        if database:
            cmd.append(f"--database={database}")
        proc = subprocess.run(
            cmd, input=text.encode(), capture_output=True, timeout=300
        )
        if proc.returncode != 0:
            raise ServerError(
                f"SQL failed (exit {proc.returncode}): "
                f"{proc.stderr.decode(errors='replace')}\n--- statements ---\n{text}"
            )
        return proc.stdout.decode()

    def rows(self, text: str) -> list[list[str]]:
        """Rows of the last result set of ``text`` (header dropped)."""
        lines = self.sql(text).splitlines()
        return [line.split("\t") for line in lines[1:]]

    def flush_logs(self) -> None:
        self.sql("FLUSH BINARY LOGS")

    def binlog_files(self) -> list[Path]:
        names = [row[0] for row in self.rows("SHOW BINARY LOGS")]
        return sorted(self.binlog_dir / name for name in names)

    def current_binlog(self) -> Path:
        return self.binlog_files()[-1]

    def logged(self, text: str, folder: Path, row_image: str = "FULL") -> list[Path]:
        """Runs ``text`` in binlog files of its own, ``binlog_row_image`` set to ``row_image`` (FULL
        again after), and copies them into ``folder``; their copies, in log order."""
        self.sql(f"SET GLOBAL binlog_row_image = {row_image}")
        self.flush_logs()
        first = self.current_binlog()
        try:
            self.sql(text)
        finally:
            self.sql("SET GLOBAL binlog_row_image = FULL")
        self.flush_logs()
        return self.copy_closed_binlogs(first, folder)

    def copy_closed_binlogs(self, since: Path, folder: Path) -> list[Path]:
        """Copies the binlog files from ``since`` up to the one being written (left out) into
        ``folder``; their copies, in log order."""
        copies = []
        for binlog in self.binlog_files():
            if since <= binlog < self.current_binlog():
                shutil.copyfile(binlog, folder / binlog.name)
                copies.append(folder / binlog.name)
        return copies

    # -- GTID replication ----------------------------------------------------
    def variable(self, name: str) -> str:
        """The value of the global ``@@name`` (``""`` for an empty string)."""
        rows = self.rows(f"SELECT @@GLOBAL.{name}")
        return rows[0][0] if rows and rows[0] else ""

    def gtid_binlog_pos(self) -> str:
        """``@@gtid_binlog_pos``: the last GTID binlogged per domain, e.g. ``"0-1-12"``."""
        return self.variable("gtid_binlog_pos")

    def gtid_binlog_state(self) -> str:
        """``@@gtid_binlog_state``: the last GTID binlogged per (domain, server id) pair,
        e.g. ``"0-1-12,0-2-15"`` once a domain has had two primaries."""
        return self.variable("gtid_binlog_state")

    def gtid_slave_pos(self) -> str:
        """``@@gtid_slave_pos``: the last GTID applied by replication, per domain."""
        return self.variable("gtid_slave_pos")

    def gtid_current_pos(self) -> str:
        """``@@gtid_current_pos``: the newer of binlog and slave position, per domain."""
        return self.variable("gtid_current_pos")

    def slave_status(self) -> dict[str, str]:
        """``SHOW SLAVE STATUS`` as a dict (empty when this server replicates from nobody)."""
        lines = self.sql("SHOW SLAVE STATUS").split("\n")
        if len(lines) < 2 or not lines[1]:
            return {}
        header = lines[0].split("\t")
        # --raw output: a value may hold a newline, so split the rest on tabs only.
        values = "\n".join(lines[1:]).rstrip("\n").split("\t")
        return dict(zip(header, values))

    def ensure_replication_user(self) -> None:
        """Create ``REPL_USER``@``127.0.0.1`` with REPLICATION SLAVE on this server, outside
        the binlog (it does not show up in the GTID stream a test looks at)."""
        self.sql(
            "SET SESSION sql_log_bin = 0;\n"
            f"CREATE USER IF NOT EXISTS '{REPL_USER}'@'127.0.0.1' IDENTIFIED BY '{REPL_PASSWORD}';\n"
            f"GRANT REPLICATION SLAVE ON *.* TO '{REPL_USER}'@'127.0.0.1';\n"
        )

    def replicate_from(self, primary: "MariaDBServer") -> None:
        """Make this server a GTID replica of ``primary`` (``MASTER_USE_GTID=slave_pos``) and
        start replicating. Creates the replication user on ``primary`` first: root may only log
        in over the socket."""
        primary.ensure_replication_user()
        self.sql(
            "STOP SLAVE;\n"
            f"CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT={int(primary.port)}, "
            f"MASTER_USER='{REPL_USER}', MASTER_PASSWORD='{REPL_PASSWORD}', "
            "MASTER_CONNECT_RETRY=1, MASTER_USE_GTID=slave_pos;\n"
            "START SLAVE;\n"
        )

    def wait_caught_up(self, primary: "MariaDBServer", timeout: float = 30) -> str:
        """Wait until this replica has applied everything ``primary`` had binlogged when
        called: ``@@gtid_slave_pos`` reaches ``primary``'s ``@@gtid_binlog_pos`` in every
        domain (or ``@@gtid_current_pos`` does with the same server ids: transactions this
        server once wrote itself and got back from ``primary``; a local write of its own never
        counts). Returns that primary position; on timeout, ``ServerError`` naming both
        positions and SHOW SLAVE STATUS's thread states and last errors."""
        target = primary.gtid_binlog_pos()
        wanted = parse_gtid_pos(target)
        deadline = time.monotonic() + timeout
        while True:
            slave_pos = self.gtid_slave_pos()
            current_pos = self.gtid_current_pos()
            if gtid_pos_covers(parse_gtid_pos(slave_pos), wanted) or gtid_pos_covers(
                parse_gtid_pos(current_pos), wanted, same_server=True
            ):
                return target
            if time.monotonic() > deadline:
                status = self.slave_status()
                raise ServerError(
                    f"replica on port {self.port} did not catch up with the primary on port "
                    f"{primary.port} within {timeout}s: primary gtid_binlog_pos={target!r}, "
                    f"replica gtid_slave_pos={slave_pos!r} gtid_current_pos={current_pos!r}; "
                    f"Slave_IO_Running={status.get('Slave_IO_Running')!r} "
                    f"Slave_SQL_Running={status.get('Slave_SQL_Running')!r} "
                    f"Last_Error={status.get('Last_Error')!r} "
                    f"Last_IO_Error={status.get('Last_IO_Error')!r} "
                    f"Last_SQL_Error={status.get('Last_SQL_Error')!r}"
                )
            time.sleep(0.05)

    def promote(self) -> None:
        """Stop replicating and forget the primary (``STOP SLAVE; RESET SLAVE ALL``) so this
        server takes writes as the new primary; its new transactions get its own server id
        and continue each domain's sequence numbers."""
        self.sql("STOP SLAVE;\nRESET SLAVE ALL;\nSET GLOBAL read_only = OFF;\n")

    def wait_settled(self, timeout: float = 20.0) -> Path:
        """Wait until the server has nothing more to write to its current
        binlog; returns that file.

        After a rotation the server writes a BINLOG_CHECKPOINT naming the new
        file only once the engine has made the older transactions durable,
        which can be a second or more later. Until then, two readers of the
        current file may see different events."""
        current = self.current_binlog()
        deadline = time.monotonic() + timeout
        while True:
            names = checkpoint_names(current)
            if names and names[-1] == current.name:
                return current
            if time.monotonic() > deadline:
                raise ServerError(
                    f"{current.name}: no checkpoint naming itself after {timeout}s "
                    f"(checkpoints: {names})"
                )
            time.sleep(0.1)


# ---------------------------------------------------------------------------
# mariadb-binlog text output
# ---------------------------------------------------------------------------

DELIM = "/*!*/;"

AT_RE = re.compile(r"^# at (\d+)$")
# "#261121 19:55:45 server id 1  end_log_pos 256 CRC32 0xbe8f1ef6 \tStart: ..."
HEADER_RE = re.compile(
    r"^#(\d{6})\s+(\d{1,2}:\d\d:\d\d)\s+server id (\d+)\s+end_log_pos (\d+)"
    r"(?:\s+CRC32 0x([0-9a-fA-F]+))?\s*\t(.*)$"
)
GTID_RE = re.compile(r"^(?:BEGIN )?GTID (\d+)-(\d+)-(\d+)\b(.*)$")
TABLE_MAP_RE = re.compile(r"^Table_map: `(.*)`\.`(.*)` mapped to number (\d+)")
ROWS_RE = re.compile(
    r"^(Write|Update|Delete)(_compressed)?_rows(_v1)?(_compressed)?(_v1)?: "
    r"table id (\d+)(?: flags: (.*))?$"
)
QUERY_HDR_RE = re.compile(
    r"^(Query|Query_compressed)\tthread_id=(\d+)\texec_time=(\d+)\terror_code=(\d+)"
)
ROTATE_RE = re.compile(r"^Rotate to (\S+)\s+pos: (\d+)")
START_RE = re.compile(r"^Start: binlog v (\d+), server v (\S+)")


@dataclass
class ReferenceEvent:
    """One event as printed by mariadb-binlog."""

    pos: int
    end_pos: int
    server_id: int
    crc32: str | None
    header: str  # the text after the tab, e.g. "Xid = 9"
    lines: list[str] = field(default_factory=list)  # body lines after the header
    family: str = ""  # our type name, or a family that needs the type code
    info: dict = field(default_factory=dict)

    # Body statements (text terminated by the /*!*/; delimiter).
    def statements(self) -> list[str]:
        out: list[str] = []
        buf: list[str] = []
        for line in self.lines:
            if line == "BINLOG '" or line.startswith("BINLOG '"):
                buf = [line]
                continue
            if line.endswith(DELIM):
                head = line[: -len(DELIM)]
                if head:
                    buf.append(head)
                    out.append("\n".join(buf))
                else:
                    # A lone delimiter line: the statement text was printed on
                    # the lines before it, followed by a newline.
                    out.append("\n".join(buf))
                buf = []
            elif line.startswith("#"):
                continue
            else:
                buf.append(line)
        return out

    def query_text(self) -> str | None:
        """The statement of a QUERY event (the last one printed; mariadb-binlog
        puts SET TIMESTAMP / session variables / ``use`` before it)."""
        stmts = [s for s in self.statements() if not s.startswith("BINLOG '")]
        return stmts[-1] if stmts else None


# Rows event families: name used by mariadb-binlog -> our name by type code.
ROWS_TYPES = {
    23: "WRITE_ROWS_V1",
    24: "UPDATE_ROWS_V1",
    25: "DELETE_ROWS_V1",
    30: "WRITE_ROWS",
    31: "UPDATE_ROWS",
    32: "DELETE_ROWS",
    166: "WRITE_ROWS_COMPRESSED_V1",
    167: "UPDATE_ROWS_COMPRESSED_V1",
    168: "DELETE_ROWS_COMPRESSED_V1",
    169: "WRITE_ROWS_COMPRESSED",
    170: "UPDATE_ROWS_COMPRESSED",
    171: "DELETE_ROWS_COMPRESSED",
}
ROWS_CODES = {
    "Write": (23, 30, 166, 169),
    "Update": (24, 31, 167, 170),
    "Delete": (25, 32, 168, 171),
}

# Our type names by code, for the event types mariadb-binlog can print.
TYPE_NAMES = {
    2: "QUERY",
    3: "STOP",
    4: "ROTATE",
    5: "INTVAR",
    13: "RAND",
    14: "USER_VAR",
    15: "FORMAT_DESCRIPTION",
    16: "XID",
    19: "TABLE_MAP",
    26: "INCIDENT",
    38: "XA_PREPARE",
    160: "ANNOTATE_ROWS",
    161: "BINLOG_CHECKPOINT",
    162: "MARIADB_GTID",
    163: "GTID_LIST",
    164: "START_ENCRYPTION",
    165: "QUERY_COMPRESSED",
    **ROWS_TYPES,
}


def _classify(ev: ReferenceEvent) -> None:
    h = ev.header
    info = ev.info
    if m := START_RE.match(h):
        ev.family = "FORMAT_DESCRIPTION"
        info["binlog_version"] = int(m.group(1))
        info["server_version"] = m.group(2)
        info["in_use"] = any("binlog is either in use" in l for l in ev.lines)
    elif m := QUERY_HDR_RE.match(h):
        ev.family = "QUERY" if m.group(1) == "Query" else "QUERY_COMPRESSED"
        info["thread_id"] = int(m.group(2))
        info["exec_time"] = int(m.group(3))
        info["error_code"] = int(m.group(4))
        info["query"] = ev.query_text()
    elif h.startswith("Gtid list ["):
        ev.family = "GTID_LIST"
        # The list may continue over "# ..." lines: "[0-1-12,\n# 7-1-1]".
        text = h[len("Gtid list ") :]
        for line in ev.lines:
            if "]" in text:
                break
            if line.startswith("#"):
                text += line[1:].strip()
        inner = text.strip()[1:-1]
        info["gtids"] = [g.strip() for g in inner.split(",") if g.strip()]
    elif h.startswith("Binlog checkpoint "):
        ev.family = "BINLOG_CHECKPOINT"
        info["file"] = h[len("Binlog checkpoint ") :].strip()
    elif m := GTID_RE.match(h):
        ev.family = "MARIADB_GTID"
        info["gtid"] = f"{m.group(1)}-{m.group(2)}-{m.group(3)}"
        info["domain_id"] = int(m.group(1))
        info["server_id"] = int(m.group(2))
        info["seq_no"] = int(m.group(3))
        info["flag_words"] = m.group(4).split()
        stmts = [s.strip() for s in ev.statements()]
        opens = any(
            s in ("BEGIN", "START TRANSACTION") or s.startswith("XA START") for s in stmts
        )
        info["standalone"] = not opens
    elif h.startswith("Annotate_rows:"):
        ev.family = "ANNOTATE_ROWS"
        parts = [l[len("#Q> ") :] if l.startswith("#Q> ") else l[3:] for l in ev.lines if l.startswith("#Q>")]
        info["query"] = "\n".join(parts)
    elif m := TABLE_MAP_RE.match(h):
        ev.family = "TABLE_MAP"
        info["database"] = m.group(1)
        info["table"] = m.group(2)
        info["table_id"] = int(m.group(3))
    elif m := ROWS_RE.match(h):
        ev.family = "ROWS:" + m.group(1)
        info["compressed"] = bool(m.group(2) or m.group(4))
        info["table_id"] = int(m.group(6))
        info["flag_words"] = (m.group(7) or "").split()
        for line in ev.lines:
            if line.startswith("# Number of rows: "):
                info["rows"] = int(line.split(":")[1])
    elif m := re.match(r"^Xid = (\d+)$", h):
        ev.family = "XID"
        info["xid"] = int(m.group(1))
    elif h.startswith("XID = "):
        ev.family = "XA_PREPARE"
        info["xid"] = h[len("XID = ") :].strip()
    elif m := ROTATE_RE.match(h):
        ev.family = "ROTATE"
        info["next_file"] = m.group(1)
        info["position"] = int(m.group(2))
    elif h.strip() == "Stop":
        ev.family = "STOP"
    elif h.strip() == "Intvar":
        ev.family = "INTVAR"
    elif h.strip() == "Rand":
        ev.family = "RAND"
    elif h.strip() == "User_var":
        ev.family = "USER_VAR"
    elif h.startswith("Incident"):
        ev.family = "INCIDENT"
    elif h.startswith("Start_encryption"):
        ev.family = "START_ENCRYPTION"
    else:
        ev.family = "UNKNOWN:" + h


def parse_mariadb_binlog(text: str) -> list[ReferenceEvent]:
    """Parse the output of ``mariadb-binlog FILE`` (default base64 output).

    Quirks handled:
    * the "# at N" lines of an ANNOTATE_ROWS event and of the TABLE_MAP after
      it are printed together before both headers, so positions are queued
      and each header takes the oldest one;
    * a GTID list may be printed over several "#" lines;
    * ANNOTATE_ROWS text is printed as "#Q> " lines;
    * query text is followed by a line holding only the delimiter;
    * mariadb-binlog's own prologue/epilogue (DELIMITER, ROLLBACK, SET) and
      the "in use" warning after the format description are not events.
    """
    events: list[ReferenceEvent] = []
    pending: list[int] = []
    current: ReferenceEvent | None = None
    for line in text.split("\n"):
        if m := AT_RE.match(line):
            pending.append(int(m.group(1)))
            current = None
            continue
        if m := HEADER_RE.match(line):
            if not pending:
                raise ValueError(f"event header without a preceding '# at': {line!r}")
            current = ReferenceEvent(
                pos=pending.pop(0),
                end_pos=int(m.group(4)),
                server_id=int(m.group(3)),
                crc32=m.group(5),
                header=m.group(6),
            )
            events.append(current)
            continue
        if line.startswith("DELIMITER ") or line == "# End of log file":
            current = None
            continue
        if current is not None:
            current.lines.append(line)
    if pending:
        raise ValueError(f"'# at' positions without an event header: {pending}")
    for ev in events:
        _classify(ev)
    return events


def run_mariadb_binlog(path: Path) -> list[ReferenceEvent]:
    proc = subprocess.run(
        [mariadb_binlog_path(), str(path)], capture_output=True, timeout=300
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"mariadb-binlog {path} failed: {proc.stderr.decode(errors='replace')}"
        )
    return parse_mariadb_binlog(proc.stdout.decode("utf-8"))


def raw_frames(path: Path) -> list[tuple[int, int, int, int]]:
    """(pos, type_code, size, next_pos) of each event, read from the v4 headers.

    Deliberately minimal and independent of binlog_codec: it checks the test's
    reading of mariadb-binlog output and gives the type code that
    mariadb-binlog does not print (v1 vs v2 rows events)."""
    data = Path(path).read_bytes()
    if data[:4] != b"\xfebin":
        raise ValueError(f"{path}: not a binlog (magic {data[:4]!r})")
    frames = []
    pos = 4
    while pos + 19 <= len(data):
        type_code = data[pos + 4]
        size = int.from_bytes(data[pos + 9 : pos + 13], "little")
        next_pos = int.from_bytes(data[pos + 13 : pos + 17], "little")
        if size < 19 or pos + size > len(data):
            raise ValueError(f"{path}: bad event size {size} at {pos}")
        frames.append((pos, type_code, size, next_pos))
        pos += size
    return frames


def checkpoint_names(path: Path) -> list[str]:
    """File names of the BINLOG_CHECKPOINT events in ``path``, in order."""
    data = Path(path).read_bytes()
    names = []
    for pos, type_code, size, _ in raw_frames(path):
        if type_code == 161:
            n = int.from_bytes(data[pos + 19 : pos + 23], "little")
            names.append(data[pos + 23 : pos + 23 + n].decode())
    return names


def raw_gtid_list(path: Path, pos: int) -> list[str]:
    """GTIDs of the GTID_LIST event at ``pos`` in stored order (mariadb-binlog
    prints them sorted by domain)."""
    with open(path, "rb") as fh:
        fh.seek(pos)
        header = fh.read(19)
        size = int.from_bytes(header[9:13], "little")
        body = fh.read(size - 19)
    count = int.from_bytes(body[0:4], "little") & 0x0FFFFFFF
    out = []
    for i in range(count):
        off = 4 + 16 * i
        domain = int.from_bytes(body[off : off + 4], "little")
        server = int.from_bytes(body[off + 4 : off + 8], "little")
        seq = int.from_bytes(body[off + 8 : off + 16], "little")
        out.append(f"{domain}-{server}-{seq}")
    return out


def expected_type(ev: ReferenceEvent, type_code: int) -> str:
    """Our type name for a mariadb-binlog event, given the raw type code.

    mariadb-binlog prints "Write_rows" for both v1 and v2 rows events, so the
    code decides those; for every other event the name printed by
    mariadb-binlog must agree with the code."""
    if ev.family.startswith("ROWS:"):
        verb = ev.family.split(":", 1)[1]
        if type_code not in ROWS_CODES[verb]:
            return f"<{ev.header!r} printed for type code {type_code}>"
        name = ROWS_TYPES[type_code]
        if ("COMPRESSED" in name) != ev.info.get("compressed", False):
            return f"<{ev.header!r} printed for type code {type_code}>"
        return name
    if TYPE_NAMES.get(type_code) != ev.family:
        return f"<{ev.header!r} printed for type code {type_code}>"
    return ev.family


# -- binlog files of a workload, and their table metadata ------------------------

# A ``# Columns(`` block and the ``# Primary Key(`` line after it, if any.
METADATA_BLOCK = re.compile(rb"^# Columns\(.*?\)\n(?:# Primary Key\([^\n]*\)\n)?", re.M | re.S)


def binlog_of(server: MariaDBServer, statements: str) -> Path:
    """Run ``statements`` in a binlog file of their own; return that file."""
    server.flush_logs()
    own = server.current_binlog()
    server.sql(statements)
    server.flush_logs()
    return own


def reference_metadata_blocks(binlog: Path) -> list[bytes]:
    """The column blocks ``mariadb-binlog --print-table-metadata`` prints for ``binlog``."""
    proc = subprocess.run(
        [mariadb_binlog_path(), "--print-table-metadata", str(binlog)], capture_output=True, check=True, timeout=120
    )
    return METADATA_BLOCK.findall(proc.stdout)


def our_metadata_blocks(binlog: Path) -> list[bytes]:
    """The column blocks ``binlog-codec metadata`` prints for ``binlog``."""
    proc = subprocess.run(
        [sys.executable, "-m", "binlog_codec.cli", "metadata", str(binlog)],
        capture_output=True,
        check=True,
        cwd=REPO_ROOT,
        env=dict(os.environ, PYTHONIOENCODING="utf-8"),
        timeout=120,
    )
    return METADATA_BLOCK.findall(proc.stdout)
