# binlake: reproducible set-up, tests, demo and benchmark.
#
#   make demo    set up, then ingest the bundled sample binlogs with the Airflow DAG
#   make test    set up, then run the test suite
#   make airflow set up, then start a private Airflow with the binlake view
#   make bench   set up, then run the benchmark (writes a JSON result file);
#                BENCH_ARGS holds options for benchmarks/run.py
#   make lock    re-resolve requirements.in into requirements.lock
#   make clean   remove the virtual environment and caches

SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON     ?= python3
VENV       := .venv
VPY        := $(VENV)/bin/python
LOCK       := requirements.lock
UV_VERSION := 0.13.9

# The environment is keyed on the exact content of the lock file; the editable
# install of binlake itself on pyproject.toml, setup.py, the set of top-level
# packages and the codec's sources (the build compiles some of them). A second
# run installs nothing.
LOCK_SHA     := $(shell sha256sum $(LOCK) 2>/dev/null | cut -d' ' -f1)
PROJECT_SHA  := $(shell { cat pyproject.toml setup.py binlog_codec/*.py binlog_codec/*.pxd binlog_codec/*.pyx; ls -d */__init__.py; } 2>/dev/null | sha256sum | cut -d' ' -f1)
LOCK_STAMP   := $(VENV)/.stamp-$(LOCK_SHA)
DEV_STAMP    := $(VENV)/.stamp-editable-$(PROJECT_SHA)
ARCHIVE_STAMP := $(VENV)/.stamp-class-archive-$(LOCK_SHA)

# Run apt-get through sudo when not root.
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

# Spark runs locally on the loopback interface.
export SPARK_LOCAL_IP ?= 127.0.0.1
export PYSPARK_PYTHON ?= $(CURDIR)/$(VPY)
export PYSPARK_DRIVER_PYTHON ?= $(CURDIR)/$(VPY)

SAMPLES = $(sort $(wildcard samples/*.0*))

.PHONY: help setup java chromium mariadb test demo bench airflow lock clean

help:
	@echo "make demo    ingest the sample binlogs from a local S3 server with the Airflow DAG"
	@echo "make test    run the test suite"
	@echo "make airflow start a private Airflow (UI with the binlake view)"
	@echo "make bench   run the benchmark; options of benchmarks/run.py in BENCH_ARGS, e.g."
	@echo "             make bench BENCH_ARGS='--only \"binlog-codec rows\" --repeat 1'"
	@echo "make fuzz    fuzz every decoder, FUZZ_SECONDS (600) each"
	@echo "make lock    re-resolve requirements.in into requirements.lock"
	@echo "make clean   remove .venv and caches"

# ---------------------------------------------------------------- set-up

setup: java $(DEV_STAMP) $(ARCHIVE_STAMP)

# PySpark needs a Java 17+ runtime.
java:
	@if command -v java >/dev/null 2>&1 && \
	    java -version 2>&1 | grep -Eq 'version "(1[7-9]|[2-9][0-9])'; then \
	  :; \
	else \
	  echo "==> installing a Java runtime (default-jre-headless)"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends default-jre-headless; \
	fi

# Headless Chromium renders the binlake view in the browser tests.
chromium:
	@if command -v chromium >/dev/null 2>&1; then \
	  :; \
	else \
	  echo "==> installing Chromium (chromium)"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium; \
	fi

mariadb:
	bash infra/mariadb.sh install

# Build the virtual environment from the lock file. A changed lock file gives
# a new stamp name, and the environment is rebuilt from scratch so that it
# holds exactly what the lock lists. Modules are compiled to bytecode at install
# time, so that no process (a Spark worker, an Airflow task) compiles them at
# import, even where bytecode is never written (PYTHONDONTWRITEBYTECODE). uv
# keeps no cache: pyspark is built from its source at every install, and a
# cache would keep each build (half a gigabyte) in ~/.cache/uv for good.
$(LOCK_STAMP):
	@test -n "$(LOCK_SHA)" || { echo "$(LOCK) is missing"; exit 1; }
	@echo "==> building $(VENV) from $(LOCK)"
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	@start=$$(date +%s); \
	if $(VPY) -m pip install -q "uv==$(UV_VERSION)" && \
	   $(VENV)/bin/uv pip install --no-cache --compile-bytecode --python $(VPY) -r $(LOCK); then \
	  :; \
	else \
	  echo "==> uv unavailable or failed, installing with pip"; \
	  $(VPY) -m pip install --compile -r $(LOCK) || exit 1; \
	fi; \
	echo "==> dependencies installed in $$(( $$(date +%s) - start ))s"
	touch $@

$(DEV_STAMP): $(LOCK_STAMP)
	$(VPY) -m pip install -q -e . --no-deps
	rm -f $(VENV)/.stamp-editable-*
	touch $@

# A class-data-sharing archive of the Spark driver's JVM (spark_jobs/class_archive.py):
# every Spark session then starts about two seconds sooner. Built once per lock file
# (the Spark jars); without it, sessions start as before.
$(ARCHIVE_STAMP): | $(DEV_STAMP)
	@echo "==> archiving the Spark driver's classes"
	@rm -f $(VENV)/.stamp-class-archive-*
	@$(VPY) -m spark_jobs.class_archive > $(VENV)/class-archive.log 2>&1 || \
	  echo "==> no class archive (see $(VENV)/class-archive.log): Spark sessions start without it"
	@touch $@

# ---------------------------------------------------------------- products

test: setup mariadb chromium
	$(VPY) -m pytest tests/

# One real run of the binlog_ingest DAG on the samples (S3 server, Airflow, Spark,
# Great Expectations), then a summary of the warehouse (state in .infra/demo).
demo: setup
	bash infra/demo.sh

# Options of benchmarks/run.py, passed through the shell as written (quote names
# with spaces): make bench BENCH_ARGS='--only "binlog-codec rows" --repeat 1'
BENCH_ARGS ?=
bench: setup mariadb
	$(VPY) benchmarks/run.py $(BENCH_ARGS)

# A private Airflow in the background (state in .infra/airflow); stop it with
# infra/airflow.sh stop .infra/airflow.
AIRFLOW_PORT ?= 8080
airflow: setup
	bash infra/airflow.sh start .infra/airflow $(AIRFLOW_PORT)
	@echo "binlake view: http://127.0.0.1:$(AIRFLOW_PORT)/plugin/binlake"
	@echo "stop with:    infra/airflow.sh stop .infra/airflow"

# ---------------------------------------------------------------- maintenance

# Re-resolve the stack for Python 3.11 on Linux x86_64.
lock: $(LOCK_STAMP)
	$(VENV)/bin/uv pip compile --python-version 3.11 \
	  --python-platform x86_64-unknown-linux-gnu \
	  --custom-compile-command "make lock" \
	  requirements.in -o $(LOCK)

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build dist *.egg-info \
	  spark-warehouse metastore_db
	find . -name __pycache__ -type d -prune -exec rm -rf {} +

# Coverage-guided fuzzing (atheris) of every decoder, one target after the other, FUZZ_SECONDS
# each; summary in fuzz/work/summary.json, findings in fuzz/work/<target>/findings/.
FUZZ_SECONDS ?= 600
.PHONY: fuzz
fuzz: $(DEV_STAMP)
	nice -n 19 $(VPY) -m fuzz.run --all --seconds $(FUZZ_SECONDS)
