# tabletdb developer commands. `make run` and `make test` do all set-up on a fresh clone.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Apache cqlsh and cassandra-driver install the same Python packages (`cqlsh`, `cassandra`) as
# scylla-cqlsh and scylla-driver, so they live in a venv of their own.
CASSANDRA_VENV := .venv-cassandra
PYTEST_ARGS ?=

.PHONY: install bytecode run test lint unit bench soak clean format

install: $(VENV)/.installed $(CASSANDRA_VENV)/.installed bytecode

# Compile the project's modules ahead of time, as an installed wheel would be. Without it, an
# environment with PYTHONDONTWRITEBYTECODE set (or a read-only tree) recompiles ~200 modules in
# every node process it starts: ~0.4 s of CPU per start, half of a node's start-up. Up-to-date
# files are skipped, so this costs ~0.1 s when nothing changed.
bytecode: $(VENV)/.installed
	$(BIN)/python -m compileall -q -j 0 tabletdb bench tests > /dev/null

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check -e '.[test,spark]'
	# Build the CQL parser's LALR tables once (cached under ~/.cache/tabletdb) so nodes start fast.
	$(BIN)/python -c "from tabletdb.cql.parser import parse_statement; parse_statement('SELECT 1 FROM t')"
	touch $@

$(CASSANDRA_VENV)/.installed:
	$(PYTHON) -m venv $(CASSANDRA_VENV)
	$(CASSANDRA_VENV)/bin/pip install -q --disable-pip-version-check cassandra-driver==3.30.1 cqlsh==6.2.2
	touch $@

run: install
	$(BIN)/tabletdb cluster up --nodes 3 --workdir work/cluster

# lint-imports checks the layer order between packages; tools/check_structure.py what it does
# not: import cycles between modules, package sizes and the data plane's imports of protocol.
lint: install
	$(BIN)/ruff check tabletdb tests bench tools
	$(BIN)/ruff format --check tabletdb tests bench tools
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python tools/check_structure.py tabletdb

format: install
	$(BIN)/ruff format tabletdb tests bench tools
	$(BIN)/ruff check --fix tabletdb tests bench tools

test: install lint
	$(BIN)/pytest -q -rfEs -n 2 -m "not slow" $(PYTEST_ARGS)

soak: install
	$(BIN)/tabletdb sim raft --seeds 5000
	$(BIN)/tabletdb sim topology --seeds 500
	$(BIN)/tabletdb sim resize --seeds 200 --length-ms 15000
	$(BIN)/pytest -q -m slow $(PYTEST_ARGS)

bench: install
	$(BIN)/python -m bench.run_all

clean:
	rm -rf $(VENV) $(CASSANDRA_VENV) work .pytest_cache .mypy_cache .ruff_cache .hypothesis
