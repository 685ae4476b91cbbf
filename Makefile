# verisched: the two commands are `make demo` and `make test` (see README.md).
# Both set up what is missing (Coq 8.16 from Debian, a .venv with the package),
# so they work on a fresh Debian machine as root.

SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all setup coq venv proofs demo test lint clean

all: proofs

setup: coq venv

# Coq: install from Debian when root, otherwise say how.
coq:
	@if ! command -v coqc >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "== installing Coq from Debian (apt-get install coq)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq coq >/dev/null; \
	  else \
	    echo "error: coqc not found. Install Coq 8.16 (Debian: 'sudo apt-get install coq'; opam: 'opam install coq.8.16.1')." >&2; \
	    exit 1; \
	  fi; \
	fi
	@coqc --version | head -1

# The virtualenv is rebuilt when pyproject.toml changes.
venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	@test -x $(PY) || python3 -m venv $(VENV)
	@$(PY) -m pip install -q --upgrade pip >/dev/null
	@$(PY) -m pip install -q -e '.[test]'
	@touch $@

CoqMakefile: _CoqProject
	coq_makefile -f _CoqProject -o CoqMakefile

proofs: coq CoqMakefile
	@$(MAKE) --no-print-directory -f CoqMakefile -j$(JOBS)

demo: setup proofs
	@$(VENV)/bin/verisched demo

test: setup proofs
	@$(PY) -m pytest -q tests

lint: venv
	@$(VENV)/bin/ruff check src tests benchmarks

clean:
	@if [ -f CoqMakefile ]; then $(MAKE) --no-print-directory -f CoqMakefile clean; fi
	rm -f CoqMakefile CoqMakefile.conf
