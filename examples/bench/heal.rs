//! How fast a deleted Number comes back: the design's promise (p99 under 200 ms, whatever
//! the Fermat's size), timed from the bench's delete to a new Number that is Ready; and right
//! after a restart, while every settled object waits for its turn (issue 48: within 1 s).

use std::time::{Duration, Instant};

use kube::Client;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams};
use math_controller::api::Number;

/// Delete one Number at a time and time its return (a new UID, Ready): p50 and p99.
pub async fn heal(
    client: &Client,
    ns: &str,
    n: i64,
    samples: usize,
) -> anyhow::Result<(Duration, Duration)> {
    let api: Api<Number> = Api::namespaced(client.clone(), ns);
    let tuples = (n / 2).max(1);
    let mut ready_again = Vec::new();
    for i in 0..samples {
        let a = 1 + (i as i64 * 7919) % tuples;
        let name = format!("f-{a}-and-{}-{}", n - a, i % 2);
        ready_again.push(delete_and_wait(&api, &name).await?);
    }
    Ok((
        percentile(&mut ready_again, 50),
        percentile(&mut ready_again, 99),
    ))
}

/// The Tuple of a Fermat `n` that a list brings last (the greatest name): after a restart,
/// the one whose turn comes after every other settled Tuple's, unless a change makes it
/// urgent.
pub fn listed_last(n: i64) -> String {
    (1..=(n / 2).max(1))
        .map(|a| format!("f-{a}-and-{}", n - a))
        .max()
        .unwrap_or_default()
}

/// Delete the Number `name` and time its return: a new UID, Ready.
pub async fn delete_and_wait(api: &Api<Number>, name: &str) -> anyhow::Result<Duration> {
    let old_uid = api.get(name).await?.uid();
    let t0 = Instant::now();
    api.delete(name, &DeleteParams::default()).await?;
    loop {
        if let Some(number) = api.get_opt(name).await?
            && number.uid() != old_uid
            && number_ready(&number)
        {
            return Ok(t0.elapsed());
        }
        anyhow::ensure!(
            t0.elapsed() < Duration::from_secs(60),
            "{name} did not come back"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

fn number_ready(number: &Number) -> bool {
    number.status.as_ref().is_some_and(|s| {
        s.observed_generation == number.metadata.generation
            && s.conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
    })
}

fn percentile(samples: &mut [Duration], p: usize) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    samples.sort();
    let index = ((samples.len() * p).div_ceil(100)).clamp(1, samples.len()) - 1;
    samples[index]
}
