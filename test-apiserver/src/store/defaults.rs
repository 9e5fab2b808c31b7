//! The objects a new cluster holds before anyone writes, created the way the control plane
//! creates them: kube-apiserver's bootstrap controllers make the four namespaces, the
//! Service `default/kubernetes`, the default RBAC roles and the ComponentStatuses; kube-controller-manager's
//! ServiceAccount and root-CA publisher controllers give every namespace the ServiceAccount
//! `default` and the ConfigMap `kube-root-ca.crt`.

use super::{State, WriteOpts};
use serde_json::{Value, json};

/// The CA kube-root-ca.crt publishes: the test server serves plain HTTP, so this is a
/// placeholder a client may read but need not trust.
const ROOT_CA: &str = "-----BEGIN CERTIFICATE-----\ntest-apiserver serves plain HTTP on 127.0.0.1; no CA signs it\n-----END CERTIFICATE-----\n";

fn as_manager(manager: &str) -> WriteOpts {
    WriteOpts {
        manager: manager.into(),
        ..Default::default()
    }
}

/// The default ClusterRoles of kube-apiserver's RBAC bootstrap policy (`cluster-admin`,
/// `admin`, `edit`, `view`), with their rules abbreviated to what they allow at the top.
fn default_cluster_roles() -> Vec<Value> {
    let role = |name: &str, rules: Value| {
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": name, "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
                "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}},
            "rules": rules
        })
    };
    let read = json!(["get", "list", "watch"]);
    let write = json!(["create", "delete", "deletecollection", "patch", "update"]);
    let all_read = json!({"apiGroups": ["*"], "resources": ["*"], "verbs": read});
    let all_write = json!({"apiGroups": ["*"], "resources": ["*"], "verbs": write});
    vec![
        role(
            "cluster-admin",
            json!([
                {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                {"nonResourceURLs": ["*"], "verbs": ["*"]}
            ]),
        ),
        role("admin", json!([all_read.clone(), all_write.clone()])),
        role("edit", json!([all_read.clone(), all_write])),
        role("view", json!([all_read])),
    ]
}

/// kube-apiserver answers ComponentStatus by probing the scheduler, the controller-manager
/// and etcd; here they are the server itself, so they are healthy.
fn healthy(component: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ComponentStatus", "metadata": {"name": component},
        "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]
    })
}

fn kubernetes_service() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "kubernetes", "namespace": "default",
            "labels": {"component": "apiserver", "provider": "kubernetes"}},
        "spec": {"type": "ClusterIP", "clusterIP": "10.96.0.1", "clusterIPs": ["10.96.0.1"],
            "sessionAffinity": "None", "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
            "internalTrafficPolicy": "Cluster",
            "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}]}
    })
}

impl State {
    fn create_default(&mut self, group: &str, plural: &str, body: Value, manager: &str) {
        let Some(rt) = self.rt_of(group, plural) else {
            return;
        };
        let ns = body
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .map(String::from);
        // An object someone created first (or a namespace being deleted) stays as it is.
        let _ = self.create(&rt, ns.as_deref(), body, &as_manager(manager));
    }

    /// What kube-apiserver creates at start, after the four namespaces.
    pub(super) fn create_cluster_defaults(&mut self) {
        self.create_default("", "services", kubernetes_service(), "kube-apiserver");
        for component in ["scheduler", "controller-manager", "etcd-0"] {
            self.create_default(
                "",
                "componentstatuses",
                healthy(component),
                "kube-apiserver",
            );
        }
        for role in default_cluster_roles() {
            self.create_default(
                "rbac.authorization.k8s.io",
                "clusterroles",
                role,
                "kube-apiserver",
            );
        }
    }

    /// What kube-controller-manager puts in every new namespace.
    pub(super) fn create_namespace_defaults(&mut self, ns: &str) {
        let account = json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "default", "namespace": ns}});
        self.create_default("", "serviceaccounts", account, "kube-controller-manager");
        let ca = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "kube-root-ca.crt", "namespace": ns,
                "annotations": {"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."}},
            "data": {"ca.crt": ROOT_CA}});
        self.create_default("", "configmaps", ca, "kube-controller-manager");
    }
}
