# stacksync.k8s — developer entry points.
#
#   make test     full suite: build + install the collection, ansible-test sanity, ansible-lint, ruff,
#                 Galaxy import + docs lint + changelog lint, the docs site (make docs), ansible-test integration, unit + integration
#                 tests (ansible-core 2.19 / Python 3.11), and layers on ansible-core 2.16 and 2.21
#   make test-matrix  sanity + stack module / sync role integration on ansible-core 2.16 ... 2.21
#   make docs     the collection's HTML docs site (antsibull-docs) in build/docs/build/html
#   make demo     sync an example git repo into a local Kubernetes API simulator, then prune
#                 (its own .venv-demo: ansible-core + requirements.txt only)
#   make test-real  conformance + integration suites against a real kube-apiserver
#                 (started with ../shared/kube/up where that exists, or STACKSYNC_TEST_KUBECONFIG)
#   make bench    benchmark against kubernetes.core and kubectl (N=1000 by default)
#   make bench-scale  issue 32, opt-in and long (an hour or more): bench-10k, bench-fleet, bench-stacks in turn
#   make coverage line coverage of module_utils and plugin_utils by the unit tests alone, per module
#                 (fails when one is under 80%)

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
VPY := $(CURDIR)/$(VENV)/bin/python
VBIN := $(CURDIR)/$(VENV)/bin
VERSION := $(shell sed -n 's/^version: *//p' galaxy.yml)
TARBALL := build/stacksync-k8s-$(VERSION).tar.gz
# Throw-away collections path outside the git work tree (ansible-test lists files with git when it
# finds a work tree, and build/ is ignored there).
TEST_ROOT ?= $(or $(TMPDIR),/tmp)/stacksync-k8s-$(shell printf %s "$(CURDIR)" | cksum | cut -d' ' -f1)
COLLECTIONS := $(TEST_ROOT)/collections
INSTALLED := $(COLLECTIONS)/ansible_collections/stacksync/k8s
PYTEST_ARGS ?= -n auto --dist loadfile
N ?= 1000

export ANSIBLE_NOCOLOR := 1
export ANSIBLE_COLLECTIONS_SCAN_SYS_PATH := false

.PHONY: help venv build install sanity lint ruff unit pytest test test-cores test-matrix demo test-real bench bench-10k bench-fleet bench-stacks bench-scale clean publish-check docs changelog integration coverage

help:
	@sed -n '2,14p' Makefile | sed 's/^# \{0,1\}//'

$(VENV)/.installed: tests/requirements.txt requirements.txt
	@echo "==> Installing the development toolchain (tests/requirements.txt) into $(VENV): a few minutes the first time"
	@test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -r tests/requirements.txt
	@touch $@

venv: $(VENV)/.installed

# The extra docs (docs/docsite/rst, from docs/*.md) are generated here so the tarball always has them.
build: venv
	@mkdir -p build
	$(VPY) -m tests.tools.docsite
	$(VBIN)/ansible-galaxy collection build --force --output-path build .

install: build
	rm -rf $(COLLECTIONS)
	$(VBIN)/ansible-galaxy collection install --force -p $(COLLECTIONS) $(TARBALL)
	@bash tests/tools/check_tarball.sh $(TARBALL)

