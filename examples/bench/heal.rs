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

/// Numbers of `count` Tuples of a Fermat `n`, spread over its Tuples: deleted at once as a
/// restarted manager reports ready, each Tuple is somewhere in the settled backlog that the
/// initial list queued (the order the cache hands them out in is a hash map's).
pub fn spread(n: i64, count: usize) -> Vec<String> {
    let tuples = (n / 2).max(1);
    (0..count as i64)
        .map(|i| {
            let a = 1 + (i * 7919) % tuples;
            format!("f-{a}-and-{}-0", n - a)
        })
        .collect()
}

/// Delete the Numbers `names` at once and time each one's return: the median and the slowest.
pub async fn delete_all_and_wait(
    api: &Api<Number>,
    names: &[String],
) -> anyhow::Result<(Duration, Duration)> {
    let returns = futures::future::join_all(names.iter().map(|n| delete_and_wait(api, n))).await;
    let mut back = returns.into_iter().collect::<anyhow::Result<Vec<_>>>()?;
    Ok((percentile(&mut back, 50), percentile(&mut back, 100)))
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
