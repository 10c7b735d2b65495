"""Airflow plugins for binlake."""
