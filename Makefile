# math-controller: the kubebuilder hands-on, in Rust.
# `make install && make run` against the cluster of your current kubeconfig (minikube, kind).

CARGO ?= cargo
KUBECTL ?= kubectl

.PHONY: help install uninstall run samples unsamples crds test fmt lint bench testserver
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
	$(CARGO) install --locked --path . --bin kubectl-math

testserver: ## Start the in-memory test API server; it prints a KUBECONFIG to use with kubectl.
	$(CARGO) run --locked -p test-apiserver

# The learner track (workshop/): see workshop/README.md.
STAGE ?= 1
WORKSHOP = $(CARGO) run --locked -p math-workshop --

workshop-crds: ## Workshop: write the CRDs generated from your types (workshop/src/exercises) to workshop/crds/.
	$(WORKSHOP) crds --dir workshop/crds

workshop-install: workshop-crds ## Workshop: install your CRDs into the current cluster (they replace the manager's).
	$(KUBECTL) apply -f workshop/crds/

workshop-run: ## Workshop: run your controllers of stages 1..STAGE against the current kubeconfig (make workshop-run STAGE=2; ARGS=--test-server for a test API server).
	$(WORKSHOP) run --stage $(STAGE) $(ARGS)

workshop-check: ## Workshop: check stage STAGE on a fresh test API server (CLUSTER=1: on the current cluster).
	$(WORKSHOP) check $(STAGE) $(if $(CLUSTER),--cluster)

workshop-verify: ## Workshop: every stage's check passes on the solutions, and fails (without crashing) on the starter.
	@for stage in 1 2 3; do \
	  $(WORKSHOP) check $$stage --solution || { echo "stage $$stage: the reference solution fails its check"; exit 1; }; \
	  $(WORKSHOP) check $$stage --timeout 3; rc=$$?; \
	  [ $$rc -eq 1 ] || { echo "stage $$stage: the starter should fail its check with exit 1, not $$rc"; exit 1; }; \
	done; echo "workshop-verify: 3 stages pass on the solutions and fail on the starter"

-include hack/ops.mk
