#!/bin/sh
# Prints deploy/ rendered by kustomize with the manager's image set to IMAGE, plus the
# components named after it (e.g. optional/prometheus), for `make deploy`, `make undeploy` and
# `make build-installer`. --without-crds leaves the CRDs out (what `make undeploy` deletes:
# the CRDs, and with them every Number, Tuple and Fermat, go only with `make uninstall`).
#
# kubectl's built-in kustomize has no `kustomize edit set image`, so this writes a throwaway
# overlay (an `images:` transformer over ../deploy) and renders that. The overlay sits in the
# repository root because kustomize accepts only relative paths to its bases. KUBECTL may be a
# command with arguments (`kubectl --context kind-kind`).
set -eu
without_crds=
if [ "${1:-}" = --without-crds ]; then without_crds=1; shift; fi
IMG=${1:?usage: hack/deploy-render.sh [--without-crds] IMAGE [COMPONENT...]}
shift
KUBECTL=${KUBECTL:-kubectl}
cd "$(dirname "$0")/.."

# registry/name:tag, registry/name@sha256:..., or name alone; a registry's port is no tag.
name=$IMG tag= digest=
case $name in
  *@*) digest=${name#*@}; name=${name%%@*} ;;
  *)
    case ${name##*/} in
      *:*) tag=${name##*:}; name=${name%:*} ;;
      # A bare name means :latest to docker and the kubelet; so here too (not deploy/'s :dev).
      *) tag=latest ;;
    esac ;;
esac

overlay=$(mktemp -d .deploy-overlay.XXXXXX)
trap 'rm -rf "$overlay"' EXIT INT TERM
{
  echo "apiVersion: kustomize.config.k8s.io/v1beta1"
  echo "kind: Kustomization"
  echo "resources:"
  echo "  - ../deploy"
  if [ $# -gt 0 ]; then
    echo "components:"
    for component in "$@"; do echo "  - ../deploy/$component"; done
  fi
  echo "images:"
  echo "  - name: math-controller"
  echo "    newName: \"$name\""
  if [ -n "$digest" ]; then echo "    digest: \"$digest\""; fi
  if [ -n "$tag" ]; then echo "    newTag: \"$tag\""; fi
  if [ -n "$without_crds" ]; then
    echo "patches:"
    echo "  - target:"
    echo "      kind: CustomResourceDefinition"
    echo "    patch: |-"
    echo "      \$patch: delete"
    echo "      apiVersion: apiextensions.k8s.io/v1"
    echo "      kind: CustomResourceDefinition"
    echo "      metadata:"
    echo "        name: every-crd"
  fi
} > "$overlay/kustomization.yaml"
# Unquoted: a command and its arguments.
# shellcheck disable=SC2086
$KUBECTL kustomize "$overlay"
