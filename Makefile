# medgate: `make demo` sets up and asks one question on the embedded model; `make test` runs the tests.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.medgate-installed
# Every dependency of the dev extra, pinned with hashes; `make lock` rewrites it.
LOCK := requirements-dev.txt

.PHONY: setup demo test lint bench lock clean

setup: $(STAMP)

# The environment comes from the lock, so every machine installs the same releases; medgate
# itself is installed after it, without resolving anything again.
# llama-cpp-python builds from source (about 9 minutes on 2 cores); pip caches the wheel after.
# It is built for the vector extensions the CPU lists but never for AMX (scripts/llama-cmake-args
# says why: a native build crashes on virtual machines that list AMX without enabling it).
LLAMA_CMAKE_ARGS ?= $(shell scripts/llama-cmake-args)
$(STAMP): pyproject.toml $(LOCK)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=$$(nproc) \
		$(BIN)/pip install --quiet --require-hashes -r $(LOCK)
	$(BIN)/pip install --quiet --no-deps -e .
	touch $(STAMP)

demo: setup
	$(BIN)/medgate ask "Does aspirin reduce the risk of colorectal adenoma recurrence?" \
		--context-file examples/aspirin_abstract.txt

test: setup
	$(BIN)/pytest

lint: setup
	$(BIN)/ruff check src tests scripts
	$(BIN)/ruff format --check src tests scripts
	$(BIN)/mypy

bench: setup
	$(BIN)/python scripts/bench_hrs.py --items 20

# Resolve the dev extra again after a change to pyproject.toml, keeping the other pins; add
# LOCK_ARGS=--upgrade to move every pin to the newest release the bounds allow.
lock: setup
	CUSTOM_COMPILE_COMMAND="make lock" $(BIN)/pip-compile --quiet --extra dev --generate-hashes \
		--allow-unsafe --strip-extras --no-emit-index-url --no-emit-find-links $(LOCK_ARGS) \
		--output-file $(LOCK) pyproject.toml

clean:
	rm -rf $(VENV) build *.egg-info
