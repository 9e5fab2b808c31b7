//! What the fairness tests share (`tests/fairness.rs`, `tests/fair_shares.rs`): namespaces as
//! flows, a Fermat in each, and which of the server's requests were a flow's writes.

use kube::api::{Api, PostParams};
use math_controller::api::{Fermat, FermatSpec};
use serde_json::json;
use test_apiserver::RequestRecord;

use super::Harness;

/// The resources the manager writes.
pub const OURS: [&str; 3] = ["numbers", "tuples", "fermats"];

/// A write to one of our kinds in `namespace`.
pub fn ours_in(r: &RequestRecord, namespace: &str) -> bool {
    r.verb.is_write()
        && OURS.contains(&r.resource.as_str())
        && r.namespace.as_deref() == Some(namespace)
}

pub async fn create_namespace(h: &Harness, name: &str) {
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(h.client.clone());
    let namespace = serde_json::from_value(json!({"metadata": {"name": name}})).expect("namespace");
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .expect("create namespace");
}

/// A Fermat named `f` for `number` in `namespace`.
pub async fn create_fermat(h: &Harness, namespace: &str, number: i64) -> Fermat {
    Api::<Fermat>::namespaced(h.client.clone(), namespace)
        .create(
            &PostParams::default(),
            &Fermat::new("f", FermatSpec { number }),
        )
        .await
        .expect("create Fermat")
}
