# Operations targets, included by the Makefile: build the image and run the manager in a cluster.

IMG ?= math-controller:dev
CONTAINER_TOOL ?= docker

.PHONY: docker-build deploy undeploy

## docker-build: build the manager image $(IMG) (then `minikube image load $(IMG)` or `kind load docker-image $(IMG)`)
docker-build:
	$(CONTAINER_TOOL) build -t $(IMG) .

## deploy: install the CRDs and run the manager in namespace math-system with image $(IMG)
deploy: install
	for f in deploy/*.yaml; do \
	  sed 's|image: math-controller:dev|image: $(IMG)|' "$$f"; echo '---'; \
	done | kubectl apply -f -

## undeploy: remove the manager, its RBAC and namespace (the CRDs and your objects stay; `make uninstall` removes them)
undeploy:
	kubectl delete --ignore-not-found -f deploy/
