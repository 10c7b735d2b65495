"""binlake_downstream_example: a DAG that runs when ``binlog_ingest`` has changed warehouse tables.

An example to copy: it is scheduled on the asset alias ``binlake_tables``, so
it runs after every ``binlog_ingest`` run that published row changes (a run
with nothing new does not start it), and its one task logs which tables
changed, by how many row changes, in which run: the asset events that
triggered it (their extra: ``database``, ``table``, ``rows``, ``run_id``,
``warehouse``). Like any new DAG it is paused until you unpause it.

To run after one table only, schedule on that table's Asset, named by its URI
``binlake://localhost/<warehouse folder>/<database>/<table>`` (the warehouse
folder absolute, as ``binlog_ingest`` resolves it; database and table
percent-encoded)::

    from airflow.sdk import Asset

    ORDERS = "binlake://localhost/data/warehouse/shop/orders"

    @dag(schedule=Asset(name=ORDERS, uri=ORDERS), ...)

``schedule=[Asset(...), Asset(...)]`` waits for both tables,
``Asset(...) | Asset(...)`` for either. The work itself would read the
changed table through the warehouse's Iceberg catalog (``<db>.<table>`` or
``<db>.<table>__changes``; the event's ``run_id`` names the snapshot of the run),
not by listing its folder.
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone

from airflow.sdk import AssetAlias, dag, get_current_context, task

TABLES = AssetAlias("binlake_tables")  # what binlog_ingest's publish task emits its table events through

log = logging.getLogger(__name__)


@dag(
    dag_id="binlake_downstream_example",
    schedule=TABLES,
    start_date=datetime(2026, 1, 1, tzinfo=timezone.utc),
    catchup=False,
    tags=["binlake", "example"],
    description="Example: runs after each binlog_ingest run that changed tables (asset alias binlake_tables) "
    "and logs which",
    doc_md=__doc__,
)
def binlake_downstream_example():
    @task
    def tables_changed() -> list[str]:
        """Logs one line per changed table: its row changes, the run that published them, the warehouse."""
        from airflow_tasks import ingest

        events = get_current_context()["triggering_asset_events"].get(TABLES) or []
        lines = ingest.table_event_lines(events) or ["no table events: this run was not started by binlog_ingest"]
        for line in lines:
            log.info("%s", line)
        return lines

    tables_changed()


binlake_downstream_example()
