"""binlake: MySQL and MariaDB binary logs into a Parquet warehouse."""
