//! The floor: what a tight client needs to write the objects and statuses a converged
//! Fermat holds, on the same server and in the same run as the manager. Nothing waits for a
//! watch, nothing is computed: 32 requests in flight, each object created and its status
//! written right after.

use std::fmt::Debug;
use std::time::{Duration, Instant};

use futures::{FutureExt, StreamExt, TryStreamExt, stream};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, Resource};
use math_controller::api::{Number, NumberSpec, Tuple, TupleSpec};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// Requests in flight: what the manager's create fan-out also keeps per reconcile.
pub const IN_FLIGHT: usize = 32;

/// Write `tuples` Tuples and twice as many Numbers, each with a status like the manager's
/// (a Ready condition included), into `ns`; answers how long it took.
pub async fn run(client: &Client, ns: &str, tuples: usize) -> anyhow::Result<Duration> {
    let tuple_api: Api<Tuple> = Api::namespaced(client.clone(), ns);
    let number_api: Api<Number> = Api::namespaced(client.clone(), ns);
    let condition = |message: &str| {
        json!([{
            "type": "Ready", "status": "True", "reason": "Computed", "message": message,
            "observedGeneration": 1, "lastTransitionTime": "2026-01-01T00:00:00Z"
        }])
    };
    let start = Instant::now();
    let tuple_status = json!({"status": {
        "observedGeneration": 1, "allSquares": false, "readyNumbers": 2,
        "desiredNumbers": 2, "conditions": condition("2/2 Numbers ready; not all are squares")
    }});
    let number_status = json!({"status": {
        "observedGeneration": 1, "fizzBuzz": "1", "isSquare": false, "isPrime": false,
        "conditions": condition("1 is not prime")
    }});
    let tuple_writes = (0..tuples).map(|a| {
        let spec = TupleSpec {
            numbers: vec![a as i64, 1],
        };
        let tuple = Tuple::new(&format!("t-{a}"), spec);
        create_with_status(tuple_api.clone(), tuple, tuple_status.clone()).boxed()
    });
    let number_writes = (0..2 * tuples).map(|i| {
        let number = Number::new(&format!("n-{i}"), NumberSpec { value: i as i64 });
        create_with_status(number_api.clone(), number, number_status.clone()).boxed()
    });
    stream::iter(tuple_writes.chain(number_writes))
        .buffer_unordered(IN_FLIGHT)
        .try_collect::<Vec<_>>()
        .await?;
    Ok(start.elapsed())
}

/// [`run`], while three watches (Numbers, Tuples, Fermats in `ns`, as the manager's) take in
/// every change: what the floor costs with the watch traffic a controller cannot do without.
pub async fn run_watched(client: &Client, ns: &str, tuples: usize) -> anyhow::Result<Duration> {
    use kube::runtime::watcher;
    use math_controller::api::Fermat;
    fn drain<K>(api: Api<K>) -> tokio::task::JoinHandle<()>
    where
        K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
        K::DynamicType: Default,
    {
        tokio::spawn(watcher(api, watcher::Config::default()).for_each(|_| async {}))
    }
    let watches = [
        drain(Api::<Number>::namespaced(client.clone(), ns)),
        drain(Api::<Tuple>::namespaced(client.clone(), ns)),
        drain(Api::<Fermat>::namespaced(client.clone(), ns)),
    ];
    // The watches are open before the first write.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let took = run(client, ns, tuples).await;
    for watch in watches {
        watch.abort();
    }
    took
}

/// One object created, then its status written.
async fn create_with_status<K>(api: Api<K>, obj: K, status: Value) -> Result<(), kube::Error>
where
    K: Resource + Clone + Serialize + DeserializeOwned + Debug,
{
    let name = obj.meta().name.clone().unwrap_or_default();
    api.create(&PostParams::default(), &obj).await?;
    api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
        .await?;
    Ok(())
}

/// Whether something created Numbers of its own next to the floor's (named after a Tuple,
/// `t-0-0`): a math-controller already running in the cluster, which would also compete
/// with the one measured.
pub async fn someone_else_reconciles(client: &Client, ns: &str) -> bool {
    tokio::time::sleep(Duration::from_secs(1)).await;
    let numbers: Api<Number> = Api::namespaced(client.clone(), ns);
    let params = ListParams::default().limit(500);
    numbers.list(&params).await.is_ok_and(|list| {
        list.items.iter().any(|n| {
            n.metadata
                .name
                .as_deref()
                .is_some_and(|name| name.starts_with("t-"))
        })
    })
}

