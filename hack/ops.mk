# Operations targets, included by the Makefile: build the image and run the manager in a cluster.

IMG ?= math-controller:dev
CONTAINER_TOOL ?= docker
KUBECTL ?= kubectl
# Components of deploy/optional/ to add, e.g. DEPLOY_COMPONENTS=optional/prometheus.
DEPLOY_COMPONENTS ?=

.PHONY: docker-build deploy undeploy deploy-render

docker-build: ## Build the manager image IMG (default math-controller:dev; needs a container engine), then load it with `minikube image load` or `kind load docker-image`.
	$(CONTAINER_TOOL) build -t $(IMG) .

deploy-render: ## Print deploy/ as `make deploy` applies it (kustomize, image IMG, DEPLOY_COMPONENTS).
	@KUBECTL=$(KUBECTL) hack/deploy-render.sh "$(IMG)" $(DEPLOY_COMPONENTS)

deploy: install ## Install the CRDs and run the manager in namespace math-system with image IMG (deploy/ through kustomize; DEPLOY_COMPONENTS=optional/prometheus adds a ServiceMonitor).
	KUBECTL=$(KUBECTL) hack/deploy-render.sh "$(IMG)" $(DEPLOY_COMPONENTS) | $(KUBECTL) apply -f -

undeploy: ## Remove the manager, its RBAC and namespace (the CRDs and your objects stay; `make uninstall` removes those).
	KUBECTL=$(KUBECTL) hack/deploy-render.sh "$(IMG)" $(DEPLOY_COMPONENTS) | $(KUBECTL) delete --ignore-not-found -f -
