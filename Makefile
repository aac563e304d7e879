# rayconformance: `make conformance` runs the suite on a local test bed with KubeRay; `make test` runs the
# project's own tests. Both set up everything they need on a fresh machine (root, Debian, Go, Python 3.11).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PYTEST_ARGS ?=
CONFORMANCE_ARGS ?=
# parallel test workers for the suite (pytest-xdist): auto = as many as the cores carry by what the tests cost in the
# newest earlier report (cores + 1 without one), at most one per 4 GiB of memory (src/rayconformance/run/workers.py);
# JOBS=N sets it
JOBS ?= auto

.PHONY: conformance conformance-core matrix setup-base tools-base tools-test test test-breaks unit verify-published release setup deps tools venv down clean kind-deps kind-tools kind-images engine-up engine-down test-kind

# kind runs where no Docker engine answers use the project's engine and the offline images (kind-images); where one
# answers (a laptop, a CI runner) the public images are pulled and the kind CLI is built on first use, so nothing more
# (asked only when kind is named: clusters/kind/docker.py needs no virtualenv)
KIND_OFFLINE = $(if $(shell $(PYTHON) clusters/kind/docker.py),,kind-images)

# builds only the base the run needs (tools-base: none of the local bed's components for kind on a Docker engine that
# answers); the selected profile's operator and the Gateway implementation are built on first use (with --provider
# kind or --cluster kind-*: the offline kind images too where no Docker engine answers, cached;
# clusters/kind/README.md); a kind run picked by default (a Docker engine answers) builds no offline image either
conformance: setup-base $(if $(findstring kind,$(CONFORMANCE_ARGS)),$(KIND_OFFLINE))
	$(PY) -m pytest conformance -n $(JOBS) $(CONFORMANCE_ARGS)

# the quick gate for an operator release's CI: Core features only
conformance-core: setup-base $(if $(findstring kind,$(CONFORMANCE_ARGS)),$(KIND_OFFLINE))
	$(PY) -m pytest conformance -n $(JOBS) --core-only $(CONFORMANCE_ARGS)

# the suite over operator profiles x Ray versions, one run after another (on the local provider: one bed for all),
# and a matrix report (reports/matrix-<time>/matrix-report.yaml and matrix.html); e.g.
# MATRIX_PROFILES=kuberay-v1.4.2,kuberay-v1.6.2 MATRIX_RAY=all (or 2.60.0,2.46.0; default: each profile's first)
# MATRIX_ARGS=--core-only MATRIX_PROVIDER=kind MATRIX_CLUSTER=kind-gpu
MATRIX_PROFILES ?=
MATRIX_RAY ?=
MATRIX_ARGS ?=
MATRIX_PROVIDER ?=
MATRIX_CLUSTER ?=
matrix: setup-base $(if $(findstring kind,$(MATRIX_PROVIDER) $(MATRIX_CLUSTER)),$(KIND_OFFLINE))
	MATRIX_PROFILES="$(MATRIX_PROFILES)" MATRIX_RAY="$(MATRIX_RAY)" MATRIX_ARGS="$(MATRIX_ARGS)" \
	  MATRIX_PROVIDER="$(MATRIX_PROVIDER)" MATRIX_CLUSTER="$(MATRIX_CLUSTER)" JOBS=$(JOBS) \
	  $(PY) -m rayconformance.matrix run

test: deps tools-test venv
	$(PY) -m pytest tests -m "not breaks" $(PYTEST_ARGS)

# each conformance test run against a deliberately broken operator, sample or cluster must fail (slow)
test-breaks: setup
	$(PY) -m pytest tests/breaks -v $(PYTEST_ARGS)

unit: venv
	$(PY) -m pytest tests/unit $(PYTEST_ARGS)

# every run under reports/published/ verifies against the suite that made it (reports/README.md)
verify-published: venv
	$(PY) -m rayconformance verify --published

# cut a suite release from a clean checkout: CHANGELOG.md's Unreleased notes become its section, pyproject.toml takes
# the version, both committed and tagged vX.Y.Z (pushing is yours); e.g. make release VERSION=0.2.0
VERSION ?=
release: venv
	$(PY) -m rayconformance release "$(VERSION)"

setup: deps tools venv
setup-base: deps tools-base

# the local bed's Debian packages (clusters/local/install-deps.sh); where make asks setup_needs which base a run
# builds (BED_ASK, below), a run that is not on the local bed (kind on a Docker engine, an existing cluster) installs
# only what the project venv needs (python3-venv where its Python lacks venv): a CI runner's user then needs no sudo for packages kind never uses
deps:
	if [ -n "$(BED_ASK)" ]; then { $(PYTHON) -c "import ensurepip, venv" 2>/dev/null || \
	  bash clusters/local/install-deps.sh python3-venv; } && \
	  $(MAKE) --no-print-directory venv && \
	  bed=$$($(PY) -m rayconformance.run.setup_needs bed-packages $(CONFORMANCE_ARGS)) || exit 2; \
	  [ -z "$$bed" ] || bash clusters/local/install-deps.sh; \
	else bash clusters/local/install-deps.sh; fi

tools:
	bash clusters/local/build-tools.sh
	bash clusters/local/ray-venv.sh

