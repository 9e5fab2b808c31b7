//! The summary table: one row per size (and per run, with `BENCH_REPEAT`), the row
//! docs/benchmark.md's tables are made of, and the medians of repeated runs.

use std::time::Duration;

use crate::fair::Fair;
use crate::manager::Writes;

/// One size's results, for the summary table.
pub struct Row {
    pub n: i64,
    pub floor: Duration,
    pub owned: Duration,
    pub converge: Duration,
    pub fair: Option<Fair>,
    pub writes: Writes,
    pub minimum: u64,
    pub steady: u64,
    pub restart: u64,
    pub heal: (Duration, Duration),
    pub rss_mib: Option<f64>,
    pub outage: Option<Duration>,
    pub restart_apiserver: Option<Duration>,
}

/// The table of `rows`, then for each of `sizes` measured `repeat` times (more than once) a
/// line of its medians.
pub fn print(sizes: &[i64], repeat: usize, rows: &[Row]) {
    let medians = medians(sizes, repeat, rows);
    println!(
        "\n| n | bare floor | owned floor | manager | ratio (owned / bare) | Fermat 13 alone / during / after restart | big alone / beside a Fermat 13 | object writes (minimum) | progress reports | Event writes | steady 3 s | after restart | heal p50 / p99 | peak RSS | outage → Ready | apiserver restart → Ready |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        println!("{}", table_row(r));
    }
    for line in medians {
        println!("{line}");
    }
    for line in per_object(rows) {
        println!("{line}");
    }
}

/// The objects a Fermat of `n` puts in the manager's caches: itself, its n/2 Tuples and
/// their n Numbers.
fn cached_objects(n: i64) -> i64 {
    1 + n / 2 + n
}

/// What each cached object costs in memory: the slope of the peak RSS between each two
/// sizes measured (the first run of each), so that what every process holds whatever its
/// objects (the binary, the runtime, buffers) drops out.
fn per_object(rows: &[Row]) -> Vec<String> {
    let mut firsts: Vec<(i64, f64)> = Vec::new();
    for r in rows {
        if let Some(mib) = r.rss_mib
            && !firsts.iter().any(|(n, _)| *n == r.n)
        {
            firsts.push((r.n, mib));
        }
    }
    firsts.sort_by_key(|(n, _)| *n);
    (firsts.windows(2))
        .map(|pair| {
            let ((small, low), (big, high)) = (pair[0], pair[1]);
            let objects = cached_objects(big) - cached_objects(small);
            let kib = (high - low) * 1024.0 / objects as f64;
            format!(
                "memory per cached object, n = {small} → {big}: {kib:.2} KiB (peak RSS {low:.1} → {high:.1} MiB over {objects} more objects)"
            )
        })
        .collect()
}

/// Per size, when measured more than once: the medians of the floor, the manager and their
/// ratio, and every run's ratio (a real server's moves a lot between runs).
fn medians(sizes: &[i64], repeat: usize, rows: &[Row]) -> Vec<String> {
    sizes
        .iter()
        .filter(|_| repeat > 1)
        .map(|&n| {
            let of = |f: fn(&Row) -> f64| median(rows.iter().filter(|r| r.n == n).map(f));
            format!(
                "n = {n}, {repeat} runs: floor {:.2} s, manager {:.2} s, ratio {:.2}× (medians; ratios {})",
                of(|r| r.floor.as_secs_f64()),
                of(|r| r.converge.as_secs_f64()),
                of(|r| r.converge.as_secs_f64() / r.floor.as_secs_f64()),
                rows.iter()
                    .filter(|r| r.n == n)
                    .map(|r| format!("{:.2}", r.converge.as_secs_f64() / r.floor.as_secs_f64()))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
        .collect()
}

/// One size's row of the table.
fn table_row(r: &Row) -> String {
    format!(
        "| {} | {:.2} s | {:.2} s | {:.2} s | {:.2}× / {:.2}× | {} | {} | {} ({}) | {} | {} | {} | {} | {:.0} / {:.0} ms | {} | {} | {} |",
        r.n,
        r.floor.as_secs_f64(),
        r.owned.as_secs_f64(),
        r.converge.as_secs_f64(),
        r.converge.as_secs_f64() / r.owned.as_secs_f64(),
        r.converge.as_secs_f64() / r.floor.as_secs_f64(),
        r.fair.as_ref().map_or("–".into(), |f| format!(
            "{:.2} / {:.2} / {:.2} s",
            f.small_alone.as_secs_f64(),
            f.small_during.as_secs_f64(),
            f.small_after_restart.as_secs_f64()
        )),
        r.fair.as_ref().map_or("–".into(), |f| format!(
            "{:.2} / {:.2} s",
            r.converge.as_secs_f64(),
            f.big_during.as_secs_f64()
        )),
        r.writes.objects(),
        r.minimum,
        r.writes.fermat_statuses.saturating_sub(1),
        r.writes.events,
        r.steady,
        r.restart,
        ms(r.heal.0),
        ms(r.heal.1),
        r.rss_mib.map_or("?".into(), |m| format!("{m:.1} MiB")),
        r.outage
            .map_or("–".into(), |d| format!("{:.2} s", d.as_secs_f64())),
        r.restart_apiserver
            .map_or("–".into(), |d| format!("{:.2} s", d.as_secs_f64())),
    )
}

/// The median of some numbers (the mean of the middle two for an even count).
fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.collect();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// `d` in milliseconds.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
