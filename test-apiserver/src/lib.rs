//! An in-memory Kubernetes API server for tests: a Rust envtest that starts in milliseconds
//! and needs nothing installed.
//!
//! It speaks the Kubernetes REST API over plain HTTP on 127.0.0.1, faithfully enough that
//! an unmodified `kube::Client` (with kube-runtime controllers, watchers, reflectors and
//! the events `Recorder`), Lease-based leader election and the real `kubectl` work against
//! it; kube 5.0.0's own cluster tests pass against it. Tests can count requests and inject
//! faults, latencies, outages and restarts. The crate's `README.md` lists everything it
//! implements and every known difference from kube-apiserver.
//!
//! # Example
//!
//! Start a server, install the CRD of a `#[derive(CustomResource)]` type, create an object
//! through a `kube::Client` and read it back:
//!
//! ```
//! use kube::api::{Api, PostParams};
//! use kube::{CustomResource, CustomResourceExt};
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//! use test_apiserver::{RequestFilter, TestServer, Verb};
//!
//! #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, JsonSchema)]
//! #[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
//! pub struct WidgetSpec {
//!     size: i64,
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = TestServer::start().await?;
//! // Returns once the CRD is Established and discovery lists it.
//! server.apply_crds([Widget::crd()]).await?;
//!
//! let widgets: Api<Widget> = Api::default_namespaced(server.client());
//! let widget = Widget::new("w", WidgetSpec { size: 3 });
//! widgets.create(&PostParams::default(), &widget).await?;
//! assert_eq!(widgets.get("w").await?.spec.size, 3);
//!
//! // Every request is logged; a test can count what its code sent.
//! let creates = RequestFilter::new().verb(Verb::Create).resource("widgets");
//! assert_eq!(server.count(&creates), 1);
//!
//! // The next two patches of any resource answer 500, as a failing server would.
//! server.fail_next(RequestFilter::new().verb(Verb::Patch), 2, 500);
//! server.shutdown().await;
//! # Ok(())
//! # }
//! ```
//!
//! `kubectl` works too: `KUBECONFIG=<server.kubeconfig_path()> kubectl get widgets`.

#![warn(missing_docs)]

mod admission;
mod auth;
mod cel;
mod control;
pub mod diff;
mod events;
mod faults;
mod install;
mod misbehave;
mod openapi;
mod proto;
mod quantity;
mod rbac;
mod registry;
mod requests;
mod schema;
mod selector;
mod server;
mod shared;
mod ssa;
mod status;
mod store;
mod table;
mod tls;
mod unknown;
mod util;

pub use admission::{AuthorizationCheck, PolicyRule};
pub use auth::UserInfo;
pub use control::Restart;
pub use install::{ApplyCrdsError, CRD_READY_TIMEOUT};
pub use misbehave::ANONYMOUS;
pub use requests::{RequestFilter, RequestRecord, Verb};
use serde_json::Value;
pub(crate) use shared::{Fault, Shared, lock};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{Notify, oneshot};

/// Options for [`TestServer::start_with`].
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// TCP port on 127.0.0.1; 0 picks a free one.
    pub port: u16,
    /// Where to write the kubeconfig; default: a temporary directory the server owns.
    pub kubeconfig: Option<PathBuf>,
    /// How often watches with `allowWatchBookmarks=true` get a BOOKMARK (kube-apiserver: ~1 min).
    pub bookmark_interval: Duration,
    /// Start in an outage (connections refused) until [`TestServer::resume`].
    pub start_down: bool,
    /// Serve HTTPS instead of plain HTTP, with a certificate authority of the server's own,
    /// named in the kubeconfig by file path as minikube writes its own (see the module `tls`):
    /// kubectl sends a kubeconfig's bearer token only over TLS.
    pub https: bool,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            port: 0,
            kubeconfig: None,
            bookmark_interval: Duration::from_secs(5),
            start_down: false,
            https: false,
        }
    }
}

