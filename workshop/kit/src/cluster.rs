//! Connecting to the cluster of the current kubeconfig, and saying in one short line what is
//! wrong when that is not possible: no kubeconfig at all, or a server that does not answer
//! (a stopped minikube, a test API server that is gone). kube-client's own errors are right
//! but long (the one for a missing kubeconfig repeats itself three times); a learner needs
//! which server, and what to do.

use std::path::PathBuf;
use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::messages as m;
use crate::t;

/// A client of the current kubeconfig that has answered once.
pub struct Cluster {
    pub client: kube::Client,
    /// The current context's namespace (`default` when it names none): where `kubectl`
    /// without `-n` puts things.
    pub namespace: String,
    /// The namespace the current context names, if it names one (a room's shared kubeconfig
    /// usually does not; the guide's shared-cluster section sets it to the participant's).
    pub context_namespace: Option<String>,
    /// "context kind-kind, https://127.0.0.1:33445", for messages.
    pub described: String,
}

/// Connects to the cluster of the current kubeconfig and asks it for its version. `instead`
/// completes the error message with what to do without a cluster (e.g. "or leave out
/// CLUSTER=1: the check then starts a test API server of its own").
pub async fn connect(instead: &str) -> anyhow::Result<Cluster> {
    connect_as(instead, None).await
}

/// [`connect`], with every request signed as `participant`'s ([`crate::room::Signature`]):
/// on a shared cluster, the API server's request log and the objects' managedFields then say
/// whose controllers wrote what.
pub async fn connect_as(instead: &str, participant: Option<&str>) -> anyhow::Result<Cluster> {
    let kubeconfig = read_kubeconfig(instead)?;
    let context = kubeconfig.current_context.clone();
    let context_namespace = context_namespace(&kubeconfig);
    let config = client_config(kubeconfig, instead).await?;
    let described = match &context {
        Some(context) => format!("context {context}, {}", config.cluster_url),
        None => config.cluster_url.to_string(),
    };
    let namespace = config.default_namespace.clone();
    let start = what_to_start(context.as_deref(), config.cluster_url.port_u16());
    let client = match participant {
        Some(participant) => crate::room::Signature::new(participant).client(config),
        None => kube::Client::try_from(config),
    }
    .map_err(|e| {
        anyhow::anyhow!(
            "{}",
            t!(m::NO_CLIENT, described = described, cause = root_cause(&e))
        )
    })?;
    answers(&client, &described, &start, instead).await?;
    Ok(Cluster {
        client,
        namespace,
        context_namespace,
        described,
    })
}

/// How the guide starts its test API server (the route without a cluster), which writes
/// `/tmp/math.kubeconfig`.
const GUIDE_TEST_SERVER: &str = "cargo run --profile workshop -p test-apiserver -- --port 8010 --kubeconfig /tmp/math.kubeconfig";

/// The kubeconfig kubectl would read, or what to do when there is none: the guide's route
/// first (a terminal without the `export KUBECONFIG` of the guide's test API server is the
/// likeliest cause), then a cluster's.
fn read_kubeconfig(instead: &str) -> anyhow::Result<Kubeconfig> {
    Kubeconfig::read().map_err(|e| {
        anyhow::anyhow!(
            "{}",
            t!(
                m::START_A_CLUSTER,
                missing = missing_kubeconfig(&e),
                command = GUIDE_TEST_SERVER,
                instead = instead
            )
        )
    })
}

/// The namespace the current context names, if it names one (an empty one is none, as for
/// kubectl).
fn context_namespace(kubeconfig: &Kubeconfig) -> Option<String> {
    let context = kubeconfig.current_context.as_ref()?;
    kubeconfig
        .contexts
        .iter()
        .find(|named| &named.name == context)
        .and_then(|named| named.context.as_ref())
        .and_then(|c| c.namespace.clone())
        .filter(|ns| !ns.is_empty())
}

/// The client configuration of the current context, or why the kubeconfig cannot be used.
async fn client_config(kubeconfig: Kubeconfig, instead: &str) -> anyhow::Result<kube::Config> {
    kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|e| {
            anyhow::anyhow!(
                "{}",
                t!(
                    m::KUBECONFIG_UNUSABLE,
                    paths = kubeconfig_paths(),
                    cause = root_cause(&e),
                    instead = instead
                )
            )
        })
}

/// Asks the server for its version (10 s at most): `Ok` once it answered, else what is wrong
/// and what to `start`.
async fn answers(
    client: &kube::Client,
    described: &str,
    start: &str,
    instead: &str,
) -> anyhow::Result<()> {
    match tokio::time::timeout(Duration::from_secs(10), client.apiserver_version()).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => anyhow::bail!(
            "{}",
            t!(
                m::DOES_NOT_ANSWER,
                described = described,
                cause = root_cause(&e),
                start = start,
                instead = instead
            )
        ),
        Err(_) => anyhow::bail!(
            "{}",
            t!(
                m::DID_NOT_ANSWER,
                described = described,
                start = start,
                instead = instead
            )
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
            let command =
                format!("cargo run --profile workshop -p test-apiserver --{port}{kubeconfig}");
            t!(m::START_TEST_SERVER, command = command)
        }
        Some(name) if name.contains("minikube") => m::START_MINIKUBE.text(),
        Some(name) if name.starts_with("kind-") => {
            t!(m::START_KIND, name = name.trim_start_matches("kind-"))
        }
        _ => m::START_ANY.text(),
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
        Some(paths) => t!(
            m::NO_USABLE_KUBECONFIG,
            path = PathBuf::from(paths).display(),
            cause = root_cause(e)
        ),
        None => m::NO_KUBECONFIG.text(),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn kubeconfig(yaml: &str) -> Kubeconfig {
        Kubeconfig::from_yaml(yaml).expect("a kubeconfig")
    }

    #[test]
    fn the_context_namespace_is_the_current_contexts_if_it_names_one() {
        let two = "
current-context: mine
contexts:
- name: other
  context: {cluster: c, user: u, namespace: theirs}
- name: mine
  context: {cluster: c, user: u, namespace: alice}
";
        assert_eq!(
            context_namespace(&kubeconfig(two)).as_deref(),
            Some("alice")
        );
        // kind's: the context names no namespace; an empty one is none too.
        let kind = "
current-context: kind-kind
contexts:
- name: kind-kind
  context: {cluster: kind-kind, user: kind-kind}
";
        assert_eq!(context_namespace(&kubeconfig(kind)), None);
        let empty = two.replace("namespace: alice", "namespace: ''");
        assert_eq!(context_namespace(&kubeconfig(&empty)), None);
        let no_current = two.replace("current-context: mine", "");
        assert_eq!(context_namespace(&kubeconfig(&no_current)), None);
    }
}
