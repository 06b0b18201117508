# Tavla: `make run` starts the platform, `make test` runs the whole suite.
# Both work on a fresh machine with only Python 3.11 and make: the first use
# creates .venv, installs the pinned dependencies and generates protobuf code.

PYTHON ?= python3
# Python writes its bytecode (__pycache__, ignored by git) even where the environment says
# not to (PYTHONDONTWRITEBYTECODE, set on some machines and images): otherwise every process
# compiles our modules again, and the suite starts Python about two hundred times (each
# pytest worker compiling every test file: 18 s of CPU against 7 s; each `tavla serve`).
unexport PYTHONDONTWRITEBYTECODE
VENV := .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed
GEN := gen
GENERATED := $(GEN)/.generated
# checkov (the chart's policy scan) lives in a venv of its own: its pins clash with ours.
CHECKOV_VENV := $(VENV)/tools/checkov
CHECKOV := $(CHECKOV_VENV)/.installed
PROTOS := $(shell find protos -name '*.proto' | sort)
SITE = $(shell $(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')

.PHONY: run test unit integration e2e bench eval lint proto clean install tools

run: $(GENERATED)
	$(VENV)/bin/tavla dev

# `make test` runs the suite on three pytest-xdist workers (the suite mostly waits on
# the processes it starts, so more workers than the two cores pay), each with its own
# PostgreSQL and brokers, a file's tests together and the end-to-end tests in two groups,
# each on one shared `tavla dev` (tests/conftest.py); `make test WORKERS=1` runs it in one
# process (docs/testing.md). `make integration` takes the same setting; `make unit`, whose
# tests keep the cores busy themselves, runs on as many workers as cores (UNIT_WORKERS).
WORKERS ?= 3
UNIT_WORKERS ?= 2
xdist = $(if $(filter-out 1,$(1)),-n $(1))
test: $(GENERATED) $(CHECKOV)
	$(PY) -m pytest -q --durations=30 $(call xdist,$(WORKERS))

unit: $(GENERATED)
	$(PY) -m pytest -q $(call xdist,$(UNIT_WORKERS)) tests/unit

integration: $(GENERATED) $(CHECKOV)
	$(PY) -m pytest -q $(call xdist,$(WORKERS)) tests/integration

e2e: $(GENERATED)
	$(PY) -m pytest -q $(call xdist,$(WORKERS)) tests/e2e

bench: $(GENERATED)
	$(PY) -m pytest -q -s tests/bench

# The detection goal (recall >= 0.9 at a false-positive rate <= 1 %) on the fixed test
# population (4-5 minutes of real play: kept out of `make test`'s budget; CI runs it after
# the suite, `.ci/run`).
eval: $(GENERATED)
	$(PY) -m pytest -q -s tests/eval

lint: $(GENERATED)
	$(VENV)/bin/ruff check services tests
	$(VENV)/bin/mypy

install: $(INSTALLED) $(CHECKOV)

tools: $(CHECKOV)

proto: $(GENERATED)

$(PY):
	$(PYTHON) -m venv $(VENV)

# setup.py builds the C fast paths (the rules library's legal plays, the analysis
# engine's money path); editing it or their sources reinstalls.
$(INSTALLED): pyproject.toml constraints.txt setup.py services/backgammon/_fastmoves.c \
		services/analysis/domain/_fastcube.c | $(PY)
	$(PY) -m pip install -q --upgrade pip==25.3
	$(PY) -m pip install -q -c constraints.txt -e '.[local,dev]'
	echo "$(CURDIR)/$(GEN)" > "$(SITE)/tavla-generated.pth"
	touch $@

$(CHECKOV): tests/tools/checkov-requirements.txt | $(PY)
	$(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/pip install -q --upgrade pip==25.3
	$(CHECKOV_VENV)/bin/pip install -q -r tests/tools/checkov-requirements.txt
	touch $@

# Generated code is never edited by hand and never committed (see .gitignore).
$(GENERATED): $(INSTALLED) $(PROTOS)
	rm -rf $(GEN) && mkdir -p $(GEN)
	$(PY) -m grpc_tools.protoc -Iprotos -I"$(SITE)" \
		--plugin=protoc-gen-mypy=$(VENV)/bin/protoc-gen-mypy \
		--plugin=protoc-gen-mypy_grpc=$(VENV)/bin/protoc-gen-mypy_grpc \
		--python_out=$(GEN) --grpc_python_out=$(GEN) \
		--mypy_out=$(GEN) --mypy_grpc_out=$(GEN) \
		--include_imports --descriptor_set_out=$(GEN)/tavla.pb \
		$(PROTOS)
	find $(GEN)/tavla -type d -exec touch {}/__init__.py \;
	$(PY) -m services.cli gateway openapi --descriptor $(GEN)/tavla.pb --out $(GEN)/openapi.json
	touch $@

clean:
	rm -rf $(GEN) .mypy_cache .pytest_cache .ruff_cache build *.egg-info
