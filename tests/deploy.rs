//! deploy/ as a kustomization (kubebuilder's `config/`), against the test API server: `kubectl
//! kustomize` renders it with the CRDs of `crds/` (a base generated from the Rust types),
//! `kubectl apply -k deploy` installs everything, the image set through kustomize
//! (`hack/deploy-render.sh`, what `make deploy` runs) passes a server-side dry run, so does
//! `make build-installer`'s `dist/install.yaml`, `make deploy IMG=…` and `make undeploy` install
//! and remove the manager, the recipes fail when a command of a pipeline fails, and the optional
//! ServiceMonitor component scrapes the metrics Service's port.

mod common;

use std::process::Command;

use anyhow::{Context as _, Result, ensure};
use common::*;
use serde::Deserialize;
use serde_json::Value;
use test_apiserver::TestServer;

const IMG: &str = "registry.example:5000/team/math-controller:v1.2.3";

/// Held by whatever writes an overlay into the repository (the render script, `make deploy`),
/// so that a test looking for a left-over overlay never sees another test's overlay in use.
static OVERLAYS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn overlays() -> std::sync::MutexGuard<'static, ()> {
    OVERLAYS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `hack/deploy-render.sh IMG components…`: deploy/ through a kustomize overlay.
fn render(img: &str, components: &[&str]) -> Result<String> {
    let _overlays = overlays();
    let out = Command::new(repo().join("hack/deploy-render.sh"))
        .arg(img)
        .args(components)
        .current_dir(repo())
        .output()
        .context("hack/deploy-render.sh runs")?;
    ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8(out.stdout)?)
}

fn documents(yaml: &str) -> Result<Vec<Value>> {
    let mut docs = Vec::new();
    for doc in serde_yaml::Deserializer::from_str(yaml) {
        let v = Value::deserialize(doc)?;
        if !v.is_null() {
            docs.push(v);
        }
    }
    Ok(docs)
}

fn of_kind<'a>(docs: &'a [Value], kind: &str) -> Vec<&'a Value> {
    docs.iter().filter(|d| d["kind"] == kind).collect()
}