struct Inner {
    shared: Arc<Shared>,
    url: String,
    kubeconfig: PathBuf,
    /// In HTTPS mode, the certificate authority (DER) and its file.
    authority: Option<(Vec<u8>, PathBuf)>,
    _dir: Option<tempfile::TempDir>,
    stop: Mutex<Option<oneshot::Sender<()>>>,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// A running test API server. Cheap to clone; all clones control the same server.
#[derive(Clone)]
pub struct TestServer {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for TestServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestServer")
            .field("url", &self.inner.url)
            .finish()
    }
}

impl TestServer {
    /// Starts a server on 127.0.0.1 with a random port and writes a kubeconfig into a
    /// temporary directory it owns. Must be called inside a tokio runtime.
    pub async fn start() -> anyhow::Result<TestServer> {
        TestServer::start_with(ServerOptions::default()).await
    }

    /// Starts a server with explicit options.
    pub async fn start_with(opts: ServerOptions) -> anyhow::Result<TestServer> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", opts.port)).await?;
        let addr = listener.local_addr()?;
        let scheme = if opts.https { "https" } else { "http" };
        let url = format!("{scheme}://127.0.0.1:{}", addr.port());
        let (dir, kubeconfig) = match opts.kubeconfig {
            Some(p) => (None, p),
            None => {
                let d = tempfile::Builder::new()
                    .prefix("test-apiserver-")
                    .tempdir()?;
                let p = d.path().join("kubeconfig");
                (Some(d), p)
            }
        };
        let identity = match opts.https {
            true => Some(tls::identity(
                &["127.0.0.1".to_string()],
                &certificates_dir(&kubeconfig),
            )?),
            false => None,
        };
        std::fs::write(&kubeconfig, kubeconfig_yaml(&url, identity.as_ref()))?;
        let shared = fresh(&url, opts.start_down, opts.bookmark_interval);
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let app = server::router(shared.clone());
        let listener = shared.faults_io.listener(listener, addr);
        let gc_shared = Arc::downgrade(&shared);
        let stopped = async move {
            let _ = stop_rx.await;
        };
        let task = match &identity {
            Some(identity) => {
                let listener = tls::TlsListener::new(listener, identity.acceptor.clone());
                tokio::spawn(serve(listener, app, stopped, gc_shared))
            }
            None => tokio::spawn(serve(listener, app, stopped, gc_shared)),
        };
        let authority = identity.map(|identity| {
            let file = identity.ca_file();
            (identity.ca_der, file)
        });
        Ok(TestServer {
            inner: Arc::new(Inner {
                shared,
                url,
                kubeconfig,
                authority,
                _dir: dir,
                stop: Mutex::new(Some(stop_tx)),
                task: Mutex::new(Some(task)),
            }),
        })
    }

    /// `http://127.0.0.1:PORT` (`https://` in HTTPS mode).
    pub fn url(&self) -> String {
        self.inner.url.clone()
    }

    /// A fresh `kube::Client` pointed at this server (default namespace `default`).
    pub fn client(&self) -> kube::Client {
        let uri: http::Uri = match self.inner.url.parse() {
            Ok(u) => u,
            Err(e) => unreachable!("the server URL is always valid: {e}"),
        };
        let mut config = kube::Config::new(uri);
        if let Some((der, _)) = &self.inner.authority {
            config.root_cert = Some(vec![der.clone()]);
        }
        config.default_namespace = "default".into();
        config.read_timeout = Some(Duration::from_secs(295));
        match kube::Client::try_from(config) {
            Ok(c) => c,
            Err(e) => unreachable!("the server's own client config always builds: {e}"),
        }
    }

    /// In HTTPS mode, the file of the certificate authority the kubeconfig names (`ca.crt`,
    /// beside `client.crt` and `client.key`, as minikube keeps them); `None` over plain HTTP.
    pub fn certificate_authority(&self) -> Option<PathBuf> {
        self.inner.authority.as_ref().map(|(_, file)| file.clone())
    }

    /// The kubeconfig file (`KUBECONFIG=... kubectl get math`).
    pub fn kubeconfig_path(&self) -> PathBuf {
        self.inner.kubeconfig.clone()
    }

    /// Every request answered so far (since the last [`TestServer::reset_requests`]).
    pub fn requests(&self) -> Vec<RequestRecord> {
        lock(&self.inner.shared.log).clone()
    }

    /// Number of logged requests the filter selects.
    pub fn count(&self, filter: &RequestFilter) -> usize {
        lock(&self.inner.shared.log)
            .iter()
            .filter(|r| filter.matches(r))
            .count()
    }

    /// Number of write requests (create, update, patch, delete, deletecollection) on
    /// any resource, whatever their outcome, including dry runs.
    pub fn write_count(&self) -> usize {
        lock(&self.inner.shared.log)
            .iter()
            .filter(|r| r.verb.is_write())
            .count()
    }

    /// Clears the request log.
    pub fn reset_requests(&self) {
        lock(&self.inner.shared.log).clear();
    }

    /// The current global resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.inner.shared.state().rv
    }

    /// Installs the CustomResourceDefinitions of a (multi-document) YAML string, as
    /// `kubectl apply` would (created, or replaced if they exist).
    pub fn apply_crd_yaml(&self, yaml: &str) -> anyhow::Result<()> {
        use serde::Deserialize;
        let mut st = self.inner.shared.state();
        let Some(rt) = st.rt_of("apiextensions.k8s.io", "customresourcedefinitions") else {
            anyhow::bail!("CRDs are not registered");
        };
        let opts = store::WriteOpts {
            manager: "test-apiserver".into(),
            ..Default::default()
        };
        for doc in serde_yaml::Deserializer::from_str(yaml) {
            let v = Value::deserialize(doc)?;
            if v.is_null() {
                continue;
            }
            if v.get("kind").and_then(Value::as_str) != Some("CustomResourceDefinition") {
                anyhow::bail!(
                    "not a CustomResourceDefinition: {}",
                    v.get("kind").unwrap_or(&Value::Null)
                );
            }
            let name = util::name_of(&v).to_string();
            match st.get(&rt, None, &name) {
                Ok(old) => {
                    let mut new = v.clone();
                    util::meta_mut(&mut new).insert(
                        "resourceVersion".into(),
                        Value::String(util::rv_of(&old).to_string()),
                    );
                    st.update(&rt, None, &name, None, new, &opts)
                        .map_err(|e| anyhow::anyhow!("{e}"))?;
                }
                Err(_) => {
                    st.create(&rt, None, v, &opts)
                        .map_err(|e| anyhow::anyhow!("{e}"))?;
                }
            }
        }
        Ok(())
    }

    /// Makes TokenReviews recognise `token` as `user` (who also gets the group
    /// `system:authenticated`, as kube-apiserver adds it).
    pub fn add_token(&self, token: &str, user: UserInfo) {
        self.inner.shared.tokens.add(token, user);
    }

    /// Makes TokenReviews recognise `token` as the ServiceAccount `namespace/name`, as a token
    /// from `kubectl create token NAME -n NAMESPACE` is recognised.
    pub fn add_service_account_token(&self, token: &str, namespace: &str, name: &str) {
        self.add_token(token, auth::service_account_user(namespace, name));
    }

    /// Stored objects of a resource (`group` "" for core), in one namespace or all.
    pub fn objects(&self, group: &str, resource: &str, namespace: Option<&str>) -> Vec<Value> {
        let st = self.inner.shared.state();
        let Some(rt) = st.rt_of(group, resource) else {
            return vec![];
        };
        st.scan(&rt, namespace)
            .map(|(_, v)| store::to_view(&rt, v))
            .collect()
    }

    /// One stored object, if it exists.
    pub fn object(
        &self,
        group: &str,
        resource: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Value> {
        let st = self.inner.shared.state();
        let rt = st.rt_of(group, resource)?;
        st.get(&rt, namespace, name).ok()
    }

    /// Waits until `pred` holds over the stored objects of a resource (all namespaces).
    pub async fn wait_for<F>(
        &self,
        group: &str,
        resource: &str,
        timeout: Duration,
        pred: F,
    ) -> anyhow::Result<()>
    where
        F: Fn(&[Value]) -> bool,
    {
        let deadline = Instant::now() + timeout;
        loop {
            if pred(&self.objects(group, resource, None)) {
                return Ok(());
            }
            if Instant::now() > deadline {
                anyhow::bail!("timed out after {timeout:?} waiting for a condition on {resource}");
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Stops the server: ends watches and waits for connections to close.
    pub async fn shutdown(self) {
        self.close_watches();
        if let Some(tx) = lock(&self.inner.stop).take() {
            let _ = tx.send(());
        }
        let task = lock(&self.inner.task).take();
        if let Some(mut task) = task
            && tokio::time::timeout(Duration::from_secs(2), &mut task)
                .await
                .is_err()
        {
            task.abort();
        }
    }
}

/// The state of a server that starts now at `url` (down if `start_down`): empty, no faults.
fn fresh(url: &str, start_down: bool, bookmark_interval: Duration) -> Arc<Shared> {
    Arc::new(Shared {
        state: Mutex::new(store::State::default()),
        log: Mutex::new(vec![]),
        faults: Mutex::new(vec![]),
        latencies: Mutex::new(vec![]),
        write_weights: Mutex::new(vec![]),
        faults_io: faults::Faults::new(start_down),
        gc_notify: Notify::new(),
        bookmark_interval: Mutex::new(bookmark_interval),
        url: url.to_string(),
        tokens: auth::Tokens::default(),
        crds_unavailable_until: Mutex::new(None),
        misbehave: misbehave::Misbehaviour::default(),
        rbac: rbac::Rbac::default(),
    })
}

/// Serves `app` on `listener` until `stopped`, with the server's background loop (the garbage
/// collector, the namespace and quota controllers) beside it.
async fn serve<L>(
    listener: L,
    app: axum::Router,
    stopped: impl std::future::Future<Output = ()> + Send + 'static,
    shared: std::sync::Weak<Shared>,
) where
    L: axum::serve::Listener,
    L::Addr: std::fmt::Debug,
{
    let gc = tokio::spawn(shared::background_loop(shared));
    let _ = axum::serve(listener, app)
        .with_graceful_shutdown(stopped)
        .await;
    gc.abort();
}

/// Where an HTTPS server keeps the kubeconfig's certificate files: `<kubeconfig>.certs/`.
fn certificates_dir(kubeconfig: &std::path::Path) -> PathBuf {
    let mut name = kubeconfig.file_name().unwrap_or_default().to_os_string();
    name.push(".certs");
    kubeconfig.with_file_name(name)
}

/// The server's kubeconfig: over HTTPS shaped as minikube's, the authority and the client's
/// certificate and key named by file path.
fn kubeconfig_yaml(url: &str, identity: Option<&tls::Identity>) -> String {
    let (authority, user) = match identity {
        Some(identity) => (
            format!(
                "\n    certificate-authority: {}",
                identity.ca_file().display()
            ),
            format!(
                "\n    client-certificate: {}\n    client-key: {}",
                identity.dir.join("client.crt").display(),
                identity.dir.join("client.key").display()
            ),
        ),
        None => (String::new(), " {}".to_string()),
    };
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: test-apiserver
  cluster:
    server: {url}{authority}
contexts:
- name: test-apiserver
  context:
    cluster: test-apiserver
    user: test-user
    namespace: default
current-context: test-apiserver
preferences: {{}}
users:
- name: test-user
  user:{user}
"
    )
}
