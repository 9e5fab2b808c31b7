//! ResourceQuota object counts, in two halves as in a real cluster:
//!
//! - **Admission** (kube-apiserver's `ResourceQuota` plugin, on by default): a create in a
//!   namespace is checked, after validation and the other admission checks and before the
//!   store, against every ResourceQuota there whose `status.hard` names the resource
//!   (`count/<resource>.<group>`, `count/<resource>` for core kinds, and the legacy
//!   `configmaps`, `secrets`, `services`, `resourcequotas`). Going over a limit is a 403,
//!   `tuples.math.example.com "t6" is forbidden: exceeded quota: tq, requested:
//!   count/tuples.math.example.com=1, used: count/tuples.math.example.com=5, limited:
//!   count/tuples.math.example.com=5`; otherwise the quota's `status.used` is raised at once
//!   (a write of the quota), so the create is charged even if the store then refuses it
//!   (409 AlreadyExists), until the controller recounts. Dry runs are checked, not charged.
//! - **The quota controller** (kube-controller-manager's): it copies `spec.hard` into
//!   `status.hard` and counts `status.used`, asynchronously, in the server's background
//!   loop: when a quota is created or its `spec.hard` changes, after a delete of something a
//!   quota in that namespace counts ("replenishment", after
//!   [`QuotaController::replenish_delay`]), and every 5 minutes for every quota (its
//!   `--resource-quota-sync-period`). Until its first count a quota has no `status.hard` and
//!   limits nothing, as in a real cluster.

use super::{Key, State};
use crate::quantity::{self, Quantity};
use crate::registry::ResourceType;
use crate::status::{ApiError, ApiResult, Cause};
use crate::util::{self, name_of};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// kube-controller-manager's default `--resource-quota-sync-period`.
const FULL_RESYNC: Duration = Duration::from_secs(300);

const QUOTAS: &str = "/resourcequotas";

/// The quota controller's queue.
pub struct QuotaController {
    /// Namespaces whose quotas are to be recounted, and from when.
    due: BTreeMap<String, Instant>,
    /// How long after a delete the recount that frees its slot happens (default: at the
    /// next background pass). kube-controller-manager took 20–60 ms on a loopback control
    /// plane.
    pub replenish_delay: Duration,
    last_full_sync: Instant,
}

impl Default for QuotaController {
    fn default() -> Self {
        QuotaController {
            due: BTreeMap::new(),
            replenish_delay: Duration::ZERO,
            last_full_sync: Instant::now(),
        }
    }
}

/// Resources kube-apiserver never counts (`pkg/quota/v1/install`'s ignored resources).
fn ignored(rt: &ResourceType) -> bool {
    rt.is_core_events()
        || matches!(
            (rt.group.as_str(), rt.plural.as_str()),
            ("authentication.k8s.io", "tokenreviews") | ("authorization.k8s.io", _)
        )
}

/// The quota resource names under which one object of `rt` counts: the object-count name
/// (`ObjectCountQuotaResourceNameFor`) and, for some core kinds, a legacy alias.
pub fn counted_as(rt: &ResourceType) -> Vec<String> {
    if !rt.namespaced || ignored(rt) {
        return vec![];
    }
    let mut names = vec![if rt.group.is_empty() {
        format!("count/{}", rt.plural)
    } else {
        format!("count/{}.{}", rt.plural, rt.group)
    }];
    if rt.group.is_empty()
        && matches!(
            rt.plural.as_str(),
            "configmaps" | "secrets" | "services" | "resourcequotas"
        )
    {
        names.push(rt.plural.clone());
    }
    names
}

/// A map of resource name → quantity from a quota (`spec.hard`, `status.used`, ...).
fn quantities(v: Option<&Value>) -> BTreeMap<String, Quantity> {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), Quantity::parse(v.as_str()?)?)))
                .collect()
        })
        .unwrap_or_default()
}

fn render(m: &BTreeMap<String, Quantity>) -> Value {
    Value::Object(
        m.iter()
            .map(|(k, q)| (k.clone(), json!(q.canonical())))
            .collect::<Map<String, Value>>(),
    )
}

/// `prettyPrint`: `a=1,b=2`, sorted by name.
fn pretty(m: &BTreeMap<String, Quantity>) -> String {
    m.iter()
        .map(|(k, q)| format!("{k}={}", q.canonical()))
        .collect::<Vec<_>>()
        .join(",")
}

/// The ResourceQuota strategy: `spec.hard` holds quantities (400 otherwise, as decoding
/// fails), none negative (422), written back in canonical form.
pub(super) fn normalize_quota(obj: &mut Value, causes: &mut Vec<Cause>) -> ApiResult<()> {
    let Some(hard) = obj
        .get_mut("spec")
        .and_then(|s| s.get_mut("hard"))
        .and_then(Value::as_object_mut)
    else {
        return Ok(());
    };
    for (k, v) in hard.iter_mut() {
        let q = v
            .as_str()
            .and_then(Quantity::parse)
            .or_else(|| v.as_i64().map(Quantity::from_count))
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "ResourceQuota in version \"v1\" cannot be handled as a ResourceQuota: {}",
                    quantity::SYNTAX_ERROR
                ))
            })?;
        if q.is_negative() {
            causes.push(Cause::invalid(
                &format!("spec.hard[{k}]"),
                &format!("{:?}", q.canonical()),
                "must be greater than or equal to 0",
            ));
        }
        *v = json!(q.canonical());
    }
    Ok(())
}

