//! Whether a participant may install their CRDs into a shared cluster: CRDs are
//! cluster-scoped, so installing yours over different ones that others use would change the
//! schema under every controller that watches them ([`may_install`]).

use super::{DIGEST, Foreign, Signature, describe_foreign, others_controllers, said};
use crate::messages as m;
use crate::t;
use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};
use serde_json::Value;

/// The digest of a CRD's spec ([`DIGEST`]): FNV-1a over its canonical JSON (keys sorted), so
/// that the same Rust types give the same digest on every machine. Descriptions do not count
/// ([`without_descriptions`]): a doc comment is not the schema, and a participant who typed the
/// guide's fields without the reference solution's comments has the room's CRDs already.
pub fn digest(crd: &CustomResourceDefinition) -> String {
    let mut spec = serde_json::to_value(&crd.spec).unwrap_or_default();
    without_descriptions(&mut spec);
    let mut canonical = String::new();
    canonical_json(&spec, &mut canonical);
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in canonical.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("fnv1a64-{hash:016x}")
}

/// Removes every `description` whose value is text (a schema's, a printer column's), leaving a
/// property that happens to be called `description` (its value is a schema, an object).
fn without_descriptions(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.get("description").is_some_and(Value::is_string) {
                map.remove("description");
            }
            map.values_mut().for_each(without_descriptions);
        }
        Value::Array(items) => items.iter_mut().for_each(without_descriptions),
        _ => {}
    }
}

