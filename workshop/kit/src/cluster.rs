//! Connecting to the cluster of the current kubeconfig, and saying in one short line what is
//! wrong when that is not possible: no kubeconfig at all, or a server that does not answer
//! (a stopped minikube, a test API server that is gone). kube-client's own errors are right
//! but long (the one for a missing kubeconfig repeats itself three times); a learner needs
//! which server, and what to do.

use std::path::{Path, PathBuf};
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
    /// "context kind-kind (https://127.0.0.1:33445/)": the first line of install, run and a
    /// check on a cluster names it, before anything is written.
    pub on: String,
    /// Whether the context is one the workshop knows: kind's, minikube's, the test API
    /// server's or a room's ([`familiar`]). Installing CRDs elsewhere asks for `FORCE=1`.
    pub familiar: bool,
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
    let familiar = familiar(context.as_deref(), current_cluster(&kubeconfig));
    let config = client_config(kubeconfig, instead).await?;
    let (described, on) = match &context {
        Some(context) => (
            format!("context {context}, {}", config.cluster_url),
            t!(
                m::ON_CONTEXT,
                context = context,
                server = config.cluster_url
            ),
        ),
        None => (
            config.cluster_url.to_string(),
            config.cluster_url.to_string(),
        ),
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
    let room = context.as_deref().and_then(room_participant);
    answers(&client, &described, &start, instead, room).await?;
    if let (Some(participant), Some(namespace)) = (room, &context_namespace) {
        rights_kept(&client, &described, participant, namespace).await?;
    }
    Ok(Cluster {
        client,
        namespace,
        context_namespace,
        described,
        on,
        familiar,
    })
}

/// The current context's cluster entry, if the kubeconfig has one.
fn current_cluster(kubeconfig: &Kubeconfig) -> Option<&kube::config::Cluster> {
    let context = kubeconfig.current_context.as_ref()?;
    let cluster = kubeconfig
        .contexts
        .iter()
        .find(|named| &named.name == context)?
        .context
        .as_ref()?
        .cluster
        .clone();
    kubeconfig
        .clusters
        .iter()
        .find(|named| named.name == cluster)?
        .cluster
        .as_ref()
}

/// Whether a context is one of the clusters the workshop is made for: the test API server's
/// (`test-apiserver`), kind's (`kind-…`), minikube's (`minikube`, or its kubeconfig extension on
/// the cluster entry, which every minikube profile carries), or a room's (`math-workshop-…`).
/// A beginner whose current context is a work cluster is asked before the CRDs, the one
/// cluster-wide write, go there.
pub fn familiar(context: Option<&str>, cluster: Option<&kube::config::Cluster>) -> bool {
    let minikubes = cluster
        .and_then(|c| c.extensions.as_ref())
        .is_some_and(|extensions| {
            extensions.iter().any(|named| {
                named
                    .extension
                    .get("provider")
                    .and_then(serde_json::Value::as_str)
                    .is_some_and(|provider| provider.starts_with("minikube"))
            })
        });
    minikubes
        || context.is_some_and(|context| {
            context == "test-apiserver"
                || context == "minikube"
                || context.starts_with("kind-")
                || context.starts_with("math-workshop-")
        })
}

/// How the guide starts its test API server (the route without a cluster), which writes
/// `/tmp/math.kubeconfig`.
const GUIDE_TEST_SERVER: &str = "cargo run --profile workshop -p test-apiserver -- --port 8010 --kubeconfig /tmp/math.kubeconfig";

/// The kubeconfig kubectl would read, or what to do when there is none: the guide's route
/// first (a terminal without the `export KUBECONFIG` of the guide's test API server is the
/// likeliest cause), then a cluster's; no minikube to start for a room's file that is not where
/// `KUBECONFIG` says.
fn read_kubeconfig(instead: &str) -> anyhow::Result<Kubeconfig> {
    Kubeconfig::read().map_err(|e| {
        if let Some(line) = kubeconfig_var().and_then(|paths| room_file_missing(Path::new(&paths)))
        {
            return anyhow::anyhow!("{line}");
        }
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

/// The participant a room's kubeconfig is for: its context is `math-workshop-<participant>`
/// ([`crate::organiser::participant_kubeconfig`]).
fn room_participant(context: &str) -> Option<&str> {
    context
        .strip_prefix("math-workshop-")
        .filter(|name| !name.is_empty())
}

/// Asks the server for its version (10 s at most): `Ok` once it answered, else what is wrong
/// and what to `start`. Credentials it refuses (401) are no cluster to start: in a `room`
/// (the participant's kubeconfig), the room's access has ended; elsewhere the kubeconfig's
/// credentials did.
async fn answers(
    client: &kube::Client,
    described: &str,
    start: &str,
    instead: &str,
    room: Option<&str>,
) -> anyhow::Result<()> {
    match tokio::time::timeout(Duration::from_secs(10), client.apiserver_version()).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(kube::Error::Api(status))) if status.code == 401 => match room {
            Some(participant) => anyhow::bail!(
                "{}",
                t!(
                    m::ACCESS_ENDED,
                    described = described,
                    participant = participant
                )
            ),
            None => anyhow::bail!(
                "{}",
                t!(
                    m::CREDENTIALS_REFUSED,
                    described = described,
                    instead = instead
                )
            ),
        },
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

/// In a room, whether the participant still has their rights: their Role lets them read
/// their own namespace, so a 403 there means the organiser's RBAC for them is gone (their
/// ServiceAccount still authenticates). Any other answer is left to the command that follows.
async fn rights_kept(
    client: &kube::Client,
    described: &str,
    participant: &str,
    namespace: &str,
) -> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::Namespace;
    match kube::Api::<Namespace>::all(client.clone())
        .get_opt(namespace)
        .await
    {
        Err(kube::Error::Api(status)) if status.code == 403 => anyhow::bail!(
            "{}",
            t!(
                m::RIGHTS_ENDED,
                described = described,
                namespace = namespace,
                participant = participant
            )
        ),
        _ => Ok(()),
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

/// When `path` does not exist but its folder holds kubeconfigs (`*.kubeconfig`, as a room's
/// folder does), the line that names them: `PARTICIPANT=Taro` looked for `Taro.kubeconfig`
/// where the organiser handed out `taro.kubeconfig`.
fn room_file_missing(path: &Path) -> Option<String> {
    if path.exists() {
        return None;
    }
    let dir = path.parent()?;
    let mut held: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".kubeconfig"))
        .collect();
    if held.is_empty() {
        return None;
    }
    held.sort();
    Some(t!(
        m::ROOM_FILE_MISSING,
        path = path.display(),
        dir = dir.display(),
        files = held.join(", ")
    ))
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
    fn the_workshops_own_clusters_are_familiar_and_others_are_not() {
        for context in [
            "test-apiserver",
            "kind-kind",
            "minikube",
            "math-workshop-alice",
        ] {
            assert!(familiar(Some(context), None), "{context}");
        }
        assert!(!familiar(Some("prod-eu"), None));
        assert!(!familiar(None, None));
        let profile: kube::config::Cluster = serde_yaml::from_str(
            "server: https://192.168.58.2:8443\nextensions:\n- name: cluster_info\n  extension: {provider: minikube.sigs.k8s.io, version: v1.34.0}\n",
        )
        .expect("a cluster entry");
        assert!(familiar(Some("my-profile"), Some(&profile)));
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