# ansible-test bootstraps pip into its per-test virtual environments with a script it downloads
# from ansible's CI file server; install our offline stand-in as its cached copy.
define bootstrap_ansible_test
	pipver=$$($(1) -c 'import re, ansible_test, pathlib; p = pathlib.Path(ansible_test.__file__).parent / "_internal/python_requirements.py"; print(re.search(r"pip=.([0-9.]+).", p.read_text()).group(1))'); \
	mkdir -p $$HOME/.ansible/test/cache; \
	cp tests/tools/get_pip_offline.py $$HOME/.ansible/test/cache/get_pip_$${pipver//./_}.py
endef

sanity: install
	@$(call bootstrap_ansible_test,$(VPY))
	cd $(INSTALLED) && $(VBIN)/ansible-test sanity --local --python 3.11 --color no

lint: install
	ANSIBLE_COLLECTIONS_PATH=$(COLLECTIONS) $(VBIN)/ansible-lint --offline --profile production

ruff: venv
	$(VBIN)/ruff check .

# ansible-core / Python layers besides the main one (2.19 / 3.11 in .venv): VERSION:PYTHON:CHECKS,
# CHECKS from tests/tools/core_layer.sh (sanity, unit, integration = ansible-test targets of the
# stack module and sync role, pytest = their pytest integration suites). Each layer has its own
# virtualenv under $(TEST_ROOT)/venvs and is skipped (with a message) where its Python is missing.
# `make test` runs the oldest and the newest supported ansible-core; `make test-matrix` all of them.
# Python 3.13 is not in the matrix yet: its ssl module rejects the simulator's test CA (no keyUsage
# extension, VERIFY_X509_STRICT), so every TLS request to tests/kubesim fails there.
CORE_LAYERS ?= 2.16.19:3.11:sanity,integration 2.21.5:3.12:sanity,unit,integration
CORE_MATRIX ?= 2.16.19:3.11 2.17.14:3.12 2.18.19:3.12 2.19.14:3.12 2.20.10:3.12 2.21.5:3.12
MATRIX_CHECKS ?= sanity,integration,pytest

define run_layers
	@for layer in $(1); do \
	  IFS=: read -r core py checks <<< "$$layer"; \
	  bash tests/tools/core_layer.sh "$$core" "$$py" $(COLLECTIONS) $(TEST_ROOT) $${checks//,/ }; \
	done
endef

test-cores: install
	$(call run_layers,$(CORE_LAYERS))

test-matrix: install
	$(call run_layers,$(foreach l,$(CORE_MATRIX),$(l):$(MATRIX_CHECKS)))

pytest: install
	STACKSYNC_COLLECTIONS_PATH=$(COLLECTIONS) $(VPY) -m pytest -p no:cacheprovider --durations=15 $(PYTEST_ARGS) tests

# What Galaxy / Automation Hub and docs.ansible.com check before a collection is published: the
# Galaxy import of the built tarball (tests/tools/galaxy_import.sh), the docs lint of the installed
# collection (plugins, roles, extra docs, links) and the changelog fragments lint.
publish-check: install
	$(VPY) -m tests.tools.docsite --check
	@bash tests/tools/galaxy_import.sh $(TARBALL) $(VBIN)
	cd $(INSTALLED) && PATH=$(VBIN):$$PATH ANSIBLE_COLLECTIONS_PATH=$(COLLECTIONS) $(VBIN)/antsibull-docs lint-collection-docs --plugin-docs .
	PATH=$(VBIN):$$PATH $(VBIN)/antsibull-changelog lint

# The collection's HTML docs site (as on docs.ansible.com) in build/docs/build/html: every plugin,
# module and role, and the guides of docs/ as extra docs. Offline: links to ansible-core's docs
# resolve through a local inventory (tests/tools/docs_inventory.py) instead of downloading one.
DOCS_DIR := build/docs
docs: install
	rm -rf $(DOCS_DIR) && mkdir -p -m 0755 $(DOCS_DIR)
	PATH=$(VBIN):$$PATH ANSIBLE_COLLECTIONS_PATH=$(COLLECTIONS) $(VBIN)/antsibull-docs sphinx-init --use-current \
	  --fail-on-error --dest-dir $(DOCS_DIR) stacksync.k8s
	cd $(DOCS_DIR) && mkdir -p -m 0755 rst && PATH=$(VBIN):$$PATH ANSIBLE_COLLECTIONS_PATH=$(COLLECTIONS) \
	  $(VBIN)/antsibull-docs --config-file antsibull-docs.cfg collection --cleanup everything --fail-on-error \
	  --use-current --dest-dir rst stacksync.k8s
	$(VPY) -m tests.tools.docs_inventory $(DOCS_DIR)/rst $(DOCS_DIR)/ansible.inv
	echo "intersphinx_mapping = {'ansible_devel': ('https://docs.ansible.com/projects/ansible/devel/', '../ansible.inv')}" \
	  >> $(DOCS_DIR)/conf.py
	cd $(DOCS_DIR) && $(VBIN)/sphinx-build -M html rst build -c . -W --keep-going -q
	@echo "docs site: $(DOCS_DIR)/build/html/index.html"

# After adding fragments for a release: bump `version` in galaxy.yml, then `make changelog`.
changelog: venv
	PATH=$(VBIN):$$PATH $(VBIN)/antsibull-changelog release --version $(VERSION)

# ansible-test integration targets (tests/integration/targets: stack, stack_info, manifests, sync,
# each against the simulator started by setup_kubesim). ansible-test needs the collection under
# ansible_collections/<ns>/<name> and the targets are not in the tarball, so the checkout's files
# (git's list: tracked and untracked, not ignored) are copied to a staging tree.
# `make integration` (all), `make integration TARGETS="stack sync"`.
STAGE := $(TEST_ROOT)/stage/ansible_collections/stacksync/k8s
TARGETS ?=
ANSIBLE_TEST_PYTHON ?= 3.11

define stage_collection
	rm -rf $(TEST_ROOT)/stage && mkdir -p $(STAGE)
	git ls-files -z --cached --others --exclude-standard | \
	  (while IFS= read -r -d '' f; do [ -e "$$f" ] && printf '%s\0' "$$f"; done) | \
	  tar --null -T - -cf - | tar -xf - -C $(STAGE)
endef

integration: venv
	$(stage_collection)
	@$(call bootstrap_ansible_test,$(VPY))
	cd $(STAGE) && PATH=$(VBIN):$$PATH $(VBIN)/ansible-test integration --local --python $(ANSIBLE_TEST_PYTHON) --color no $(TARGETS)

# Order matters: the last thing printed is the test runner's summary line.
test: install sanity lint ruff publish-check docs integration test-cores pytest

test-real: install
	@bash tests/tools/test_real.sh "$(COLLECTIONS)"

# `make demo` installs only what the demo runs: ansible-core (the version `make test` pins) and the
# collection's runtime requirements.txt, in a virtualenv of its own (no development toolchain). With
# pip >= 22.3 next to $(PYTHON), the venv is made without pip and the outer pip installs into it
# (seconds faster than bootstrapping pip into it).
DEMO_VENV := .venv-demo
DEMO_CORE := $(shell grep -E '^ansible-core==' tests/requirements.txt)

# Each line says how long the demo has run (STACKSYNC_DEMO_STARTED: when `make demo` started), installing included.
DEMO_SAY = printf '\n==> [%2ds] %s\n' "$$(( $$(date +%s) - $${STACKSYNC_DEMO_STARTED:-$$(date +%s)} ))"

$(DEMO_VENV)/.installed: requirements.txt tests/requirements.txt
	@$(DEMO_SAY) "Creating $(DEMO_VENV) with $(DEMO_CORE) and requirements.txt ($$(grep -Eo '^[A-Za-z]+' requirements.txt | paste -sd, -)), nothing else (once; a minute or so)"
	@rm -rf $(DEMO_VENV)
	@# pip's own lines, one per package it collects and one when it installs them: progress without the noise
	@if $(PYTHON) -m pip install --help 2>/dev/null | grep -q -- '--python '; then \
	  $(PYTHON) -m venv --without-pip $(DEMO_VENV) && \
	  $(PYTHON) -m pip --python $(DEMO_VENV)/bin/python install --no-compile --disable-pip-version-check --progress-bar off "$(DEMO_CORE)" -r requirements.txt; \
	else \
	  $(PYTHON) -m venv $(DEMO_VENV) && \
	  $(DEMO_VENV)/bin/python -m pip install --no-compile --disable-pip-version-check --progress-bar off "$(DEMO_CORE)" -r requirements.txt; \
	fi | sed -n -E 's/^Collecting ([^ ]+).*/    collecting \1/p; s/^Installing collected packages: (.*)/    installing \1/p'
	@$(DEMO_SAY) "Compiling what every ansible-playbook run imports"
	@# bytecode for what every ansible-playbook run imports (not the large kubernetes client, rarely imported)
	@$(DEMO_VENV)/bin/python -m compileall -q -j 0 -x '/kubernetes/' $(DEMO_VENV)/lib >/dev/null
	@touch $@

# The demo counts from when `make demo` starts, so the time it prints includes building .venv-demo.
demo:
	@export STACKSYNC_DEMO_STARTED=$$(date +%s) && $(MAKE) --no-print-directory $(DEMO_VENV)/.installed && \
	  STACKSYNC_DEMO_VENV=$(CURDIR)/$(DEMO_VENV) bash examples/demo.sh

# The peers run from the test venv: tests/requirements.txt pins the `ansible` package, which brings
# kubernetes.core. `make bench N=5000`, `make bench BENCH_ARGS="--tools stacksync,kubectl"`.
BENCH_ARGS ?=

BENCH := STACKSYNC_COLLECTIONS_PATH=$(COLLECTIONS) $(VPY) -m tests.bench --ansible-venv $(CURDIR)/$(VENV)

bench: install
	STACKSYNC_COLLECTIONS_PATH=$(COLLECTIONS) $(VPY) -m tests.tools.render_bench
	$(BENCH) --objects $(N) $(BENCH_ARGS)

# Issue 32's scenarios (docs/performance.md, "Large clusters and fleets"), opt-in: each writes its own
# results file under build/bench. bench-10k: 1,000 and 10,000 objects on fresh real kube-apiservers
# (../shared/kube/up), stacksync and the playbook against the limit and the peers, 3 rounds; bench-fleet: the sync
# playbook over 50 clusters x 1,000 objects with 10 forks (simulators, 3 of them real control planes) against
# kubernetes.core; bench-stacks: 200 stacks of 50 objects, one sources task, against one stack of the same objects.
bench-10k: install
	@mkdir -p build/bench
	$(BENCH) --real --objects 1000,10000 --repeat 3 --tools stacksync,stacksync-role,limit,k8s-list,kubectl \
	  --scenarios first,noop,check --output build/bench/10k.json $(BENCH_ARGS)

bench-fleet: install
	@mkdir -p build/bench
	$(BENCH) --objects 1000 --clusters 50 --real-clusters 3 --forks 10 --repeat 3 --lanes one-at-a-time \
	  --tools stacksync-role,stacksync,k8s-list --scenarios first,noop --no-profile --output build/bench/fleet.json $(BENCH_ARGS)

bench-stacks: install
	@mkdir -p build/bench
	$(BENCH) --real --objects 10000 --stacks 200 --repeat 3 --tools stacksync-stacks,stacksync-role,limit,k8s-list \
	  --scenarios first,noop --no-profile --output build/bench/stacks.json $(BENCH_ARGS)

bench-scale: bench-10k bench-fleet bench-stacks

# Line coverage of the engine and the controller-side helpers by the unit tests alone (tests/unit), one line
# per module: each module of plugins/module_utils and plugins/plugin_utils is tested by its own unit test file
# (tests/unit/plugins/<dir>/test_<module>.py; tests/unit/test_layout.py checks each has one), not only by the
# integration suites. Fails when a module is under COVERAGE_FLOOR percent (tests/tools/coverage_floor.py).
# About 1.5 minutes on 2 cores (the unit suite runs serially under coverage), so not part of `make test`.
COVERAGE_SOURCES := ansible_collections.stacksync.k8s.plugins.module_utils,ansible_collections.stacksync.k8s.plugins.plugin_utils
COVERAGE_FLOOR ?= 80
coverage: venv
	$(VPY) -m coverage run --data-file=build/.coverage --source=$(COVERAGE_SOURCES) -m pytest -q -p no:cacheprovider tests/unit
	$(VPY) -m coverage report --data-file=build/.coverage --sort=cover
	$(VPY) -m coverage json --data-file=build/.coverage -q -o build/coverage.json
	$(VPY) -m tests.tools.coverage_floor build/coverage.json --floor $(COVERAGE_FLOOR)

clean:
	rm -rf build $(TEST_ROOT) .pytest_cache .ruff_cache
