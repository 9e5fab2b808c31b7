//! The files handed out: a participant's kubeconfig works on their laptop, not only on the
//! organiser's. Everything it needs is inside it: the address the room reaches the API server
//! at ([`room_server`]: never one of this machine's own), the certificate authority inline
//! (`certificate-authority-data`, read from the organiser's file when their kubeconfig names
//! one by path, as minikube's does: `~/.minikube/ca.crt` is on no other laptop), the token,
//! and a context that names the participant's namespace. A comment at its top says whose it is
//! and until when its token lasts.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use kube::config::{Cluster, Kubeconfig};
use serde_json::{Value, json};

use crate::messages as m;
use crate::room::participant_namespace;
use crate::t;

/// Where the participants' files go, under the repository: `workshop/room/`.
pub fn room_dir(repository: &Path) -> PathBuf {
    repository.join("workshop/room")
}

/// A participant's file in the room's folder `dir`: `<name>.kubeconfig`.
pub fn kubeconfig_path(dir: &Path, participant: &str) -> PathBuf {
    dir.join(format!("{participant}.kubeconfig"))
}

/// The organiser's current context: its name and its cluster entry.
pub fn current_cluster(kubeconfig: &Kubeconfig) -> anyhow::Result<(String, Cluster)> {
    let (name, context) = kubeconfig
        .current_context
        .as_ref()
        .and_then(|name| kubeconfig.contexts.iter().find(|c| &c.name == name))
        .and_then(|c| c.context.as_ref().map(|context| (c.name.clone(), context)))
        .ok_or_else(|| anyhow::anyhow!("the kubeconfig has no current context"))?;
    let cluster = kubeconfig
        .clusters
        .iter()
        .find(|c| c.name == context.cluster)
        .and_then(|c| c.cluster.clone())
        .ok_or_else(|| anyhow::anyhow!("the kubeconfig has no cluster {}", context.cluster))?;
    Ok((name, cluster))
}

/// The address the participants' files carry: `ROOM_SERVER` when the organiser gives one (it
/// must be `https://` with a host), else the organiser's own server, unless that one is this
/// machine's only ([`is_this_machines`]): then `Err` with the one line that names
/// `ROOM_SERVER`. `described` names the organiser's cluster in that line.
pub fn room_server(
    explicit: Option<&str>,
    context: &str,
    cluster: &Cluster,
    described: &str,
) -> Result<http::Uri, String> {
    if let Some(server) = explicit {
        return server
            .parse::<http::Uri>()
            .ok()
            .filter(|uri| uri.scheme_str() == Some("https") && uri.host().is_some())
            .ok_or_else(|| t!(m::ROOM_SERVER_BAD, server = server));
    }
    let server = cluster.server.clone().unwrap_or_default();
    let uri = server
        .parse::<http::Uri>()
        .map_err(|_| t!(m::ROOM_SERVER_BAD, server = server))?;
    if is_this_machines(&uri, context, cluster) {
        return Err(t!(
            m::ROOM_SERVER_LOCAL,
            described = described,
            server = server
        ));
    }
    Ok(uri)
}

/// Whether an API server at `uri` is reachable from this machine only: a loopback address or
/// `localhost`, or a cluster of kind's (context `kind-…`) or minikube's (its kubeconfig entries
/// carry minikube's extension, or the context is `minikube`), which serve on loopback or on a
/// container or VM network of this machine.
pub fn is_this_machines(uri: &http::Uri, context: &str, cluster: &Cluster) -> bool {
    let host = uri.host().unwrap_or_default();
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = host == "localhost"
        || host.ends_with(".localhost")
        || host
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback() || ip.is_unspecified());
    let minikube = context == "minikube"
        || cluster.extensions.iter().flatten().any(|extension| {
            extension
                .extension
                .get("provider")
                .and_then(Value::as_str)
                .is_some_and(|provider| provider.starts_with("minikube"))
        });
    loopback || context.starts_with("kind-") || minikube
}

