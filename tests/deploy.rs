//! deploy/ as a kustomization, against the test API server: `kubectl kustomize` renders it, the
//! image set through kustomize (`hack/deploy-render.sh`, what `make deploy` runs) passes a
//! server-side dry run, `make deploy IMG=…` and `make undeploy` install and remove the manager,
//! and the optional ServiceMonitor component scrapes the metrics Service's port.

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
    ensure!(base.len() == 9, "{} objects", base.len());
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
