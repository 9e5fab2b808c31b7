# Operations targets, included by the Makefile: build the image and run the manager in a cluster,
# as a kubebuilder project's Makefile has them.

IMG ?= math-controller:dev
CONTAINER_TOOL ?= docker
KUBECTL ?= kubectl
# Components of deploy/optional/ to add, e.g. DEPLOY_COMPONENTS=optional/prometheus.
DEPLOY_COMPONENTS ?=
# The platforms docker-buildx builds for (distroless/cc has images for these and more).
PLATFORMS ?= linux/amd64,linux/arm64
# Render deploy/ for IMG: `hack/deploy-render.sh [--without-crds] IMAGE COMPONENTS`. KUBECTL may
# be a command with arguments (`KUBECTL="kubectl --context kind-kind"`).
RENDER = KUBECTL="$(KUBECTL)" hack/deploy-render.sh

.PHONY: docker-build docker-push docker-buildx deploy undeploy deploy-render build-installer

docker-build: ## Build the manager image IMG (default math-controller:dev; needs a container engine), then load it with `minikube image load` or `kind load docker-image`.
	$(CONTAINER_TOOL) build -t $(IMG) .

docker-push: ## Push the manager image IMG to its registry (needs a container engine and a login to the registry).
	$(CONTAINER_TOOL) push $(IMG)

docker-buildx: ## Build the image IMG for PLATFORMS (linux/amd64,linux/arm64) with buildx and push it (needs a container engine with buildx, and QEMU binfmt for the other platforms).
	$(CONTAINER_TOOL) buildx create --name math-controller-builder --use
	status=0; $(CONTAINER_TOOL) buildx build --push --platform=$(PLATFORMS) --tag $(IMG) . || status=$$?; \
	$(CONTAINER_TOOL) buildx rm math-controller-builder; exit $$status

deploy-render: ## Print deploy/ as `make deploy` applies it (kustomize, image IMG, DEPLOY_COMPONENTS).
	@$(RENDER) "$(IMG)" $(DEPLOY_COMPONENTS)

build-installer: ## Write dist/install.yaml: the CRDs and the manager with image IMG in one file, for `kubectl apply -f dist/install.yaml` (DEPLOY_COMPONENTS as for deploy).
	mkdir -p dist
	$(RENDER) "$(IMG)" $(DEPLOY_COMPONENTS) > dist/install.yaml

deploy: ## Install the CRDs and run the manager in namespace math-system with image IMG (deploy/ through kustomize; DEPLOY_COMPONENTS=optional/prometheus adds a ServiceMonitor).
	$(RENDER) "$(IMG)" $(DEPLOY_COMPONENTS) | $(KUBECTL) apply -f -

undeploy: ## Remove the manager, its RBAC and namespace (the CRDs and your objects stay; `make uninstall` removes those).
	$(RENDER) --without-crds "$(IMG)" $(DEPLOY_COMPONENTS) | $(KUBECTL) delete --ignore-not-found -f -
