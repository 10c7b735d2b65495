#!/usr/bin/env bash
# Regenerate the bundled sample binlogs samples/mariadb-bin.000001 and
# samples/mariadb-bin.000002 from a short scripted workload on a private
# MariaDB server (see samples/README.md for what they contain).
#
#   infra/make_sample.sh [OUTPUT_DIR]      default: samples/
#
# The files differ from run to run only in timestamps, thread ids, xids and
# checksums; the statements, rows and positions are the same.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
out=${1:-$repo/samples}

workdir=$(mktemp -d "${TMPDIR:-/tmp}/binlake-sample.XXXXXX")
cleanup() {
    "$here/mariadb.sh" stop "$workdir" >/dev/null 2>&1 || true
    rm -rf "$workdir"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null || echo 33307)
"$here/mariadb.sh" start "$workdir" "$port" >/dev/null

sql() {
    mariadb --no-defaults --protocol=socket --socket="$workdir/mariadb.sock" -uroot \
        --batch --raw --default-character-set=utf8mb4 "$@"
}

# First file: schema, a few transactions, one DDL.
sql <<'SQL'
CREATE DATABASE shop;
USE shop;
CREATE TABLE customers (
  id INT NOT NULL PRIMARY KEY,
  name VARCHAR(64) NOT NULL,
  email VARCHAR(128) NULL,
  country CHAR(2) NOT NULL,
  created_at DATETIME NOT NULL
) ENGINE=InnoDB;
CREATE TABLE orders (
  id BIGINT NOT NULL PRIMARY KEY,
  customer_id INT NOT NULL,
  status ENUM('new','paid','shipped','cancelled') NOT NULL DEFAULT 'new',
  amount DECIMAL(10,2) NOT NULL,
  note TEXT NULL,
  ordered_at DATETIME NOT NULL
) ENGINE=InnoDB;

BEGIN;
INSERT INTO customers VALUES
  (1, 'Ada Lovelace', 'ada@example.com', 'GB', NOW()),
  (2, 'Grace Hopper', 'grace@example.com', 'US', NOW()),
  (3, 'Émilie du Châtelet', NULL, 'FR', NOW());
INSERT INTO orders VALUES
  (101, 1, 'new', 19.99, NULL, NOW()),
  (102, 2, 'new', 250.00, 'gift wrap', NOW()),
  (103, 1, 'new', 5.50, NULL, NOW());
COMMIT;

BEGIN;
UPDATE orders SET status = 'paid' WHERE id IN (101, 102);
INSERT INTO orders VALUES (104, 3, 'new', 42.00, 'express', NOW());
COMMIT;

ALTER TABLE customers ADD COLUMN loyalty_points INT NOT NULL DEFAULT 0;

BEGIN;
UPDATE customers SET loyalty_points = 120 WHERE id = 1;
DELETE FROM orders WHERE id = 103;
COMMIT;
SQL

sql -e "FLUSH BINARY LOGS"

# Second file: more changes after the rotation.
sql <<'SQL'
USE shop;
BEGIN;
UPDATE orders SET status = 'shipped' WHERE id = 101;
UPDATE orders SET status = 'cancelled', note = 'customer request' WHERE id = 104;
INSERT INTO customers (id, name, email, country, created_at) VALUES
  (4, 'Alan Turing', 'alan@example.com', 'GB', NOW());
COMMIT;

BEGIN;
INSERT INTO orders VALUES
  (105, 4, 'new', 12.00, NULL, NOW()),
  (106, 4, 'paid', 99.90, NULL, NOW());
DELETE FROM customers WHERE id = 2 AND NOT EXISTS (SELECT 1 FROM orders WHERE customer_id = 2 AND status <> 'paid');
COMMIT;
SQL

# A clean shutdown closes the second file with a STOP event.
"$here/mariadb.sh" stop "$workdir" >/dev/null

mkdir -p "$out"
for f in mariadb-bin.000001 mariadb-bin.000002; do
    cp "$workdir/binlog/$f" "$out/$f"
    chmod 644 "$out/$f"
done
ls -l "$out"/mariadb-bin.00000[12]
