"""What the Airflow DAGs' tasks do: plain functions that the DAG files in ``dags/`` wire together.

* :mod:`airflow_tasks.ingest` — the tasks of ``binlog_ingest``; the tables' assets;
* :mod:`airflow_tasks.bootstrap` — the tasks of ``backup_bootstrap``;
* :mod:`airflow_tasks.maintenance` — the tasks of ``binlake_maintenance``;
* :mod:`airflow_tasks.settings` — where the warehouse and the staging folder are;
* :mod:`airflow_tasks.hooks` — object stores and Spark settings from Airflow connections;
* :mod:`airflow_tasks.warehouse_status` — what the binlake view shows about a warehouse.

Only :mod:`airflow_tasks.hooks` imports Airflow at once; the others import it only when they
need it (a Variable, a connection, an asset), so a plain Python process or a test can call them.
"""