/// A quota that limits a resource being created: the quota as stored, its `status.hard` and
/// `status.used`, and the names it limits the resource by.
struct Limiting {
    quota: Value,
    hard: BTreeMap<String, Quantity>,
    used: BTreeMap<String, Quantity>,
    limited: Vec<String>,
}

/// The quotas among `quotas` that limit a resource counted as `names`, or the refusal's
/// message when one of them has not counted its use of the resource yet.
fn limiting_quotas(quotas: &[(Key, Value)], names: &[String]) -> Result<Vec<Limiting>, String> {
    let mut out = vec![];
    for (_, q) in quotas {
        let status = q.get("status");
        let hard = quantities(status.and_then(|s| s.get("hard")));
        let used = quantities(status.and_then(|s| s.get("used")));
        let limited: Vec<String> = names
            .iter()
            .filter(|n| hard.contains_key(*n))
            .cloned()
            .collect();
        if limited.is_empty() {
            continue;
        }
        if limited.iter().any(|n| !used.contains_key(n)) {
            let mut list: Vec<&str> = limited.iter().map(String::as_str).collect();
            list.sort();
            return Err(format!(
                "status unknown for quota: {}, resources: {}",
                name_of(q),
                list.join(",")
            ));
        }
        out.push(Limiting {
            quota: q.clone(),
            hard,
            used,
            limited,
        });
    }
    Ok(out)
}

/// The quota's `status.used` with one more of the resource, or the refusal's message
/// (kube-apiserver's, naming only the exceeded names) when that goes over `status.hard`.
fn charged(l: &Limiting) -> Result<BTreeMap<String, Quantity>, String> {
    let mut new_used = l.used.clone();
    let mut requested = BTreeMap::new();
    let mut exceeded = BTreeSet::new();
    for n in &l.limited {
        let one = Quantity::from_count(1);
        let u = l.used.get(n).copied().unwrap_or(Quantity::from_count(0));
        let total = u.add(one);
        requested.insert(n.clone(), one);
        if l.hard
            .get(n)
            .is_some_and(|h| total.cmp_value(h) == std::cmp::Ordering::Greater)
        {
            exceeded.insert(n.clone());
        }
        new_used.insert(n.clone(), total);
    }
    if exceeded.is_empty() {
        return Ok(new_used);
    }
    let only = |m: &BTreeMap<String, Quantity>| -> BTreeMap<String, Quantity> {
        m.iter()
            .filter(|(k, _)| exceeded.contains(*k))
            .map(|(k, v)| (k.clone(), *v))
            .collect()
    };
    Err(format!(
        "exceeded quota: {}, requested: {}, used: {}, limited: {}",
        name_of(&l.quota),
        pretty(&only(&requested)),
        pretty(&only(&l.used)),
        pretty(&only(&l.hard)),
    ))
}

impl State {
    /// ResourceQuota admission for creating `obj` (of `rt`, already named and validated).
    /// Refuses with 403 when a quota would be exceeded, else charges the quotas (not for
    /// dry runs).
    pub(super) fn quota_admit(
        &mut self,
        rt: &ResourceType,
        obj: &Value,
        dry_run: bool,
    ) -> ApiResult<()> {
        let Some(ns) = util::meta_str(obj, "namespace").filter(|n| !n.is_empty()) else {
            return Ok(());
        };
        let names = counted_as(rt);
        if names.is_empty() {
            return Ok(());
        }
        let forbidden =
            |message: String| ApiError::forbidden(&rt.plural, &rt.group, name_of(obj), &message);
        let limiting = limiting_quotas(&self.quotas_in(ns), &names).map_err(forbidden)?;
        let mut charges = vec![];
        for l in limiting {
            let new_used = charged(&l).map_err(forbidden)?;
            charges.push((l.quota, new_used));
        }
        if dry_run {
            return Ok(());
        }
        let Some(qrt) = self.rt_of("", "resourcequotas") else {
            return Ok(());
        };
        for (mut q, new_used) in charges {
            let mut used = q
                .pointer("/status/used")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            if let Value::Object(m) = render(&new_used) {
                used.extend(m);
            }
            q["status"]["used"] = Value::Object(used);
            self.put(&qrt, q);
        }
        Ok(())
    }

