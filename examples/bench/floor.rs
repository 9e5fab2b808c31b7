//! The floor: what a tight client needs to write the objects and statuses a converged
//! Fermat holds, on the same server and in the same run as the manager. Nothing waits for a
//! watch, nothing is computed: 32 requests in flight, each object created and its status
//! written right after.

use std::fmt::Debug;
use std::time::{Duration, Instant};

use futures::{FutureExt, StreamExt, TryStreamExt, stream};
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
