//! The plugin's edge to the cluster: a client from the kubeconfig (kubectl's flags), lists
//! of the three kinds, and errors that say in one line what to do.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use kube::api::{Api, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config, Resource};

use super::{NotFound, Objects};
use math_controller::api::{Fermat, Number, Tuple};
use math_controller::kind::Kind;

/// Why the plugin stops. Each message is one line that says what to do.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    #[error(
        "no cluster configured ({0}): start one (minikube start, kind create cluster) or point --kubeconfig / KUBECONFIG at its kubeconfig"
    )]
    NoConfig(String),
    #[error("cannot reach the API server at {url} ({detail}): is the cluster running?")]
    Unreachable { url: String, detail: String },
    #[error(
        "the math.example.com CRDs (Number, Tuple, Fermat) are not installed in this cluster: run `make install`"
    )]
    CrdsMissing,
    #[error(
        "{0}; `kubectl math tree` lists every tree in the namespace, `kubectl get math` every object"
    )]
    NotFound(#[from] NotFound),
    #[error(
        "the API server refused to list {kind}s ({detail}): this needs get, list and watch on math.example.com"
    )]
    Forbidden { kind: &'static str, detail: String },
    #[error("listing {kind}s failed: {detail}")]
    Api { kind: &'static str, detail: String },
    #[error("{0}")]
    Usage(String),
    #[error("the terminal failed: {0}")]
    Terminal(#[from] std::io::Error),
}

/// A client for the API server, and the namespace the kubeconfig's context selects.
pub struct Connection {
    pub client: Client,
    pub namespace: String,
    pub url: String,
}

/// Connect the way kubectl would: `--kubeconfig` or `KUBECONFIG` or `~/.kube/config`, the
/// current context unless `--context` names another. Nothing is sent yet.
pub async fn connect(
    kubeconfig: Option<PathBuf>,
    context: Option<String>,
) -> Result<Connection, PluginError> {
    let options = KubeConfigOptions {
        context,
        ..KubeConfigOptions::default()
    };
    let no_config = |e: &dyn std::fmt::Display| PluginError::NoConfig(e.to_string());
    let mut config = match kubeconfig {
        Some(path) => {
            let file = Kubeconfig::read_from(&path).map_err(|e| no_config(&e))?;
            Config::from_custom_kubeconfig(file, &options)
                .await
                .map_err(|e| no_config(&e))?
        }
        None => Config::from_kubeconfig(&options)
            .await
            .map_err(|e| no_config(&e))?,
    };
    // A person is waiting: fail in seconds, not after the default 30 s.
    config.connect_timeout = Some(Duration::from_secs(10));
    let url = config.cluster_url.to_string();
    let namespace = config.default_namespace.clone();
    let client = Client::try_from(config).map_err(|e| no_config(&e))?;
    Ok(Connection {
        client,
        namespace,
        url,
    })
}

/// How a failed request reads to a person.
pub fn explain(kind: &'static str, url: &str, error: kube::Error) -> PluginError {
    match error {
        kube::Error::Api(status) if status.code == 404 => PluginError::CrdsMissing,
        kube::Error::Api(status) if status.code == 401 || status.code == 403 => {
            PluginError::Forbidden {
                kind,
                detail: status.message,
            }
        }
        kube::Error::Api(status) => PluginError::Api {
            kind,
            detail: format!("{} ({})", status.message, status.code),
        },
        kube::Error::HyperError(_) | kube::Error::Service(_) => PluginError::Unreachable {
            url: url.trim_end_matches('/').to_string(),
            detail: root_cause(&error),
        },
        other => PluginError::Api {
            kind,
            detail: root_cause(&other),
        },
    }
}

/// The innermost cause, e.g. "Connection refused (os error 111)": what a person can act on.
fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = error;
    while let Some(source) = cause.source() {
        cause = source;
    }
    cause.to_string()
}

/// Objects per list page: big enough that a Fermat of 20000 needs few round trips, small
/// enough that no single response is huge.
const PAGE: u32 = 5_000;

async fn list<K: Kind>(api: Api<K>, url: &str) -> Result<Vec<Arc<K>>, PluginError> {
    let mut items = Vec::new();
    let mut params = ListParams::default().limit(PAGE);
    loop {
        let page = api
            .list(&params)
            .await
            .map_err(|e| explain(K::KIND, url, e))?;
        items.extend(page.items.into_iter().map(Arc::new));
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => return Ok(items),
        }
    }
}

/// Every Fermat, Tuple and Number in `namespace` (all namespaces for `None`), listed at once.
pub async fn list_all(conn: &Connection, namespace: Option<&str>) -> Result<Objects, PluginError> {
    fn api<K>(client: &Client, namespace: Option<&str>) -> Api<K>
    where
        K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>,
    {
        match namespace {
            Some(ns) => Api::namespaced(client.clone(), ns),
            None => Api::all(client.clone()),
        }
    }
    let client = &conn.client;
    let (fermats, tuples, numbers) = futures::try_join!(
        list(api::<Fermat>(client, namespace), &conn.url),
        list(api::<Tuple>(client, namespace), &conn.url),
        list(api::<Number>(client, namespace), &conn.url),
    )?;
    Ok(Objects {
        fermats,
        tuples,
        numbers,
    })
}