/// The owned floor: what the manager writes, in the order it must. The Fermat is created
/// first; each Tuple carries a controller ownerReference to it (controller and
/// blockOwnerDeletion true), so it can only be created once the Fermat's UID is known, and
/// each Number one to its Tuple, so a Tuple's Numbers wait for its create's answer; every
/// status is whole (its Ready condition, counts, answers) and the Fermat's status is written
/// last, when everything below is written. 32 requests in flight, as [`run`].
pub async fn run_owned(client: &Client, ns: &str, n: i64) -> anyhow::Result<Duration> {
    use math_controller::api::{Fermat, FermatSpec};
    let start = Instant::now();
    let fermat_api: Api<Fermat> = Api::namespaced(client.clone(), ns);
    let tuple_api: Api<Tuple> = Api::namespaced(client.clone(), ns);
    let number_api: Api<Number> = Api::namespaced(client.clone(), ns);
    let fermat = fermat_api
        .create(
            &PostParams::default(),
            &Fermat::new("f", FermatSpec { number: n }),
        )
        .await?;
    let fermat_owner = owner_of("Fermat", &fermat)?;
    let tuples = (1..=n / 2).map(|a| {
        let apis = (tuple_api.clone(), number_api.clone());
        owned_tuple(
            apis,
            fermat_owner.clone(),
            format!("f-{a}-and-{}", n - a),
            [a, n - a],
        )
    });
    // Each Tuple's chain has at most two requests in flight, so 16 chains keep 32 in flight.
    stream::iter(tuples)
        .buffer_unordered(IN_FLIGHT / 2)
        .try_collect::<Vec<_>>()
        .await?;
    let status = json!({"status": {
        "observedGeneration": 1, "twoSquaresFound": false, "decompositions": [],
        "isPrime": false, "oneModFour": false, "readyTuples": n / 2, "desiredTuples": n / 2,
        "conditions": ready_condition("Computed", "all Tuples ready")
    }});
    fermat_api
        .patch_status("f", &PatchParams::default(), &Patch::Merge(&status))
        .await?;
    Ok(start.elapsed())
}

/// One Tuple's chain of the owned floor: the Tuple `name` of `numbers` owned by `owner`, once
/// created its two Numbers (owned by it, each with its status) at once, then its status.
async fn owned_tuple(
    (tuple_api, number_api): (Api<Tuple>, Api<Number>),
    owner: OwnerReference,
    name: String,
    numbers: [i64; 2],
) -> anyhow::Result<()> {
    let mut tuple = Tuple::new(
        &name,
        TupleSpec {
            numbers: numbers.to_vec(),
        },
    );
    tuple.metadata.owner_references = Some(vec![owner]);
    let tuple = tuple_api.create(&PostParams::default(), &tuple).await?;
    let tuple_owner = owner_of("Tuple", &tuple)?;
    let number_writes = numbers.iter().enumerate().map(|(i, value)| {
        let mut number = Number::new(&format!("{name}-{i}"), NumberSpec { value: *value });
        number.metadata.owner_references = Some(vec![tuple_owner.clone()]);
        let status = json!({"status": {
            "observedGeneration": 1, "fizzBuzz": value.to_string(), "isSquare": false,
            "isPrime": false, "conditions": ready_condition("Computed", "computed")
        }});
        create_with_status(number_api.clone(), number, status)
    });
    futures::future::try_join_all(number_writes).await?;
    let status = json!({"status": {
        "observedGeneration": 1, "allSquares": false, "readyNumbers": 2,
        "desiredNumbers": 2,
        "conditions": ready_condition("Computed", "2/2 Numbers ready; not all are squares")
    }});
    tuple_api
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
        .await?;
    Ok(())
}

/// A status's conditions: Ready=True for generation 1, with `reason` and `message`.
fn ready_condition(reason: &str, message: &str) -> Value {
    json!([{
        "type": "Ready", "status": "True", "reason": reason, "message": message,
        "observedGeneration": 1, "lastTransitionTime": "2026-01-01T00:00:00Z"
    }])
}

/// A controller ownerReference to `obj`, as the manager writes it.
fn owner_of<K: Resource<DynamicType = ()>>(kind: &str, obj: &K) -> anyhow::Result<OwnerReference> {
    let uid = obj
        .meta()
        .uid
        .clone()
        .ok_or_else(|| anyhow::anyhow!("the created {kind} has no uid"))?;
    Ok(OwnerReference {
        api_version: K::api_version(&()).to_string(),
        kind: kind.to_string(),
        name: obj.meta().name.clone().unwrap_or_default(),
        uid,
        controller: Some(true),
        block_owner_deletion: Some(true),
    })
}
