# math-controller: the kubebuilder hands-on, in Rust.
# `make install && make run` against the cluster of your current kubeconfig (minikube, kind).

CARGO ?= cargo
KUBECTL ?= kubectl

# Recipes run in bash with pipefail, as a kubebuilder project's: a pipeline fails when any of its
# commands does (`render | kubectl apply` with a render that failed would apply nothing and
# exit 0).
SHELL := bash
.SHELLFLAGS := -o pipefail -c

.PHONY: help install uninstall run samples unsamples crds test test-peer fmt lint bench testserver
.PHONY: workshop-crds workshop-install workshop-run workshop-check workshop-verify

help: ## Show the targets.
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-18s %s\n", $$1, $$2}'

install: ## Install the CRDs into the cluster of the current kubeconfig.
	$(KUBECTL) apply -f crds/

uninstall: ## Remove the CRDs (and with them every Number, Tuple and Fermat).
	$(KUBECTL) delete --ignore-not-found -f crds/

run: ## Run the manager on this machine against the current kubeconfig.
	$(CARGO) run --locked --

samples: ## Apply the valid samples.
	$(KUBECTL) apply -f samples/

unsamples: ## Delete the samples (their children go with them).
	$(KUBECTL) delete --ignore-not-found -f samples/

crds: ## Regenerate crds/ from the Rust types in src/api.rs.
	$(CARGO) run --locked --quiet -- crds --dir crds

test: ## Run every test: unit, controllers against the test API server, the workshop with kubectl.
	$(CARGO) test --workspace --locked

test-peer: ## kube-rs 5.0.0's own cluster tests against a fresh test API server (PEER_REAL=<kubeconfig>: against that cluster instead).
	hack/test-peer.sh

fmt: ## Format the code.
	$(CARGO) fmt --all

lint: ## Check formatting and clippy, as CI does.
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

SIZES ?= 1000 10000
bench: ## Converge time vs the floor, writes, heal, memory, outage (CLUSTER=1: the current kubeconfig's cluster; SIZES="1000 10000"; RESTART="cmd": how to restart its kube-apiserver).
	$(CARGO) build --release --locked
	$(if $(RESTART),BENCH_RESTART='$(RESTART)') $(CARGO) run --release --locked --example bench -- $(if $(CLUSTER),--cluster) $(SIZES)

.PHONY: install-plugin
install-plugin: ## Install `kubectl math` (the kubectl-math plugin) into ~/.cargo/bin, which must be on the PATH.
	$(CARGO) install --locked --path crates/kubectl-math

testserver: ## Start the in-memory test API server (the workshop profile, as make workshop-prepare built it); it prints a KUBECONFIG to use with kubectl.
	$(CARGO) run --locked --profile $(WORKSHOP_PROFILE) -p test-apiserver

