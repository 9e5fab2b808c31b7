//! Reading the check's namespace through the API (kubectl is for what a learner types).

use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use serde_json::Value;

/// Reads the check's namespace.
#[derive(Clone)]
pub(crate) struct Reader {
    pub(super) client: kube::Client,
    pub(super) namespace: String,
}

impl Reader {
    /// An `Api` for one kind in the check's namespace.
    pub(crate) fn api(&self, kind: &str) -> Api<DynamicObject> {
        let gvk = GroupVersionKind::gvk("math.example.com", "v1beta1", kind);
        let plural = format!("{}s", kind.to_lowercase());
        let resource = ApiResource::from_gvk_with_plural(&gvk, &plural);
        Api::namespaced_with(self.client.clone(), &self.namespace, &resource)
    }

    /// One object as JSON, `None` if it does not exist (or cannot be read).
    pub async fn get(&self, kind: &str, name: &str) -> Option<Value> {
        let object = self.api(kind).get_opt(name).await.ok()??;
        serde_json::to_value(object).ok()
    }

    /// Every object of a kind in the namespace, as JSON.
    pub async fn list(&self, kind: &str) -> Vec<Value> {
        match self.api(kind).list(&Default::default()).await {
            Ok(list) => list
                .items
                .into_iter()
                .filter_map(|o| serde_json::to_value(o).ok())
                .collect(),
            Err(_) => vec![],
        }
    }
}
