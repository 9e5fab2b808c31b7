//! The process series every client_golang program exports (its process collector, which
//! controller-runtime registers): CPU time, resident and virtual memory, start time, open file
//! descriptors. kubebuilder's `controller-resources-metrics.json` dashboard draws the first
//! two. Read from `/proc/self` at each scrape; on a system without `/proc` they are absent, as
//! client_golang leaves them out where it cannot read them.

use std::time::{SystemTime, UNIX_EPOCH};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// What `/proc/self/stat` says of this process.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProcessStat {
    /// User and system CPU time, in clock ticks.
    pub cpu_ticks: u64,
    /// Start time after boot, in clock ticks.
    pub start_ticks: u64,
    /// Virtual memory size, in bytes.
    pub virtual_bytes: u64,
    /// Resident set size, in pages.
    pub resident_pages: u64,
}

/// Parses `/proc/self/stat` (proc(5)): fields after the command name, which is in parentheses
/// and may contain spaces, so the fields are counted from the last `)`.
pub fn parse_stat(stat: &str) -> Option<ProcessStat> {
    let (_, rest) = stat.rsplit_once(')')?;
    // rest starts with field 3 (state); field n is at index n - 3.
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    Some(ProcessStat {
        cpu_ticks: field(14)? + field(15)?,
        start_ticks: field(22)?,
        virtual_bytes: field(23)?,
        resident_pages: field(24)?,
    })
}

/// The boot time, in seconds since the epoch, from `/proc/stat`'s `btime` line.
pub fn parse_boot_time(stat: &str) -> Option<u64> {
    stat.lines()
        .find_map(|line| line.strip_prefix("btime "))
        .and_then(|secs| secs.trim().parse().ok())
}

fn sysconf(name: libc::c_int) -> Option<f64> {
    // SAFETY: sysconf only reads a configuration value.
    let value = unsafe { libc::sysconf(name) };
    (value > 0).then_some(value as f64)
}

/// The series' values now: cpu seconds, resident bytes, virtual bytes, start time (seconds since
/// the epoch), open file descriptors.
fn read() -> Option<[f64; 5]> {
    let stat = parse_stat(&std::fs::read_to_string("/proc/self/stat").ok()?)?;
    let ticks = sysconf(libc::_SC_CLK_TCK)?;
    let page = sysconf(libc::_SC_PAGESIZE)?;
    let boot = parse_boot_time(&std::fs::read_to_string("/proc/stat").ok()?)
        .map(|b| b as f64)
        .or_else(|| {
            let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?;
            Some(now.as_secs_f64())
        })?;
    let fds = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count());
    Some([
        stat.cpu_ticks as f64 / ticks,
        stat.resident_pages as f64 * page,
        stat.virtual_bytes as f64,
        boot + stat.start_ticks as f64 / ticks,
        fds as f64,
    ])
}

/// client_golang's process collector's series that we export, with its help texts.
#[derive(Debug, Default)]
pub struct ProcessCollector;

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some([cpu, resident, virt, start, fds]) = read() else {
            return Ok(());
        };
        let cpu = ConstCounter::new(cpu);
        let help = "Total user and system CPU time spent in seconds.";
        cpu.encode(encoder.encode_descriptor(
            "process_cpu_seconds",
            help,
            None,
            cpu.metric_type(),
        )?)?;
        let gauges = [
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes.",
                resident,
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes.",
                virt,
            ),
            (
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds.",
                start,
            ),
            ("process_open_fds", "Number of open file descriptors.", fds),
        ];
        for (name, help, value) in gauges {
            let metric = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            ConstGauge::new(value).encode(metric)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_command_name() {
        let stat = "4242 (math (con) troller) S 1 4242 4242 0 -1 4194560 1523 0 0 0 \
                    250 75 0 0 20 0 9 0 123456 734003200 5120 18446744073709551615";
        assert_eq!(
            parse_stat(stat),
            Some(ProcessStat {
                cpu_ticks: 325,
                start_ticks: 123456,
                virtual_bytes: 734003200,
                resident_pages: 5120,
            })
        );
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(
            parse_boot_time("cpu 1 2\nbtime 1764000000\n"),
            Some(1764000000)
        );
    }
}
