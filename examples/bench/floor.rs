//! The floor: what a tight client needs to write the objects and statuses a converged
//! Fermat holds, on the same server and in the same run as the manager. Nothing waits for a
//! watch, nothing is computed: 32 requests in flight, each object created and its status
//! written right after.

use std::time::{Duration, Instant};

use futures::{FutureExt, StreamExt, TryStreamExt, stream};
use kube::Client;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use math_controller::api::{Number, NumberSpec, Tuple, TupleSpec};
use serde_json::json;

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
    let tuple_writes = (0..tuples).map(|a| {
        let api = tuple_api.clone();
        let status = json!({"status": {
            "observedGeneration": 1, "allSquares": false, "readyNumbers": 2,
            "desiredNumbers": 2, "conditions": condition("2/2 Numbers ready; not all are squares")
        }});
        async move {
            let name = format!("t-{a}");
            let spec = TupleSpec {
                numbers: vec![a as i64, 1],
            };
            api.create(&PostParams::default(), &Tuple::new(&name, spec))
                .await?;
            api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
                .await?;
            Ok::<_, kube::Error>(())
        }
        .boxed()
    });
    let number_writes = (0..2 * tuples).map(|i| {
        let api = number_api.clone();
        let status = json!({"status": {
            "observedGeneration": 1, "fizzBuzz": "1", "isSquare": false, "isPrime": false,
            "conditions": condition("1 is not prime")
        }});
        async move {
            let name = format!("n-{i}");
            let spec = NumberSpec { value: i as i64 };
            api.create(&PostParams::default(), &Number::new(&name, spec))
                .await?;
            api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
                .await?;
            Ok::<_, kube::Error>(())
        }
        .boxed()
    });
    stream::iter(tuple_writes.chain(number_writes))
        .buffer_unordered(IN_FLIGHT)
        .try_collect::<Vec<_>>()
        .await?;
    Ok(start.elapsed())
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