fn canonical_json(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let sorted: BTreeMap<&String, &Value> = map.iter().collect();
            out.push('{');
            for (i, (key, value)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                canonical_json(value, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical_json(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// What installing a set of CRDs would do.
#[derive(Debug, Default)]
pub struct Install {
    /// The names of the CRDs to write (missing, or different and free to replace).
    pub writes: Vec<String>,
    /// What to tell the learner about replaced CRDs.
    pub notes: Vec<String>,
}

/// Whether `crds` may be installed into the cluster, where the participant works in
/// `own_namespace`: `Ok` with the CRDs to write, or `Err` with why not. A CRD that is
/// missing may always be installed, one that is the same as ours needs no write; a different
/// one may be replaced only when no object of its kind exists outside `own_namespace`, and
/// none in it is looked after by another controller (two participants who both work in
/// `default`): nobody else uses it. Or with `force`.
pub async fn may_install(
    client: &kube::Client,
    crds: &[CustomResourceDefinition],
    own_namespace: &str,
    me: &Signature,
    force: bool,
) -> Result<Install, String> {
    let api = Api::<CustomResourceDefinition>::all(client.clone());
    let mut install = Install::default();
    for crd in crds {
        let name = crd.metadata.name.clone().unwrap_or_default();
        let existing = api
            .get_opt(&name)
            .await
            .map_err(|e| t!(m::CANNOT_READ_CRD, name = name, said = said(&e)))?;
        let Some(existing) = existing else {
            install.writes.push(name);
            continue;
        };
        let Some(whose) = whose(&existing, crd) else {
            continue;
        };
        let differing = Differing {
            name: &name,
            whose,
            kind: &crd.spec.names.kind,
            own_namespace,
        };
        let users = who_else_uses(client, &existing, own_namespace, me).await;
        install.notes.push(verdict(&differing, users, force)?);
        install.writes.push(name);
    }
    Ok(install)
}

/// A CRD of the cluster that differs from ours, as the messages about it name it.
struct Differing<'a> {
    name: &'a str,
    /// Whose it seems to be ([`whose`]).
    whose: String,
    kind: &'a str,
    own_namespace: &'a str,
}

/// Who else uses a CRD: how many objects of its kind each other namespace holds, and the
/// objects of one's own namespace that another controller looks after.
struct Users {
    elsewhere: BTreeMap<String, usize>,
    here: Vec<Foreign>,
}

/// Whose the cluster's CRD `existing` seems to be, when it is not the same as `ours` (its
/// digest differs): another participant's types (or ours before an edit) when the workshop
/// wrote it, the finished manager's otherwise. `None`: the same, nothing to write.
fn whose(existing: &CustomResourceDefinition, ours: &CustomResourceDefinition) -> Option<String> {
    let theirs = existing
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(DIGEST));
    if theirs == Some(&digest(ours)) {
        return None;
    }
    Some(match theirs {
        Some(_) => m::CRD_OTHER_TYPES.text(),
        None => m::CRD_NOT_OURS.text(),
    })
}

/// Asks the cluster who else uses the CRD `existing` (see [`Users`]); `Err` with the API
/// server's words when it cannot be told (no right to list other namespaces, say).
async fn who_else_uses(
    client: &kube::Client,
    existing: &CustomResourceDefinition,
    own_namespace: &str,
    me: &Signature,
) -> Result<Users, String> {
    let elsewhere = users_elsewhere(client, existing, own_namespace).await?;
    let here =
        others_controllers(client, std::slice::from_ref(existing), own_namespace, me).await?;
    Ok(Users { elsewhere, here })
}

/// Whether a differing CRD is replaced, from who else uses it: `Ok` with the note to print
/// (it is written), `Err` with the refusal. Nobody else: replaced. Other controllers in one's
/// own namespace, objects in other namespaces, or users that cannot be told: refused, unless
/// forced (then replaced with a note that says so).
fn verdict(crd: &Differing, users: Result<Users, String>, force: bool) -> Result<String, String> {
    let users = match users {
        Ok(users) => users,
        Err(error) => {
            let why = t!(
                m::CRD_USERS_UNKNOWN,
                name = crd.name,
                whose = crd.whose,
                kind = crd.kind,
                error = error
            );
            return forced_or(why, force, m::NOT_REPLACING);
        }
    };
    if users.elsewhere.is_empty() && !users.here.is_empty() {
        let why = t!(
            m::CRD_USED_HERE,
            name = crd.name,
            whose = crd.whose,
            namespace = crd.own_namespace,
            foreign = describe_foreign(&users.here)
        );
        return forced_or(why, force, m::REFUSING_INSTALL);
    }
    if users.elsewhere.is_empty() {
        return Ok(t!(
            m::REPLACING_UNUSED,
            name = crd.name,
            whose = crd.whose,
            kind = crd.kind,
            namespace = crd.own_namespace
        ));
    }
    forced_or(
        used_elsewhere(crd, &users.elsewhere),
        force,
        m::REFUSING_INSTALL,
    )
}

/// Why a CRD that objects in other namespaces use is not replaced: how many, in how many
/// namespaces, the first five of them.
fn used_elsewhere(crd: &Differing, elsewhere: &BTreeMap<String, usize>) -> String {
    let count: usize = elsewhere.values().sum();
    let listed: Vec<String> = elsewhere
        .iter()
        .take(5)
        .map(|(ns, n)| format!("{ns}: {n}"))
        .collect();
    let more = if elsewhere.len() > 5 { ", …" } else { "" };
    let listed = format!("{}{more}", listed.join(", "));
    let used = match (count, elsewhere.len()) {
        (1, _) => m::CRD_USED_ONE,
        (_, 1) => m::CRD_USED_IN_ONE,
        _ => m::CRD_USED,
    };
    t!(
        used,
        name = crd.name,
        whose = crd.whose,
        count = count,
        kind = crd.kind,
        namespaces = elsewhere.len(),
        listed = listed
    )
}

/// With `force`, the note that the CRD is replaced all the same; without, the `refusal` of
/// `why`.
fn forced_or(why: String, force: bool, refusal: m::Msg) -> Result<String, String> {
    if force {
        Ok(t!(m::REPLACING_FORCED, why = why))
    } else {
        Err(t!(refusal, why = why))
    }
}

/// How many objects of the CRD's kind each namespace other than `own` holds.
async fn users_elsewhere(
    client: &kube::Client,
    crd: &CustomResourceDefinition,
    own: &str,
) -> Result<BTreeMap<String, usize>, String> {
    let Some(version) = crd.spec.versions.iter().find(|v| v.served) else {
        return Ok(BTreeMap::new());
    };
    let gvk = GroupVersionKind::gvk(&crd.spec.group, &version.name, &crd.spec.names.kind);
    let resource = ApiResource::from_gvk_with_plural(&gvk, &crd.spec.names.plural);
    let api = Api::<DynamicObject>::all_with(client.clone(), &resource);
    let mut users = BTreeMap::new();
    let mut params = ListParams::default().limit(500);
    loop {
        let page = api.list_metadata(&params).await.map_err(|e| said(&e))?;
        for object in &page.items {
            let ns = object.metadata.namespace.clone().unwrap_or_default();
            if ns != own {
                *users.entry(ns).or_insert(0) += 1;
            }
        }
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => break,
        }
    }
    Ok(users)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_is_the_same_for_the_same_types_and_differs_otherwise() {
        use kube::CustomResourceExt;
        let number = crate::solutions::number::Number::crd();
        assert_eq!(digest(&number), digest(&number.clone()));
        let mut edited = number.clone();
        edited.spec.versions[0].additional_printer_columns = None;
        assert_ne!(digest(&number), digest(&edited));
        assert_ne!(
            digest(&number),
            digest(&crate::solutions::tuple::Tuple::crd())
        );
    }

    #[test]
    fn descriptions_do_not_count_but_every_field_does() {
        use kube::CustomResourceExt;
        let number = crate::solutions::number::Number::crd();
        let mut json = serde_json::to_value(&number).expect("JSON");
        let status = "/spec/versions/0/schema/openAPIV3Schema/properties/status/properties";
        let generation = format!("{status}/observedGeneration");
        // The reference solution's doc comment on observed_generation, which the guide's
        // snippet and the exercise's hint leave out.
        assert!(json.pointer(&format!("{generation}/description")).is_some());
        let object = json.pointer_mut(&generation).and_then(Value::as_object_mut);
        object.expect("observedGeneration").remove("description");
        let typed: CustomResourceDefinition = serde_json::from_value(json.clone()).expect("a CRD");
        assert_eq!(digest(&typed), digest(&number));
        // A property named `description` is a field, and counts.
        let fields = json.pointer_mut(status).and_then(Value::as_object_mut);
        fields
            .expect("the status's fields")
            .insert("description".into(), serde_json::json!({"type": "string"}));
        let typed: CustomResourceDefinition = serde_json::from_value(json).expect("a CRD");
        assert_ne!(digest(&typed), digest(&number));
    }

    fn numbers(whose: &str) -> Differing<'static> {
        Differing {
            name: "numbers.math.example.com",
            whose: whose.to_string(),
            kind: "Number",
            own_namespace: "math-workshop-alice",
        }
    }

    fn elsewhere(counts: &[(&str, usize)]) -> BTreeMap<String, usize> {
        counts.iter().map(|(ns, n)| (ns.to_string(), *n)).collect()
    }

    fn users(counts: &[(&str, usize)], here: Vec<Foreign>) -> Result<Users, String> {
        Ok(Users {
            elsewhere: elsewhere(counts),
            here,
        })
    }

    #[test]
    fn a_crd_nobody_else_uses_is_replaced_with_a_note() {
        assert_eq!(
            verdict(&numbers("theirs"), users(&[], vec![]), false),
            Ok(
                "replacing the CRD numbers.math.example.com (theirs): no Number outside \
                namespace math-workshop-alice uses it"
                    .to_string()
            )
        );
    }

    #[test]
    fn a_crd_others_use_is_refused_unless_forced() {
        let bob = || {
            vec![Foreign {
                object: "Number/n".into(),
                controller: "math-workshop-bob".into(),
            }]
        };
        let here = verdict(&numbers("theirs"), users(&[], bob()), false);
        assert!(
            here.as_ref()
                .is_err_and(|e| e.starts_with("refusing to install your CRDs: ")
                    && e.contains("in your namespace math-workshop-alice, another controller")),
            "{here:?}"
        );
        let forced = verdict(&numbers("theirs"), users(&[], bob()), true);
        assert!(
            forced
                .as_ref()
                .is_ok_and(|n| n.ends_with(": replacing it anyway (forced)")),
            "{forced:?}"
        );
        let unknown = verdict(&numbers("theirs"), Err("forbidden (403)".into()), false);
        assert_eq!(
            unknown,
            Err(
                "the CRD numbers.math.example.com in the cluster differs from yours (theirs), \
                 and whether other namespaces have Numbers cannot be told (forbidden (403)): not \
                 replacing it. On a cluster of your own, add FORCE=1 (make) or --force"
                    .to_string()
            )
        );
    }

    #[test]
    fn objects_elsewhere_are_counted_and_the_first_five_namespaces_listed() {
        let one = used_elsewhere(&numbers("theirs"), &elsewhere(&[("bob", 1)]));
        assert!(
            one.ends_with("1 Number in 1 other namespace uses it (bob: 1)"),
            "{one}"
        );
        let six: Vec<(String, usize)> = (1..=6).map(|i| (format!("ns{i}"), 2)).collect();
        let six: Vec<(&str, usize)> = six.iter().map(|(ns, n)| (ns.as_str(), *n)).collect();
        let many = used_elsewhere(&numbers("theirs"), &elsewhere(&six));
        assert!(
            many.ends_with("12 Numbers in 6 other namespaces use it (ns1: 2, ns2: 2, ns3: 2, ns4: 2, ns5: 2, …)"),
            "{many}"
        );
        let refused = verdict(&numbers("theirs"), users(&[("bob", 2)], vec![]), false);
        assert!(
            refused
                .as_ref()
                .is_err_and(|e| e.contains("2 Numbers in 1 other namespace use it (bob: 2)")),
            "{refused:?}"
        );
    }
}