# the bed's base (Go builds: each component's modules downloaded while the one before compiles) and, beside it, the
# project venv, then the Ray virtualenv the run uses (its --ray-version, else its profile's first; none on kind or an
# existing cluster) and the modules of what the run builds when it brings the cluster up (the StorageClass
# provisioner, its KubeRay releases, Traefik when it tests a Gateway feature): src/rayconformance/run/setup_needs.py.
# Another Ray version a run asks for is made when it brings the cluster up, before its first test.
# Which base: `setup_needs bed-builds` (only the Gateway API CRDs for kind on a Docker engine that answers or an
# existing cluster), asked once the project venv is there; a run that can only be on the local bed (no Docker engine
# answers, CONFORMANCE_ARGS names no provider, cluster or options file) starts BED_BASE beside the venv without asking.
# Other goals than a run's (matrix, kind-images, test-kind) build the whole base.
BED_BASE = etcd kubernetes coredns gatewayapi
RUN_GOALS = conformance conformance-core setup-base tools-base
BED_ASK = $(if $(filter-out $(RUN_GOALS),$(or $(MAKECMDGOALS),conformance)),,$(if $(or $(filter --provider% \
  --cluster% --conformance-options-file%,$(CONFORMANCE_ARGS)),$(shell $(PYTHON) clusters/kind/docker.py)),ask))
tools-base:
	bed="$(BED_BASE)"; if [ -n "$(BED_ASK)" ]; then $(MAKE) --no-print-directory venv && \
	  bed=$$($(PY) -m rayconformance.run.setup_needs bed-builds $(CONFORMANCE_ARGS)) || exit 2; fi; \
	{ t=$$(date +%s); $(MAKE) --no-print-directory venv && echo "venv: project venv ready in $$(( $$(date +%s) - t ))s" && \
	  rays=$$($(PY) -m rayconformance.run.setup_needs ray-venvs $(CONFORMANCE_ARGS)) && \
	  builds=$$($(PY) -m rayconformance.run.setup_needs bring-up-builds $(CONFORMANCE_ARGS)) && \
	  { [ -z "$$rays" ] || bash clusters/local/ray-venv.sh $$rays; } && \
	  { [ -z "$$builds" ] || bash clusters/local/build-tools.sh $$(for b in $$builds; do echo fetch:$$b; done); }; } & \
	side=$$!; rc=0; [ -z "$$bed" ] || bash clusters/local/build-tools.sh $$bed || rc=$$?; \
	wait $$side || rc=1; exit $$rc

# what the project's own tests use: the bed's base, the StorageClass provisioner and the KubeRay releases the
# integration tests install (tests/integration/test_operator_profiles.py); other releases build on first use
TEST_KUBERAY ?= v1.6.2 v1.6.1 v1.5.1
tools-test:
	bash clusters/local/build-tools.sh etcd kubernetes coredns gatewayapi localpath actionlint $(addprefix kuberay@,$(TEST_KUBERAY))
	bash clusters/local/ray-venv.sh

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[test]'
	touch $@

down: venv
	$(PY) -m rayconformance.clusters.local down
	bash clusters/kind/engine.sh down

# kind provider (clusters/kind/README.md): the project's own Docker engine where none runs, and kind's tools
kind-deps:
	bash clusters/kind/install-deps.sh

kind-tools: kind-deps
	bash clusters/kind/build-kind-tools.sh

# the offline node image and application images (cached by version): the bed's base, the KubeRay release of the
# selected profile (--operator-profile kuberay-<v> in CONFORMANCE_ARGS, else the default), Traefik and the node's
# local-path provisioner (kind's default StorageClass); an image for every other KubeRay release already built too
# (a profile built from a source tree, e.g. kuberay-v1.7.0, has its image made from the tree's build on first use)
KIND_KUBERAY ?= $(or $(shell echo " $(CONFORMANCE_ARGS) " | sed -n 's/.* --operator-profile[= ]kuberay-\(v[0-9.]*\) .*/\1/p'),v1.6.1)
KIND_KUBERAY_BUILD = $(if $(shell grep -ls '^ *source:.*repository:' profiles/kuberay-$(KIND_KUBERAY).yaml),,kuberay@$(KIND_KUBERAY))
# and the releases its operator-upgrade test starts from (operatorUpgradeFrom), whose images bring-up loads
KIND_UPGRADE_FROM = $(foreach v,$(shell sed -n 's/^operatorUpgradeFrom: *\[\(.*\)\].*/\1/p' profiles/kuberay-$(KIND_KUBERAY).yaml 2>/dev/null | tr ',' ' ' | sed 's/kuberay-//g'),kuberay@$(v))
kind-images: kind-tools tools-base venv
	bash clusters/local/build-tools.sh $(KIND_KUBERAY_BUILD) $(KIND_UPGRADE_FROM) traefik localpath
	bash clusters/kind/build-node-image.sh
	bash clusters/kind/build-app-images.sh

# kind smoke test: kind-cpu up (the project's engine where no Docker runs), KubeRay, one RayCluster provisioned
test-kind: setup-base kind-images
	RAYCONF_KIND_SMOKE=1 $(PY) -m pytest tests/integration/test_kind_smoke.py -v $(PYTEST_ARGS)

engine-up: kind-deps
	bash clusters/kind/engine.sh up

engine-down:
	bash clusters/kind/engine.sh down

clean: down
	rm -rf reports/*/ $(VENV)
