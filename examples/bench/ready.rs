//! When a Fermat counts as Ready, and how the bench waits for it without costing the API
//! server what the floor does not spend.

use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use math_controller::api::Fermat;

/// Whether `f` says Ready=True for its current generation.
fn ready(f: &Fermat) -> bool {
    f.status.as_ref().is_some_and(|status| {
        status.observed_generation == f.metadata.generation
            && status
                .conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
    })
}

/// Wait until Fermat `name` is Ready for its generation: told by a watch of it, and looked at
/// every `poll` as well (a watch cut by an outage is noticed by the poll). A converging
/// manager is watched, not polled every 20 ms: 3000 GETs a minute cost the API server time
/// the floor does not spend.
pub async fn wait_ready(
    api: &Api<Fermat>,
    name: &str,
    limit: Duration,
    poll: Duration,
) -> anyhow::Result<()> {
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut changes = watcher(api.clone(), config).applied_objects().boxed();
    let start = Instant::now();
    loop {
        // A failed poll (the server just back from an outage) is only a poll to repeat.
        if let Ok(Some(f)) = api.get_opt(name).await
            && ready(&f)
        {
            return Ok(());
        }
        let next_poll = tokio::time::sleep(poll);
        tokio::pin!(next_poll);
        loop {
            tokio::select! {
                _ = &mut next_poll => break,
                change = changes.next() => match change {
                    Some(Ok(f)) if ready(&f) => return Ok(()),
                    Some(_) => {}
                    None => break,
                },
            }
        }
        anyhow::ensure!(
            start.elapsed() < limit,
            "Fermat {name} not Ready after {limit:?}"
        );
    }
}
