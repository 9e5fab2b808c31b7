# Operations targets, included by the Makefile: build the image and run the manager in a cluster.

IMG ?= math-controller:dev
CONTAINER_TOOL ?= docker
KUBECTL ?= kubectl

.PHONY: docker-build deploy undeploy

docker-build: ## Build the manager image IMG (default math-controller:dev), then load it with `minikube image load` or `kind load docker-image`.
	$(CONTAINER_TOOL) build -t $(IMG) .

deploy: install ## Install the CRDs and run the manager in namespace math-system with image IMG.
	for f in deploy/*.yaml; do \
	  sed 's|image: math-controller:dev|image: $(IMG)|' "$$f"; echo '---'; \
	done | $(KUBECTL) apply -f -

undeploy: ## Remove the manager, its RBAC and namespace (the CRDs and your objects stay; `make uninstall` removes those).
	$(KUBECTL) delete --ignore-not-found -f deploy/
