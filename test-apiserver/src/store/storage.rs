//! Storage: the objects and the one global resourceVersion, as etcd holds them for
//! kube-apiserver. Every change to `State::objects` goes through [`State::put`] or
//! [`State::remove_key`], which bump the resourceVersion, keep the garbage collector's
//! indexes current and feed the watch cache. Lists page with opaque `continue` tokens.

use super::{Change, ChangeType, Key, State};
use crate::events::{core_to_v1, v1_to_core};
use crate::registry::ResourceType;
use crate::selector::{FieldSelector, LabelSelector};
use crate::status::{ApiError, ApiResult};
use crate::util::{self, meta_mut, name_of};
use serde_json::{Value, json};

/// Converts a stored object into the requested resource's view.
/// (A CRD's other versions: the `None` conversion, `apiVersion` rewritten.)
pub fn to_view(rt: &ResourceType, stored: &Value) -> Value {
    if rt.is_events_v1() {
        core_to_v1(stored)
    } else if rt.storage_version.is_some() {
        with_api_version(stored, rt.api_version())
    } else {
        stored.clone()
    }
}

fn to_storage(rt: &ResourceType, view: &Value) -> Value {
    match &rt.storage_version {
        _ if rt.is_events_v1() => v1_to_core(view),
        Some(sv) if *sv != rt.version => with_api_version(view, format!("{}/{sv}", rt.group)),
        _ => view.clone(),
    }
}

fn with_api_version(obj: &Value, api_version: String) -> Value {
    let mut v = obj.clone();
    if let Some(m) = v.as_object_mut() {
        m.insert("apiVersion".into(), json!(api_version));
    }
    v
}

impl State {
    /// Stores a (view-shaped) object with a new resourceVersion; returns the stored view.
    pub(super) fn put(&mut self, rt: &ResourceType, mut obj: Value) -> Value {
        self.rv += 1;
        let rv = self.rv;
        meta_mut(&mut obj).insert("resourceVersion".into(), json!(rv.to_string()));
        let mut stored = to_storage(rt, &obj);
        // Written through another version: the storage version's schema prunes too.
        if let Some(schema) = self
            .registry
            .storage_type_of(rt)
            .and_then(|t| t.schema.as_ref())
        {
            crate::schema::prune(&mut stored, schema, "", true, &mut vec![]);
            obj = to_view(rt, &stored);
        } else if rt.is_events_v1() {
            // The answer is the stored core Event seen through events.k8s.io/v1, as a read's.
            obj = to_view(rt, &stored);
        }
        let ns = util::meta_str(&stored, "namespace").map(String::from);
        let key = State::key(rt, ns.as_deref(), name_of(&stored));
        let old = self.objects.insert(key.clone(), stored.clone());
        self.gc_track(&key, old.as_ref(), Some(&stored));
        self.quota_track(&key, old.as_ref(), Some(&stored));
        self.namespace_track(&key, old.as_ref(), &stored);
        self.crd_track(&key, old.as_ref(), &stored);
        if rt.group == "apiextensions.k8s.io" {
            self.registry.install_crd(&stored);
        }
        self.watch.emit(Change {
            rv,
            storage: key.storage,
            ns: key.ns,
            kind: if old.is_some() {
                ChangeType::Modified
            } else {
                ChangeType::Added
            },
            old,
            new: stored,
        });
        obj
    }

    /// Removes an object (storage key), emitting DELETED with a fresh resourceVersion.
    pub(super) fn remove_key(&mut self, key: &Key) -> Option<Value> {
        let mut old = self.objects.remove(key)?;
        self.gc_track(key, Some(&old), None);
        self.quota_track(key, Some(&old), None);
        self.rv += 1;
        let rv = self.rv;
        meta_mut(&mut old).insert("resourceVersion".into(), json!(rv.to_string()));
        self.watch.emit(Change {
            rv,
            storage: key.storage.clone(),
            ns: key.ns.clone(),
            kind: ChangeType::Deleted,
            old: None,
            new: old.clone(),
        });
        // Cascades that kube-apiserver's own controllers perform.
        if key.storage == "apiextensions.k8s.io/customresourcedefinitions" {
            if let Some(rt) = self.registry.remove_crd(&key.name) {
                let keys: Vec<Key> = self
                    .objects
                    .keys()
                    .filter(|k| k.storage == rt.storage)
                    .cloned()
                    .collect();
                for k in keys {
                    self.remove_key(&k);
                }
            }
        } else if key.storage == "/namespaces" {
            let keys: Vec<Key> = self
                .objects
                .keys()
                .filter(|k| k.ns == key.name)
                .cloned()
                .collect();
            for k in keys {
                self.remove_key(&k);
            }
        }
        Some(old)
    }

