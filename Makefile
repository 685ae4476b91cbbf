# verisched: the two commands are `make demo` and `make test` (see README.md).
# Both set up what is missing (Coq 8.16 from Debian, a .venv with the package),
# so they work on a fresh Debian machine as root.

SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: all setup coq openblas venv proofs demo test lint clean node katex chromium cxx

all: proofs

setup: coq openblas venv

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

# OpenBLAS for the `blas` target (the BLAS idioms `verisched search` finds, as CBLAS
# calls): Debian's libopenblas-dev when root, otherwise say how (the rest works without).
openblas:
	@if [ ! -e /usr/include/x86_64-linux-gnu/cblas.h ] && [ ! -e /usr/include/cblas.h ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "== installing OpenBLAS from Debian (apt-get install libopenblas-dev)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libopenblas-dev >/dev/null; \
	  else \
	    echo "note: OpenBLAS not found; the blas target needs it (Debian: 'sudo apt-get install libopenblas-dev')." >&2; \
	  fi; \
	fi

# The virtualenv is rebuilt when pyproject.toml changes.
venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	@test -x $(PY) || python3 -m venv $(VENV)
	@$(PY) -m pip install -q --upgrade pip >/dev/null
	@$(PY) -m pip install -q -e '.[test,ray]'
	@touch $@

# KaTeX for the HTML derivation reports (`verisched report`): the npm package, at the
# version package-lock.json pins (package.json: the minimum), installed by `npm ci` under
# build/ and its script, style sheet, woff2 fonts and licence copied into a git-ignored
# folder of the Python package (so a wheel ships them and the pages are self-contained).
# Node.js and npm come from Debian when missing, as Coq does.
KATEX_SRC := src/verisched/report/vendor
KATEX_NPM := build/katex-npm
KATEX := $(KATEX_SRC)/katex/katex.min.js

node:
	@if ! command -v npm >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "== installing Node.js and npm from Debian (apt-get install nodejs npm)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; \
	  else \
	    echo "error: npm not found (needed once, to vendor KaTeX). Debian: 'sudo apt-get install nodejs npm'." >&2; \
	    exit 1; \
	  fi; \
	fi

katex: $(KATEX)

$(KATEX): $(KATEX_SRC)/package.json $(KATEX_SRC)/package-lock.json
	@$(MAKE) --no-print-directory node
	@echo "== vendoring KaTeX (npm ci, $(KATEX_SRC)/package-lock.json)"
	@rm -rf $(KATEX_NPM) $(KATEX_SRC)/katex && mkdir -p $(KATEX_NPM) $(KATEX_SRC)/katex/fonts
	@cp $(KATEX_SRC)/package.json $(KATEX_SRC)/package-lock.json $(KATEX_NPM)/
	@cd $(KATEX_NPM) && npm ci --no-audit --no-fund --loglevel=error >/dev/null
	@d=$(KATEX_NPM)/node_modules/katex; \
	  cp $$d/dist/katex.min.js $$d/dist/katex.min.css $$d/LICENSE $$d/package.json $(KATEX_SRC)/katex/ && \
	  cp $$d/dist/fonts/*.woff2 $(KATEX_SRC)/katex/fonts/
	@touch $@

# Headless Chromium for the report's rendering test (tests/test_report_chromium.py, which
# skips, saying why, when it is missing and cannot be installed).
chromium:
	@if ! command -v chromium >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "== installing Chromium from Debian (apt-get install chromium)"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	      || echo "warning: could not install chromium; the report's browser test will be skipped" >&2; \
	  else \
	    echo "warning: chromium not found; the report's browser test will be skipped" >&2; \
	  fi; \
	fi

# A C++ compiler for the test that includes a kernel's header from C++
# (tests/test_codegen_commands.py, which skips, saying why, when there is none).
cxx:
	@if ! command -v g++ >/dev/null 2>&1 && ! command -v c++ >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "== installing g++ from Debian (apt-get install g++)"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq g++ >/dev/null) \
	      || echo "warning: could not install g++; the header's C++ test will be skipped" >&2; \
	  else \
	    echo "warning: no C++ compiler; the header's C++ test will be skipped" >&2; \
	  fi; \
	fi

CoqMakefile: _CoqProject
	coq_makefile -f _CoqProject -o CoqMakefile

# `[k/n] file` before each file Coq compiles.  n: the files out of date, from a dry run
# of CoqMakefile (-n builds nothing; a fraction of a second); k: coq_makefile's own
# "COQC file" lines numbered as they come, under -j too (a line is printed as its job
# starts; bash's `read` passes each line on at once, where mawk would hold a block
# back).  Only stdout is filtered: Coq's errors go to stderr as before, and pipefail
# keeps make's exit status.
proofs: coq CoqMakefile
	@set -o pipefail; \
	n=$$($(MAKE) --no-print-directory -f CoqMakefile -n 2>/dev/null | grep -c 'COQC ' || true); \
	$(MAKE) --no-print-directory -f CoqMakefile -j$(JOBS) | { k=0; \
	  while IFS= read -r line; do case "$$line" in \
	    *COQC\ *) k=$$((k + 1)); echo "[$$k/$$((k > n ? k : n))] $${line##*COQC }";; \
	    *) printf '%s\n' "$$line";; \
	  esac; done; }

demo: setup proofs
	@$(VENV)/bin/verisched demo

test: setup proofs katex chromium cxx
	@$(PY) -m pytest -q --durations=40 -n $(JOBS) --dist loadfile tests

lint: venv
	@$(VENV)/bin/ruff check src tests benchmarks

clean:
	@if [ -f CoqMakefile ]; then $(MAKE) --no-print-directory -f CoqMakefile clean; fi
	rm -f CoqMakefile CoqMakefile.conf
