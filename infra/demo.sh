#!/usr/bin/env bash
# make demo: one real run of the binlog_ingest Airflow DAG on the bundled samples.
#
#   1. starts a private S3-compatible server (infra/s3_server.sh), creates the
#      bucket binlake-demo and uploads samples/mariadb-bin.* under binlogs/;
#   2. points the Airflow connection binlake_s3 at it (AIRFLOW_CONN_BINLAKE_S3);
#   3. runs the DAG once with `airflow dags test` (Airflow home .infra/demo/airflow
#      with SQLite, warehouse s3://binlake-demo/warehouse in the same server, its
#      state folder and SQLite Iceberg catalog under .infra/demo/state, Spark
#      local[2]);
#   4. prints the warehouse's Iceberg tables, read from the S3 server through
#      DuckDB's Iceberg reader, and where the Data Docs are; then stops the S3
#      server (also when something failed).
#
# The server keeps its buckets in memory: each run starts from an empty server
# and an empty warehouse (the state folder of the last run is cleared), so running
# it again is safe and prints the same tables. Everything lives under .infra/demo/.
# S3_PORT picks the server's port (default: a free one).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
VPY="$REPO/.venv/bin/python"
DEMO="$REPO/.infra/demo"
BUCKET=binlake-demo
PREFIX=binlogs
WAREHOUSE="s3://$BUCKET/warehouse"
export BINLAKE_STATE_DIR="$DEMO/state"
S3_DIR="$DEMO/s3"
LOG="$DEMO/dag_test.log"

export AIRFLOW_HOME="$DEMO/airflow"
export AIRFLOW__CORE__DAGS_FOLDER="$REPO/dags"
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW__DATABASE__SQL_ALCHEMY_CONN="sqlite:///$AIRFLOW_HOME/airflow.db"
export BINLAKE_STAGING_DIR="$DEMO/staging"
export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}"
export PYSPARK_PYTHON="${PYSPARK_PYTHON:-$VPY}"

stop_s3() { PYTHON="$VPY" bash infra/s3_server.sh stop "$S3_DIR"; }

start_s3() {
  local port="${S3_PORT:-$("$VPY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
  PYTHON="$VPY" bash infra/s3_server.sh start "$S3_DIR" "$port" | sed -n 's/^endpoint=//p'
}

upload_samples() {  # upload_samples ENDPOINT: the bucket with the sample binlogs
  "$VPY" - "$1" "$BUCKET" "$PREFIX" samples/mariadb-bin.0* <<'EOF'
import sys
from pathlib import Path

import boto3
from botocore.config import Config

endpoint, bucket, prefix, *files = sys.argv[1:]
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="demo", aws_secret_access_key="demo",
                  region_name="us-east-1", config=Config(s3={"addressing_style": "path"}))
s3.create_bucket(Bucket=bucket)
for path in map(Path, files):
    s3.upload_file(str(path), bucket, f"{prefix}/{path.name}")
    print(f"    s3://{bucket}/{prefix}/{path.name} ({path.stat().st_size} bytes)")
EOF
}

connection() {  # connection ENDPOINT: the binlake_s3 connection as Airflow reads it from the environment
  printf '{"conn_type": "aws", "login": "demo", "password": "demo", "extra": {"endpoint_url": "%s", "region_name": "us-east-1"}}' "$1"
}

summary() {  # summary ENDPOINT
  AWS_ENDPOINT_URL="$1" AWS_ACCESS_KEY_ID=demo AWS_SECRET_ACCESS_KEY=demo AWS_REGION=us-east-1 \
    "$VPY" - "$WAREHOUSE" <<'EOF'
import json
import sys

from warehouse import catalog, storage

warehouse = storage.state_folder(sys.argv[1])
print(f"Iceberg catalog: {catalog.uri_of(warehouse)}; tables of the warehouse {sys.argv[1]}")
# every table through the catalog: DuckDB's Iceberg reader (and httpfs), their extensions loaded by path
iceberg = catalog.duckdb_connection(warehouse)


def scan(table) -> str:
    return f"iceberg_scan('{catalog.metadata_location(warehouse, table)}')"


runs = iceberg.sql(f"select run_id, finished, rows, quality from {scan('runs')} order by finished").fetchall()
for run_id, finished, rows, quality in runs:
    outcome = json.loads(quality) if quality else None
    state = "not validated" if outcome is None else ("passed" if outcome["success"] else "FAILED")
    print(f"run {run_id} ({finished:%Y-%m-%d %H:%M:%S} UTC): {rows} row changes, quality {state}")
    if outcome and outcome.get("data_docs"):
        print(f"  Data Docs: {warehouse / outcome['data_docs']}")
from spark_jobs.streams import position_text

checkpoint = json.loads((warehouse / "metadata" / "checkpoint.json").read_text())
for stream, position in checkpoint.items():
    print(f"stream {stream}: {position_text(position)}")

print("\nrow changes per table (<db>.<table>__changes):")
for table in catalog.tables_of_database(warehouse, "shop"):
    changes = catalog.changes_table("shop", table)
    ops = iceberg.sql(f"select _op, count(*) from {scan(changes)} group by _op order by _op").fetchall()
    print(f"  {'.'.join(changes)}: " + ", ".join(f"{count} {op}" for op, count in ops))

print("\nshop.orders (the latest row per key):")
print(iceberg.sql(f"select id, customer_id, status, amount, note from {scan(('shop', 'orders'))} order by id limit 5"))
EOF
}

rm -rf "$BINLAKE_STATE_DIR"  # the last run's warehouse was in the last server's memory
mkdir -p "$DEMO" "$AIRFLOW_HOME"
echo "==> starting a private S3 server"
ENDPOINT="$(start_s3)"
trap stop_s3 EXIT
[ -n "$ENDPOINT" ] || { echo "demo: the S3 server did not start (see $S3_DIR/s3_server.log)" >&2; exit 1; }
echo "    $ENDPOINT"
echo "==> uploading the sample binlogs"
upload_samples "$ENDPOINT"
export AIRFLOW_CONN_BINLAKE_S3="$(connection "$ENDPOINT")"

echo "==> preparing Airflow in $AIRFLOW_HOME (SQLite)"
"$VPY" -m airflow db migrate >"$DEMO/db_migrate.log" 2>&1 || { tail -n 30 "$DEMO/db_migrate.log" >&2; exit 1; }

CONF="{\"source_uri\": \"s3://$BUCKET/$PREFIX\", \"warehouse_uri\": \"$WAREHOUSE\", \"spark_master\": \"local[2]\"}"
echo "==> airflow dags test binlog_ingest -c '$CONF' (log: $LOG)"
if ! "$VPY" -m airflow dags test binlog_ingest -c "$CONF" >"$LOG" 2>&1; then
  echo "demo: the DAG run failed; end of $LOG:" >&2
  tail -n 40 "$LOG" >&2
  exit 1
fi
# the tasks' own log lines, without time stamps and logger names
grep -E '\[airflow_tasks\.ingest\]' "$LOG" |
  sed -E 's/^[^ ]+ \[[a-z]+ *\] /    /; s/ *\[airflow_tasks\.ingest\].*$//'

echo
summary "$ENDPOINT"
