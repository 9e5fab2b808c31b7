//! Where a run's time went: the manager's writes and the machine's busy cores in each tenth
//! of the run (a slow tenth with idle cores was waiting, not computing), and the CPU time of
//! the processes the bench is told to watch.

use std::time::Duration;

use crate::manager::{self, Sample};

/// The write rate in each tenth of `run`, from cumulative samples.
pub fn tenths(samples: &[Sample], run: Duration) -> String {
    let slice = run / 10;
    (0..10u32)
        .map(|i| {
            let writes = at(samples, slice * (i + 1))
                .writes
                .saturating_sub(at(samples, slice * i).writes);
            format!("{:.0}", writes as f64 / slice.as_secs_f64())
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// How many of the machine's cores were busy in each tenth of `run` (whatever used them):
/// a slow tenth with idle cores was waiting, not computing.
pub fn busy_tenths(samples: &[Sample], run: Duration) -> Option<String> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let slice = run / 10;
    (0..10u32)
        .map(|i| {
            let (busy_after, total_after) = at(samples, slice * (i + 1)).cpu?;
            let (busy_before, total_before) = at(samples, slice * i).cpu?;
            let total = total_after.saturating_sub(total_before).max(1) as f64;
            let busy = busy_after.saturating_sub(busy_before) as f64;
            Some(format!("{:.1}", cores * busy / total))
        })
        .collect::<Option<Vec<_>>>()
        .map(|tenths| tenths.join(" "))
}

/// The last sample at or before `t` (the first one if none).
fn at(samples: &[Sample], t: Duration) -> Sample {
    let first = Sample {
        at: Duration::ZERO,
        writes: 0,
        cpu: None,
    };
    samples
        .iter()
        .take_while(|s| s.at <= t)
        .last()
        .or(samples.first())
        .copied()
        .unwrap_or(first)
}

/// `BENCH_PIDS="name=pid ..."`: the processes whose CPU time is reported.
/// The bench itself is one of them: it is the floor's client, and polls during the manager's run.
pub fn watched_pids() -> Vec<(String, u32)> {
    let mut pids: Vec<(String, u32)> = std::env::var("BENCH_PIDS")
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|w| {
            let (name, pid) = w.split_once('=')?;
            Some((name.to_string(), pid.parse().ok()?))
        })
        .collect();
    pids.push(("bench".into(), std::process::id()));
    pids
}

/// The CPU time each watched process has used so far (`None`: gone, or not on Linux).
pub fn cpu_times(pids: &[(String, u32)]) -> Vec<Option<Duration>> {
    pids.iter().map(|(_, pid)| manager::cpu_of(*pid)).collect()
}

/// CPU time each watched process used since `before`.
pub fn cpu_spent(pids: &[(String, u32)], before: &[Option<Duration>]) -> Vec<(String, Duration)> {
    pids.iter()
        .zip(before)
        .filter_map(|((name, pid), before)| {
            let spent = manager::cpu_of(*pid)?.saturating_sub((*before)?);
            Some((name.clone(), spent))
        })
        .collect()
}
