//! Connecting to the cluster of the current kubeconfig, and saying in one short line what is
//! wrong when that is not possible: no kubeconfig at all, or a server that does not answer
//! (a stopped minikube, a test API server that is gone). kube-client's own errors are right
//! but long (the one for a missing kubeconfig repeats itself three times); a learner needs
//! which server, and what to do.

use std::path::PathBuf;
use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig};

/// A client of the current kubeconfig that has answered once.
pub struct Cluster {
    pub client: kube::Client,
    /// The current context's namespace (`default` when it names none): where `kubectl`
    /// without `-n` puts things.
    pub namespace: String,
    /// "context kind-kind, https://127.0.0.1:33445", for messages.
    pub described: String,
}

/// Connects to the cluster of the current kubeconfig and asks it for its version. `instead`
/// completes the error message with what to do without a cluster (e.g. "or leave out
/// CLUSTER=1: the check then starts a test API server of its own").
pub async fn connect(instead: &str) -> anyhow::Result<Cluster> {
    let kubeconfig = match Kubeconfig::read() {
        Ok(kubeconfig) => kubeconfig,
        Err(e) => anyhow::bail!(
            "{}: start minikube or kind (they write one), {instead}",
            missing_kubeconfig(&e)
        ),
    };
    let context = kubeconfig.current_context.clone();
    let config = match kube::Config::from_custom_kubeconfig(
        kubeconfig.clone(),
        &KubeConfigOptions::default(),
    )
    .await
    {
        Ok(config) => config,
        Err(e) => anyhow::bail!(
            "the kubeconfig ({}) cannot be used: {}; {instead}",
            kubeconfig_paths(),
            root_cause(&e)
        ),
    };
    let described = match &context {
        Some(context) => format!("context {context}, {}", config.cluster_url),
        None => config.cluster_url.to_string(),
    };
    let namespace = config.default_namespace.clone();
    let port = config.cluster_url.port_u16();
    let client = kube::Client::try_from(config)
        .map_err(|e| anyhow::anyhow!("cannot make a client for {described}: {}", root_cause(&e)))?;
    let start = what_to_start(context.as_deref(), port);
    match tokio::time::timeout(Duration::from_secs(10), client.apiserver_version()).await {
        Ok(Ok(_)) => Ok(Cluster {
            client,
            namespace,
            described,
        }),
        Ok(Err(e)) => anyhow::bail!(
            "the cluster of your kubeconfig ({described}) does not answer: {}. {start}, {instead}",
            root_cause(&e)
        ),
        Err(_) => anyhow::bail!(
            "the cluster of your kubeconfig ({described}) did not answer within 10 s. {start}, {instead}"
        ),
    }
}

/// What starts the cluster a context names, as far as its name tells.
fn what_to_start(context: Option<&str>, port: Option<u16>) -> String {
    match context {
        Some("test-apiserver") => {
            let port = port.map(|p| format!(" --port {p}")).unwrap_or_default();
            let kubeconfig = kubeconfig_var()
                .map(|k| format!(" --kubeconfig {}", PathBuf::from(k).display()))
                .unwrap_or_default();
            format!(
                "Is the test API server still running? Start it again (cargo run -p test-apiserver --{port}{kubeconfig})"
            )
        }
        Some(name) if name.contains("minikube") => "Start it (minikube start)".to_string(),
        Some(name) if name.starts_with("kind-") => format!(
            "Start it (docker start {}-control-plane)",
            name.trim_start_matches("kind-")
        ),
        _ => "Start it (minikube start, or docker start <name>-control-plane for kind)".to_string(),
    }
}

/// Where kubectl looks for its configuration, for messages.
fn kubeconfig_paths() -> String {
    match kubeconfig_var() {
        Some(paths) => format!("KUBECONFIG={}", PathBuf::from(paths).display()),
        None => "~/.kube/config".to_string(),
    }
}

/// `$KUBECONFIG`, unless unset or empty (kubectl treats both alike).
fn kubeconfig_var() -> Option<std::ffi::OsString> {
    std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty())
}

/// "no kubeconfig (KUBECONFIG is unset and ~/.kube/config does not exist)" or the like.
fn missing_kubeconfig(e: &kube::config::KubeconfigError) -> String {
    match kubeconfig_var() {
        Some(paths) => format!(
            "no usable kubeconfig at KUBECONFIG={} ({})",
            PathBuf::from(paths).display(),
            root_cause(e)
        ),
        None => "no kubeconfig (KUBECONFIG is unset and ~/.kube/config does not exist)".to_string(),
    }
}

/// The innermost error of a chain ("Connection refused"), which is the one that says what
/// happened; the outer ones say where (`ServiceError: client error (Connect)`).
pub fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut inner = e;
    while let Some(source) = inner.source() {
        inner = source;
    }
    let mut text = inner.to_string();
    // "Connection refused (os error 111)": the number helps nobody.
    if let Some(at) = text.find(" (os error") {
        text.truncate(at);
    }
    // It continues a sentence: "does not answer: connection refused".
    let mut chars = text.chars();
    match (chars.next(), chars.next()) {
        (Some(first), Some(second)) if first.is_uppercase() && second.is_lowercase() => {
            first.to_lowercase().chain(text.chars().skip(1)).collect()
        }
        _ => text,
    }
}