fn images(docs: &[Value]) -> Vec<String> {
    of_kind(docs, "Deployment")
        .iter()
        .flat_map(|d| {
            d["spec"]["template"]["spec"]["containers"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|c| c["image"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn kubectl_kustomize_renders_deploy_and_the_image_is_set_through_kustomize() -> Result<()> {
    let out = Command::new("kubectl")
        .args(["kustomize", "deploy"])
        .current_dir(repo())
        .output()?;
    ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let base = documents(&String::from_utf8(out.stdout)?)?;
    ensure!(
        images(&base) == ["math-controller:dev"],
        "{:?}",
        images(&base)
    );
    // The three CRDs, the namespace, the ServiceAccount, four RBAC roles and bindings and the
    // metrics reader's role, the Deployment, the Service.
    ensure!(base.len() == 12, "{} objects", base.len());
    ensure!(of_kind(&base, "CustomResourceDefinition").len() == 3);
    for (img, want) in [
        (IMG, IMG),
        (
            "ghcr.io/me/math@sha256:0123abcd",
            "ghcr.io/me/math@sha256:0123abcd",
        ),
        ("math-controller", "math-controller:latest"),
    ] {
        let docs = documents(&render(img, &[])?)?;
        ensure!(images(&docs) == [want], "{img}: {:?}", images(&docs));
        ensure!(docs.len() == base.len());
    }
    // No overlay is left behind (none is being written meanwhile: the lock).
    let _overlays = overlays();
    let left = std::fs::read_dir(repo())?.filter_map(|e| e.ok()).any(|e| {
        e.file_name()
            .to_string_lossy()
            .starts_with(".deploy-overlay.")
    });
    ensure!(!left, "an overlay was left in the repository");
    Ok(())
}

#[test]
fn the_servicemonitor_component_scrapes_the_metrics_service_over_https() -> Result<()> {
    let docs = documents(&render(IMG, &["optional/prometheus"])?)?;
    let monitors = of_kind(&docs, "ServiceMonitor");
    ensure!(monitors.len() == 1, "{} ServiceMonitors", monitors.len());
    let monitor = monitors[0];
    let service = of_kind(&docs, "Service")[0];
    ensure!(monitor["metadata"]["namespace"] == service["metadata"]["namespace"]);
    let selector = monitor["spec"]["selector"]["matchLabels"]
        .as_object()
        .context("a selector")?;
    for (k, v) in selector {
        ensure!(
            service["metadata"]["labels"][k] == *v,
            "the Service lacks {k}={v}"
        );
    }
    let endpoint = &monitor["spec"]["endpoints"][0];
    ensure!(endpoint["port"] == service["spec"]["ports"][0]["name"]);
    ensure!(endpoint["scheme"] == "https" && endpoint["path"] == "/metrics");
    Ok(())
}

fn deployment_image(server: &TestServer) -> Option<String> {
    let d = server.object(
        "apps",
        "deployments",
        Some("math-system"),
        "math-controller",
    )?;
    d.pointer("/spec/template/spec/containers/0/image")?
        .as_str()
        .map(str::to_string)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rendered_manifests_pass_a_server_dry_run_with_the_image_replaced() -> Result<()> {
    let server = server().await?;
    let rendered = render(IMG, &[])?;
    // A dry run creates nothing, so the namespaced objects need the namespace for real.
    try_kubectl(&server, &["create", "namespace", "math-system"], None).await?;
    let out = try_kubectl(
        &server,
        &["apply", "--dry-run=server", "-f", "-"],
        Some(&rendered),
    )
    .await?;
    for doc in documents(&rendered)? {
        let name = doc["metadata"]["name"].as_str().unwrap_or_default();
        let dry = out
            .lines()
            .any(|l| l.contains(&format!("/{name} ")) && l.contains("(server dry run)"));
        ensure!(dry, "{name} missing in\n{out}");
    }
    ensure!(
        deployment_image(&server).is_none(),
        "a dry run created the Deployment"
    );
    Ok(())
}

fn make(server: &TestServer, args: &[&str]) -> Result<String> {
    let _overlays = overlays();
    let out = Command::new("make")
        .args(args)
        .env("KUBECONFIG", server.kubeconfig_path())
        .current_dir(repo())
        .output()
        .context("make runs")?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    ensure!(out.status.success(), "make {}: {text}", args.join(" "));
    Ok(text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn make_deploy_and_undeploy_work_against_the_test_api_server() -> Result<()> {
    let server = TestServer::start().await?;
    let img = format!("IMG={IMG}");
    make(&server, &["deploy", &img])?;
    ensure!(
        deployment_image(&server).as_deref() == Some(IMG),
        "{:?}",
        deployment_image(&server)
    );
    ensure!(
        server
            .object(
                "",
                "serviceaccounts",
                Some("math-system"),
                "math-controller"
            )
            .is_some()
    );
    ensure!(fermat_crd_installed(&server), "the Fermat CRD is missing");
    // Again with another image: an update, as a user's second `make deploy` is.
    make(&server, &["deploy", "IMG=math-controller:v2"])?;
    ensure!(deployment_image(&server).as_deref() == Some("math-controller:v2"));
    make(&server, &["undeploy"])?;
    eventually(
        "math-system gone",
        || async {
            server
                .object("", "namespaces", None, "math-system")
                .is_none()
                .then_some(())
        },
        |_| true,
    )
    .await;
    ensure!(
        deployment_image(&server).is_none(),
        "the Deployment outlived undeploy"
    );
    let roles = server.objects("rbac.authorization.k8s.io", "clusterroles", None);
    let ours = roles
        .iter()
        .filter(|r| {
            r["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("math-controller"))
        })
        .count();
    ensure!(ours == 0, "{ours} ClusterRoles of ours left");
    // The CRDs stay (make uninstall removes them, with every object).
    ensure!(fermat_crd_installed(&server), "undeploy removed the CRDs");
    Ok(())
}

/// Whether the Fermat CRD is on the server (`make deploy` installs the CRDs with the manager).
fn fermat_crd_installed(server: &TestServer) -> bool {
    server
        .object(
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            None,
            "fermats.math.example.com",
        )
        .is_some()
}

/// `kubectl apply -k deploy` installs everything, the CRDs with the manager (before, a GitOps
/// tool pointed at deploy/ installed a manager without its CRDs): a Number can be created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_apply_k_deploy_installs_the_crds_and_the_manager() -> Result<()> {
    let server = TestServer::start().await?;
    let deploy = repo().join("deploy");
    try_kubectl(&server, &["apply", "-k", &deploy.to_string_lossy()], None).await?;
    ensure!(fermat_crd_installed(&server), "the Fermat CRD is missing");
    ensure!(deployment_image(&server).as_deref() == Some("math-controller:dev"));
    let number = "apiVersion: math.example.com/v1beta1\nkind: Number\nmetadata:\n  name: four\n  namespace: default\nspec:\n  value: 4\n";
    try_kubectl(&server, &["apply", "-f", "-"], Some(number)).await?;
    // `kubectl apply -f crds/` still applies the CRDs alone (it reads no file without an
    // extension, such as crds/Kustomization).
    let crds = repo().join("crds");
    let out = try_kubectl(&server, &["apply", "-f", &crds.to_string_lossy()], None).await?;
    ensure!(out.lines().count() == 3, "{out}");
    Ok(())
}

/// `make build-installer IMG=…` writes one dist/install.yaml with the CRDs and the manager,
/// which a server-side dry run accepts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn make_build_installer_writes_one_file_that_applies() -> Result<()> {
    let server = TestServer::start().await?;
    let installer = {
        let _overlays = overlays();
        let out = Command::new("make")
            .args(["build-installer", &format!("IMG={IMG}")])
            .current_dir(repo())
            .output()?;
        ensure!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::read_to_string(repo().join("dist/install.yaml"))?
    };
    let docs = documents(&installer)?;
    ensure!(of_kind(&docs, "CustomResourceDefinition").len() == 3);
    ensure!(images(&docs) == [IMG], "{:?}", images(&docs));
    // A dry run creates nothing: the CRDs are installed and the namespace made for real first,
    // as the objects that need them would find them in a real apply.
    for file in crd_files() {
        server.apply_crd_yaml(&std::fs::read_to_string(file)?)?;
    }
    try_kubectl(&server, &["create", "namespace", "math-system"], None).await?;
    let out = try_kubectl(
        &server,
        &["apply", "--dry-run=server", "-f", "-"],
        Some(&installer),
    )
    .await?;
    let dry = out
        .lines()
        .filter(|l| l.contains("(server dry run)"))
        .count();
    ensure!(dry == docs.len(), "{dry} of {} in\n{out}", docs.len());
    ensure!(deployment_image(&server).is_none(), "a dry run created it");
    Ok(())
}

/// `make` with a KUBECTL of the test's choosing: its exit status and output.
fn make_with(args: &[&str]) -> Result<(bool, String)> {
    let _overlays = overlays();
    let out = Command::new("make")
        .args(args)
        .current_dir(repo())
        .output()?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok((out.status.success(), text))
}

/// The recipes run with pipefail: a render that fails fails `make undeploy`, though the
/// `kubectl delete` it pipes into succeeds with nothing to delete (before: exit 0, nothing
/// deleted). A KUBECTL of two words is a command and its argument, for the render too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_render_fails_the_recipe_and_kubectl_may_take_arguments() -> Result<()> {
    let (ok, out) = make_with(&["undeploy", "KUBECTL=false x"])?;
    ensure!(!ok, "make undeploy KUBECTL=\"false x\" succeeded:\n{out}");
    // A kubectl whose kustomize fails and whose delete succeeds.
    let dir = tempfile::tempdir()?;
    let fake = dir.path().join("kubectl");
    std::fs::write(
        &fake,
        "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = kustomize ] && { echo 'kustomize: broken' >&2; exit 1; }; done\ncat >/dev/null\nexit 0\n",
    )?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755))?;
    let kubectl = format!("KUBECTL={} --context c", fake.display());
    let (ok, out) = make_with(&["undeploy", &kubectl])?;
    ensure!(!ok, "the render failed but make undeploy succeeded:\n{out}");
    ensure!(out.contains("kustomize: broken"), "{out}");
    // The real kubectl with an argument: deploy and undeploy work.
    let server = TestServer::start().await?;
    let kubectl = format!(
        "KUBECTL=kubectl --kubeconfig {}",
        server.kubeconfig_path().display()
    );
    let (ok, out) = make_with(&["deploy", &kubectl, "IMG=math-controller:v3"])?;
    ensure!(ok, "{out}");
    ensure!(deployment_image(&server).as_deref() == Some("math-controller:v3"));
    let (ok, out) = make_with(&["undeploy", &kubectl])?;
    ensure!(ok, "{out}");
    ensure!(deployment_image(&server).is_none(), "{out}");
    Ok(())
}

/// docker-push and docker-buildx run their engine's commands (no engine here, so the engine is
/// `echo`: what a real one would be asked to do is printed).
#[test]
fn docker_push_and_buildx_ask_the_engine_for_a_push_and_a_multi_platform_build() -> Result<()> {
    let (ok, out) = make_with(&["docker-push", "CONTAINER_TOOL=echo", &format!("IMG={IMG}")])?;
    ensure!(ok && out.contains(&format!("\npush {IMG}\n")), "{out}");
    let (ok, out) = make_with(&[
        "docker-buildx",
        "CONTAINER_TOOL=echo",
        &format!("IMG={IMG}"),
    ])?;
    let build = format!("buildx build --push --platform=linux/amd64,linux/arm64 --tag {IMG} .");
    ensure!(ok && out.contains(&build), "{out}");
    ensure!(out.contains("buildx rm math-controller-builder"), "{out}");
    Ok(())
}

/// The flags of kubebuilder's scaffolded `cmd/main.go` (v4): what its `config/` passes.
const KUBEBUILDER_FLAGS: [&str; 12] = [
    "--metrics-bind-address",
    "--health-probe-bind-address",
    "--leader-elect",
    "--metrics-secure",
    "--metrics-cert-path",
    "--metrics-cert-name",
    "--metrics-cert-key",
    "--enable-http2",
    "--webhook-cert-path",
    "--webhook-cert-name",
    "--webhook-cert-key",
    "--webhook-port",
];

/// Ours, documented in docs/operations.md: the log format (kubebuilder's zap flags have no
/// equivalent here).
const OUR_FLAGS: [&str; 1] = ["--log-format"];

/// deploy/'s Deployment speaks kubebuilder's flags (and the binary accepts them).
#[test]
fn the_deployment_passes_kubebuilders_flags() -> Result<()> {
    use clap::Parser;
    let docs = documents(&std::fs::read_to_string(
        repo().join("deploy/30-deployment.yaml"),
    )?)?;
    let args: Vec<String> = docs[0]["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .context("args")?
        .iter()
        .filter_map(|a| a.as_str().map(str::to_string))
        .collect();
    for arg in &args {
        let flag = arg.split('=').next().unwrap_or_default();
        ensure!(
            KUBEBUILDER_FLAGS.contains(&flag) || OUR_FLAGS.contains(&flag),
            "{flag} is neither kubebuilder's nor a documented one of ours"
        );
    }
    let kubebuilders = args
        .iter()
        .filter(|a| KUBEBUILDER_FLAGS.iter().any(|f| a.starts_with(f)))
        .count();
    ensure!(kubebuilders >= 4, "{args:?}");
    math_controller::cli::Cli::try_parse_from(
        std::iter::once("math-controller".into()).chain(args),
    )?;
    Ok(())
}