/// The participants' cluster entry: `server`, and the organiser's certificate authority
/// inline (read from its file when the kubeconfig names one; kube already made a relative path
/// absolute, as kubectl reads it), their TLS server name, proxy and verification choice; none of
/// the organiser's paths, nor minikube's extensions. `Err` with the line that says which file
/// could not be read.
pub fn portable_cluster(organisers: &Cluster, server: &http::Uri) -> Result<Value, String> {
    let mut cluster = json!({"server": server.to_string().trim_end_matches('/')});
    let data = match (
        &organisers.certificate_authority_data,
        &organisers.certificate_authority,
    ) {
        (Some(data), _) => Some(data.clone()),
        (None, Some(path)) => {
            let pem = std::fs::read(path)
                .map_err(|e| t!(m::ROOM_CA_UNREADABLE, path = path, cause = e))?;
            serde_json::to_value(k8s_openapi::ByteString(pem))
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
        }
        (None, None) => None,
    };
    if let Some(data) = data {
        cluster["certificate-authority-data"] = json!(data);
    }
    if let Some(name) = &organisers.tls_server_name {
        cluster["tls-server-name"] = json!(name);
    }
    if let Some(proxy) = &organisers.proxy_url {
        cluster["proxy-url"] = json!(proxy);
    }
    if organisers.insecure_skip_tls_verify == Some(true) {
        cluster["insecure-skip-tls-verify"] = json!(true);
    }
    Ok(cluster)
}

/// A participant's kubeconfig: the room's `cluster` entry ([`portable_cluster`]), the token,
/// and a context that names the participant's namespace, so that `kubectl` and the tools work
/// there without `-n`.
pub fn participant_kubeconfig(cluster: &Value, participant: &str, token: &str) -> Value {
    let context = format!("math-workshop-{participant}");
    json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "math-workshop", "cluster": cluster}],
        "users": [{"name": participant, "user": {"token": token}}],
        "contexts": [{"name": context, "context": {
            "cluster": "math-workshop", "user": participant,
            "namespace": participant_namespace(participant),
        }}],
        "current-context": context,
    })
}

/// The text of a participant's file: a comment that says whose it is and until when
/// (`expires`), then the kubeconfig.
pub fn file_text(kubeconfig: &Value, participant: &str, expires: &str) -> anyhow::Result<String> {
    let header = t!(
        m::FILE_HEADER,
        participant = participant,
        namespace = participant_namespace(participant),
        expires = expires
    );
    Ok(format!(
        "# {header}\n{}",
        serde_yaml::to_string(kubeconfig)?
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(yaml: &str) -> Cluster {
        serde_yaml::from_str(yaml).expect("a cluster entry")
    }

    #[test]
    fn the_authority_goes_inline_and_no_path_of_the_organisers_goes_out() {
        let dir = tempfile::tempdir().expect("a directory");
        let ca = dir.path().join("ca.crt");
        std::fs::write(
            &ca,
            "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
        )
        .expect("ca.crt");
        // As minikube writes it: the authority by path, its extension.
        let minikubes = cluster(&format!(
            "server: https://192.168.49.2:8443\ncertificate-authority: {}\nextensions:\n- name: cluster_info\n  extension: {{provider: minikube.sigs.k8s.io, version: v1.34.0}}\n",
            ca.display()
        ));
        let room: http::Uri = "https://10.0.0.5:8443".parse().expect("a URI");
        let entry = portable_cluster(&minikubes, &room).expect("portable");
        assert_eq!(
            entry,
            json!({
                "server": "https://10.0.0.5:8443",
                "certificate-authority-data": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUIKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=",
            })
        );
        let gone =
            cluster("server: https://10.0.0.5:8443\ncertificate-authority: /nowhere/ca.crt\n");
        assert!(portable_cluster(&gone, &room).is_err_and(|e| {
            e.starts_with("cannot read /nowhere/ca.crt, the certificate authority")
        }),);
    }

    #[test]
    fn this_machines_own_servers_need_the_rooms_address() {
        let plain = cluster("server: https://127.0.0.1:6443\n");
        let described = "context kind-kind, https://127.0.0.1:6443/";
        let refused = room_server(None, "kind-kind", &plain, described);
        assert!(
            refused
                .as_ref()
                .is_err_and(|e| e.contains("ROOM_SERVER=https://<address>:<port>")),
            "{refused:?}"
        );
        for (server, context) in [
            ("https://localhost:6443", "work"),
            ("https://[::1]:6443", "work"),
            ("https://172.18.0.2:6443", "kind-kind"),
            ("https://192.168.49.2:8443", "minikube"),
        ] {
            let uri: http::Uri = server.parse().expect("a URI");
            assert!(
                is_this_machines(&uri, context, &plain),
                "{server} {context}"
            );
        }
        let shared: http::Uri = "https://10.222.0.1:16443".parse().expect("a URI");
        assert!(!is_this_machines(&shared, "room", &plain));
        let given = room_server(
            Some("https://10.222.0.1:16443"),
            "kind-kind",
            &plain,
            described,
        );
        assert_eq!(given, Ok(shared));
        assert!(room_server(Some("10.222.0.1:16443"), "room", &plain, described).is_err());
        assert!(room_server(Some("http://10.222.0.1"), "room", &plain, described).is_err());
    }
}