    pub fn get(&self, rt: &ResourceType, ns: Option<&str>, name: &str) -> ApiResult<Value> {
        self.objects
            .get(&State::key(rt, ns, name))
            .map(|o| to_view(rt, o))
            .ok_or_else(|| ApiError::not_found(&rt.plural, &rt.group, name))
    }

    /// Stored objects of a resource (optionally in one namespace), in key order.
    pub fn scan<'a>(
        &'a self,
        rt: &ResourceType,
        ns: Option<&'a str>,
    ) -> impl Iterator<Item = (&'a Key, &'a Value)> + 'a {
        let start = Key {
            storage: rt.storage.clone(),
            ns: ns.unwrap_or("").to_string(),
            name: String::new(),
        };
        let storage = rt.storage.clone();
        self.objects
            .range(start..)
            .take_while(move |(k, _)| k.storage == storage && ns.is_none_or(|n| k.ns == n))
    }

    /// A list of `rt` (in `ns`, or every namespace) filtered by the selectors: a page of at
    /// most `limit` items after the `cont` token's position, at the resourceVersion of the
    /// list the token continues, with a `continue` token while items remain.
    #[allow(clippy::too_many_arguments)]
    pub fn list(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        lsel: &LabelSelector,
        fsel: &FieldSelector,
        limit: Option<usize>,
        cont: Option<&str>,
    ) -> ApiResult<(Vec<Value>, Value)> {
        let mut list_rv = self.rv;
        let mut after: Option<(String, String)> = None;
        if let Some(c) = cont.filter(|c| !c.is_empty()) {
            let (rv, position) = decode_continue(c)?;
            if rv < self.watch.floor {
                return Err(ApiError::gone(
                    "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue value from the response.",
                ));
            }
            list_rv = rv;
            after = Some(position);
        }
        let mut items = vec![];
        let mut next: Option<(String, String)> = None;
        let mut remaining = 0usize;
        for (k, obj) in self.scan(rt, ns) {
            if let Some((ans, aname)) = &after
                && (k.ns.as_str(), k.name.as_str()) <= (ans.as_str(), aname.as_str())
            {
                continue;
            }
            if !lsel.matches(obj) || !fsel.matches(obj) {
                continue;
            }
            if let Some(l) = limit.filter(|l| *l > 0)
                && items.len() >= l
            {
                if next.is_none()
                    && let Some(last) = items.last()
                {
                    next = Some((
                        util::meta_str(last, "namespace").unwrap_or("").to_string(),
                        name_of(last).to_string(),
                    ));
                }
                remaining += 1;
                continue;
            }
            items.push(to_view(rt, obj));
        }
        Ok((items, list_meta(list_rv, next, remaining)))
    }
}

/// A `continue` token: the list's resourceVersion and the (namespace, name) of the last item
/// served, as [`list_meta`] wrote them.
fn decode_continue(c: &str) -> ApiResult<(u64, (String, String))> {
    use base64::Engine;
    let raw = base64::engine::general_purpose::STANDARD
        .decode(c)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .ok_or_else(|| ApiError::bad_request("continue key is not valid"))?;
    let rv = raw.get("rv").and_then(Value::as_u64).unwrap_or(0);
    let position = (
        raw.get("ns").and_then(Value::as_str).unwrap_or("").into(),
        raw.get("name").and_then(Value::as_str).unwrap_or("").into(),
    );
    Ok((rv, position))
}

/// A list's metadata: its resourceVersion and, when items remain after the page (`next` is
/// the page's last item), the `continue` token and how many remain.
fn list_meta(list_rv: u64, next: Option<(String, String)>, remaining: usize) -> Value {
    let mut meta = json!({"resourceVersion": list_rv.to_string()});
    if let Some((ns, name)) = next {
        use base64::Engine;
        let token = json!({"rv": list_rv, "ns": ns, "name": name}).to_string();
        meta["continue"] =
            json!(base64::engine::general_purpose::STANDARD.encode(token.as_bytes()));
        meta["remainingItemCount"] = json!(remaining);
    }
    meta
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_continue_token_resumes_after_the_last_item_at_the_lists_version() {
        let meta = list_meta(7, Some(("ns".into(), "b".into())), 3);
        assert_eq!(meta["remainingItemCount"], 3);
        let token = meta["continue"].as_str().expect("a continue token");
        let (rv, position) = decode_continue(token).expect("a valid token");
        assert_eq!((rv, position), (7, ("ns".to_string(), "b".to_string())));
        assert_eq!(list_meta(7, None, 0), json!({"resourceVersion": "7"}));
        assert_eq!(
            decode_continue("not base64!")
                .map(|_| ())
                .map_err(|e| e.code),
            Err(400)
        );
    }
}