# The learner track (workshop/): see workshop/README.md.
STAGE ?= 1
# Everything the workshop builds uses one profile (Cargo.toml's [profile.workshop]: no debug
# information in the dependencies), so that a laptop holds one build of them, not two.
WORKSHOP_PROFILE ?= workshop
# The tools' language: WORKSHOP_LANG=ja (or en) whatever the locale says (WSL and the
# devcontainer start with LANG=C.UTF-8, which answers in English); empty: the locale's.
WORKSHOP_LANG ?=
LANG_FLAG = $(if $(WORKSHOP_LANG), --lang $(WORKSHOP_LANG))
DOCTOR = sh workshop/doctor.sh$(LANG_FLAG)
WORKSHOP = $(CARGO) run --locked --profile $(WORKSHOP_PROFILE) -p math-workshop --$(LANG_FLAG)
# Watch and skip: a crate of their own, so that they work while the exercises do not compile.
TOOLS = $(CARGO) run --locked --profile $(WORKSHOP_PROFILE) --quiet -p math-workshop-tools --$(LANG_FLAG)
# Who you are, for the namespace of CLUSTER=1 checks (default: user-host); FORCE=1 replaces
# CRDs that objects in other namespaces use, and installs into a cluster that is none of kind's,
# minikube's, the test server's or a room's (a cluster of your own only). In a room on a shared
# cluster, `export PARTICIPANT=alice` once: install, run, check and watch then use the
# organiser's workshop/room/alice.kubeconfig when it is there, unless KUBECONFIG is set: an
# explicit KUBECONFIG always wins (the drill "the shared cluster dies" exports the local one).
PARTICIPANT ?=
ROOM_FILE = workshop/room/$(PARTICIPANT).kubeconfig
ROOM_KUBECONFIG = $(if $(PARTICIPANT),$(if $(KUBECONFIG),,$(wildcard $(ROOM_FILE))))
AS_PARTICIPANT = $(if $(ROOM_KUBECONFIG),KUBECONFIG=$(abspath $(ROOM_KUBECONFIG)) )
# A room's clone (workshop/room/ holds files) where PARTICIPANT names none of them: say which
# file was looked for, once, rather than use another cluster in silence.
ROOM_FILES = $(wildcard workshop/room/*.kubeconfig)
ifneq ($(and $(PARTICIPANT),$(ROOM_FILES)),)
ifeq ($(KUBECONFIG)$(wildcard $(ROOM_FILE)),)
$(info PARTICIPANT=$(PARTICIPANT): there is no $(ROOM_FILE) (workshop/room/ holds $(notdir $(ROOM_FILES))); using your current kubeconfig)
endif
endif
# The organiser's room: who takes part (make workshop-room PARTICIPANTS="alice bob"); the
# address the participants' laptops reach the API server at, when the kubeconfig's is this
# machine's own (ROOM_SERVER=https://<address>:<port>); how long their tokens last
# (TOKEN_HOURS=36: the evening before and the day).
PARTICIPANTS ?=
ROOM_SERVER ?=
TOKEN_HOURS ?=
ROOM_SET_UP_FLAGS = $(if $(ROOM_SERVER),--server $(ROOM_SERVER)) $(if $(TOKEN_HOURS),--token-hours $(TOKEN_HOURS))
FORCE ?=
ROOM_FLAGS = $(if $(PARTICIPANT),--participant $(PARTICIPANT)) $(if $(FORCE),--force)
# Where workshop-run and workshop-install work (default: the namespace the kubeconfig's context
# names, else default, as kubectl); their first line says which.
NAMESPACE ?=
WHERE_FLAGS = $(if $(PARTICIPANT), --participant $(PARTICIPANT))$(if $(NAMESPACE), --namespace $(NAMESPACE))

.PHONY: workshop-room workshop-room-down workshop-room-status workshop-prepare workshop-skip workshop-hint workshop-watch workshop-snippets workshop-guide-outputs workshop-doctor

workshop-doctor: ## Workshop: is every tool the build needs here (Rust new enough, a C compiler, make, git, kubectl)? One line each that is missing, with its install command (WORKSHOP_LANG=ja: every workshop tool in Japanese).
	@$(DOCTOR)

workshop-prepare: PREPARE_STARTED := $(shell date +%s)
workshop-prepare: ## Workshop: fetch and build everything the day needs, once, with network (then none is needed); ends with its time and disk.
	@$(DOCTOR)
	$(CARGO) fetch --locked
	$(CARGO) build --locked --profile $(WORKSHOP_PROFILE) -p math-workshop
	$(CARGO) build --locked --profile $(WORKSHOP_PROFILE) -p math-workshop-tools
	$(CARGO) build --locked --profile $(WORKSHOP_PROFILE) -p test-apiserver
	$(CARGO) build --locked --profile $(WORKSHOP_PROFILE)
	$(CARGO) install --locked --offline --profile $(WORKSHOP_PROFILE) --path crates/kubectl-math
	$(WORKSHOP) crds > /dev/null
	@$(DOCTOR) --footprint $(PREPARE_STARTED)

workshop-crds: ## Workshop: write the CRDs generated from your types (workshop/src/exercises) to workshop/crds/.
	$(WORKSHOP) crds --dir workshop/crds

workshop-install: ## Workshop: write your CRDs and install them into the current cluster (refused over CRDs others use; FORCE=1 on your own cluster; NAMESPACE=, PARTICIPANT= as for workshop-run).
	$(AS_PARTICIPANT)$(WORKSHOP) install$(if $(FORCE), --force)$(WHERE_FLAGS)

workshop-run: ## Workshop: run your controllers of stages 1..STAGE in your namespace: NAMESPACE=, else the context's, else default, as kubectl (ARGS=--test-server, ARGS=--all-namespaces).
	$(AS_PARTICIPANT)$(WORKSHOP) run --stage $(STAGE)$(WHERE_FLAGS) $(ARGS)

workshop-check: ## Workshop: check stage STAGE on a fresh test API server (CLUSTER=1: on the current cluster, in a namespace of your own).
	$(AS_PARTICIPANT)$(WORKSHOP) check $(STAGE) $(if $(CLUSTER),--cluster $(ROOM_FLAGS))

workshop-watch: ## Workshop: rebuild and check stage STAGE on every save of an exercise, then the next stage (CLUSTER=1 as above).
	$(AS_PARTICIPANT)$(TOOLS) watch --stage $(STAGE) $(if $(CLUSTER),--cluster $(if $(PARTICIPANT),--participant $(PARTICIPANT)))

workshop-room: ## Workshop (organiser, admin of the current cluster): the CRDs, and per participant of PARTICIPANTS="alice bob" a namespace, a ServiceAccount limited to it, and workshop/room/<name>.kubeconfig (ROOM_SERVER=https://<address>:<port>, TOKEN_HOURS=36).
	$(WORKSHOP) room $(ROOM_SET_UP_FLAGS) $(PARTICIPANTS)

workshop-room-down: ## Workshop (organiser): take the room down: its namespaces, ServiceAccounts (their tokens end), RBAC, CRDs and every object with them, workshop/room/'s files.
	$(WORKSHOP) room-down

workshop-room-status: ## Workshop (organiser): a live table of the room: per participant the stage reached, whether their runner is up, their last Warning Event (Ctrl-C ends it).
	$(WORKSHOP) room-status

workshop-skip: ## Workshop: catch up: the reference solution of stage STAGE replaces yours (kept as <file>.rs.mine).
	$(TOOLS) skip $(STAGE)

workshop-hint: ## Workshop: the next hint of stage STAGE's first unfinished exercise: the way, then the complete code (ALL=1: every hint of the stage).
	$(TOOLS) hint $(STAGE) $(if $(ALL),--all)

workshop-snippets: ## Workshop (for the project): regenerate workshop/tests/snippets/generated.rs from the guides' ```rust blocks; a test compiles it.
	$(TOOLS) snippets

workshop-guide-outputs: ## Workshop (for the project): write what the tools print now into the guides' marked output blocks (both languages).
	GUIDE_OUTPUTS=write $(CARGO) test --locked -p math-workshop --test guide -- --test-threads=1

workshop-verify: ## Workshop: every stage's check passes on the solutions, and fails (without crashing) on the starter.
	@for stage in 1 2 3; do \
	  $(WORKSHOP) check $$stage --solution || { echo "stage $$stage: the reference solution fails its check"; exit 1; }; \
	  $(WORKSHOP) check $$stage --timeout 3; rc=$$?; \
	  [ $$rc -eq 1 ] || { echo "stage $$stage: the starter should fail its check with exit 1, not $$rc"; exit 1; }; \
	done; echo "workshop-verify: 3 stages pass on the solutions and fail on the starter"

-include hack/ops.mk