    fn quotas_in(&self, ns: &str) -> Vec<(Key, Value)> {
        let start = Key {
            storage: QUOTAS.into(),
            ns: ns.into(),
            name: String::new(),
        };
        self.objects
            .range(start..)
            .take_while(|(k, _)| k.storage == QUOTAS && k.ns == ns)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Called by storage for every change: queues the recounts the quota controller would
    /// do (a quota created or its `spec.hard` changed: now; an object a quota in its
    /// namespace counts deleted: after the replenishment delay).
    pub(super) fn quota_track(&mut self, key: &Key, old: Option<&Value>, new: Option<&Value>) {
        if key.ns.is_empty() {
            return;
        }
        let now = Instant::now();
        if key.storage == QUOTAS {
            if let Some(n) = new
                && old.is_none_or(|o| o.pointer("/spec/hard") != n.pointer("/spec/hard"))
            {
                self.quota.due.insert(key.ns.clone(), now);
            }
            return;
        }
        if new.is_some() || old.is_none() || !self.quota_namespaces().contains(&key.ns) {
            return;
        }
        let Some(rt) = self.registry.find_storage(&key.storage) else {
            return;
        };
        let names = counted_as(rt);
        let counts = self.quotas_in(&key.ns).iter().any(|(_, q)| {
            q.pointer("/spec/hard")
                .and_then(Value::as_object)
                .is_some_and(|h| names.iter().any(|n| h.contains_key(n)))
        });
        if counts {
            let at = now + self.quota.replenish_delay;
            let due = self.quota.due.entry(key.ns.clone()).or_insert(at);
            *due = (*due).min(at);
        }
    }

    fn quota_namespaces(&self) -> BTreeSet<String> {
        let start = Key {
            storage: QUOTAS.into(),
            ns: String::new(),
            name: String::new(),
        };
        self.objects
            .range(start..)
            .take_while(|(k, _)| k.storage == QUOTAS)
            .map(|(k, _)| k.ns.clone())
            .collect()
    }

    /// When the quota controller next has work (for the background loop's sleep).
    pub fn quota_next_due(&self) -> Option<Instant> {
        self.quota.due.values().min().copied()
    }

    /// The quota controller's pass: recounts the namespaces that are due (all of them
    /// every 5 minutes) and writes each quota's status if it changed. Returns whether it
    /// wrote.
    pub fn quota_sync(&mut self) -> bool {
        let now = Instant::now();
        if now.duration_since(self.quota.last_full_sync) >= FULL_RESYNC {
            self.quota.last_full_sync = now;
            for ns in self.quota_namespaces() {
                self.quota.due.insert(ns, now);
            }
        }
        let ready: Vec<String> = self
            .quota
            .due
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(ns, _)| ns.clone())
            .collect();
        let mut wrote = false;
        for ns in ready {
            self.quota.due.remove(&ns);
            wrote |= self.recount(&ns);
        }
        wrote
    }

    /// `syncResourceQuota` for every quota of a namespace.
    fn recount(&mut self, ns: &str) -> bool {
        let Some(qrt) = self.rt_of("", "resourcequotas") else {
            return false;
        };
        let mut wrote = false;
        for (_, q) in self.quotas_in(ns) {
            let hard = quantities(q.pointer("/spec/hard"));
            let used: BTreeMap<String, Quantity> = hard
                .keys()
                .map(|k| (k.clone(), Quantity::from_count(self.count_for(ns, k))))
                .collect();
            let status = json!({"hard": render(&hard), "used": render(&used)});
            if q.get("status") != Some(&status) {
                let mut n = q.clone();
                n["status"] = status;
                self.put(&qrt, n);
                wrote = true;
            }
        }
        wrote
    }

    /// How many objects in `ns` a quota resource name counts (0 for names this server
    /// has no resource for, as the quota controller reports unknown names).
    fn count_for(&self, ns: &str, resource_name: &str) -> i64 {
        let rt = self
            .registry
            .types
            .iter()
            .find(|rt| counted_as(rt).iter().any(|n| n == resource_name))
            .cloned();
        match rt {
            Some(rt) => self.scan(&rt, Some(ns)).count() as i64,
            None => 0,
        }
    }

    /// Sets how long after a delete the quota controller recounts.
    pub fn set_quota_replenish_delay(&mut self, delay: Duration) {
        self.quota.replenish_delay = delay;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quota(hard: i64, used: i64) -> Vec<(Key, Value)> {
        let key = Key {
            storage: QUOTAS.into(),
            ns: "default".into(),
            name: "tq".into(),
        };
        let q = json!({"metadata": {"name": "tq"}, "status": {
            "hard": {"count/tuples.math.example.com": hard.to_string()},
            "used": {"count/tuples.math.example.com": used.to_string()},
        }});
        vec![(key, q)]
    }

    #[test]
    fn a_create_over_the_hard_limit_is_refused_naming_the_quota() {
        let names = vec!["count/tuples.math.example.com".to_string()];
        let limiting = limiting_quotas(&quota(5, 4), &names).expect("counted");
        let used = charged(&limiting[0]).expect("within the limit");
        assert_eq!(render(&used), json!({"count/tuples.math.example.com": "5"}));
        let limiting = limiting_quotas(&quota(5, 5), &names).expect("counted");
        assert_eq!(
            charged(&limiting[0]).err(),
            Some(
                "exceeded quota: tq, requested: count/tuples.math.example.com=1, \
                 used: count/tuples.math.example.com=5, limited: count/tuples.math.example.com=5"
                    .to_string()
            )
        );
        let other = vec!["count/numbers.math.example.com".to_string()];
        assert!(
            limiting_quotas(&quota(5, 5), &other)
                .expect("counted")
                .is_empty()
        );
    }
}
