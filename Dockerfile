# syntax=docker/dockerfile:1
# Two stages: a full Rust toolchain to build, a distroless runtime (glibc, CA certificates, no
# shell, non-root user 65532) to run, so the image carries nothing but the manager.
# `make docker-build` needs a container engine; the project's CI machines have none, so this file
# is not built by any test there (tests/operations.rs only checks that its EXPOSE matches deploy/).

# Any stable Rust at or above the crate's rust-version; bookworm matches the runtime's glibc.
FROM rust:1-bookworm AS builder
WORKDIR /src
COPY . .
# The cache mounts keep the registry and target directory between builds (BuildKit); the binary is
# copied out of the cached target directory because cache mounts are not part of the image.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --locked --release --bin math-controller \
 && cp target/release/math-controller /usr/local/bin/math-controller

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=builder /usr/local/bin/math-controller /math-controller
# Numeric, so that the pod's runAsNonRoot can verify it without resolving names.
USER 65532:65532
# The ports deploy/ serves (tests/operations.rs checks that they agree): 8443 /metrics over
# HTTPS (--metrics-secure --metrics-bind-address=:8443), 8081 /healthz and /readyz
# (--health-probe-bind-address=:8081).
EXPOSE 8443 8081
ENTRYPOINT ["/math-controller"]
