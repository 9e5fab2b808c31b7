//! The process series every client_golang program exports on Linux (its process collector,
//! which controller-runtime registers; client_golang v1.23's list, read through
//! prometheus/procfs): CPU time, resident and virtual memory and the virtual memory's limit,
//! start time, open file descriptors and their limit, bytes received and sent over the network.
//! kubebuilder's `controller-resources-metrics.json` dashboard draws the CPU and the resident
//! memory; an fd-exhaustion alert divides `process_open_fds` by `process_max_fds`. Read from
//! `/proc` at each scrape; a file that cannot be read leaves its series out, as client_golang
//! does (on a system without `/proc`, all of them).

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

/// What procfs reads for "unlimited" in `/proc/self/limits`: the largest u64.
const UNLIMITED: u64 = u64::MAX;

/// The soft limits client_golang reports, from `/proc/self/limits` (proc(5)): the open files
/// (`process_max_fds`) and the address space (`process_virtual_memory_max_bytes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub open_files: u64,
    pub address_space: u64,
}

/// Parses `/proc/self/limits`: a header, then a line per limit whose name is followed by two or
/// more spaces, the soft limit, the hard limit and a unit.
pub fn parse_limits(limits: &str) -> Option<Limits> {
    let soft = |name: &str| -> Option<u64> {
        let line = limits.lines().find(|l| l.starts_with(name))?;
        let value = line[name.len()..].split_whitespace().next()?;
        match value {
            "unlimited" => Some(UNLIMITED),
            v => v.parse().ok(),
        }
    };
    Some(Limits {
        open_files: soft("Max open files")?,
        address_space: soft("Max address space")?,
    })
}

/// The bytes received and sent over the network by the process's network namespace: the
/// `IpExt` line pair of `/proc/self/net/netstat`, `InOctets` and `OutOctets` (0 when missing,
/// as client_golang writes them).
pub fn parse_netstat(netstat: &str) -> Option<(f64, f64)> {
    let lines: Vec<&str> = netstat.lines().collect();
    for pair in lines.chunks(2) {
        let [names, values] = pair else { continue };
        let (Some(names), Some(values)) =
            (names.strip_prefix("IpExt:"), values.strip_prefix("IpExt:"))
        else {
            continue;
        };
        let field = |wanted: &str| {
            let at = names.split_whitespace().position(|n| n == wanted)?;
            values.split_whitespace().nth(at)?.parse::<f64>().ok()
        };
        return Some((
            field("InOctets").unwrap_or(0.0),
            field("OutOctets").unwrap_or(0.0),
        ));
    }
    None
}

fn sysconf(name: libc::c_int) -> Option<f64> {
    // SAFETY: sysconf only reads a configuration value.
    let value = unsafe { libc::sysconf(name) };
    (value > 0).then_some(value as f64)
}

/// CPU seconds, resident bytes, virtual bytes, start time (seconds since the epoch), from
/// `/proc/self/stat`.
fn read_stat() -> Option<[f64; 4]> {
    let stat = parse_stat(&std::fs::read_to_string("/proc/self/stat").ok()?)?;
    let ticks = sysconf(libc::_SC_CLK_TCK)?;
    let page = sysconf(libc::_SC_PAGESIZE)?;
    let boot = parse_boot_time(&std::fs::read_to_string("/proc/stat").ok()?)
        .map(|b| b as f64)
        .or_else(|| {
            let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?;
            Some(now.as_secs_f64())
        })?;
    Some([
        stat.cpu_ticks as f64 / ticks,
        stat.resident_pages as f64 * page,
        stat.virtual_bytes as f64,
        boot + stat.start_ticks as f64 / ticks,
    ])
}

fn read_file(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// One series: name, help, counter or gauge, value.
type Sample = (&'static str, &'static str, MetricType, f64);

/// Every series that can be read now, in client_golang's order.
fn read() -> Vec<Sample> {
    use MetricType::{Counter, Gauge};
    let mut out = Vec::new();
    if let Some([cpu, resident, virt, start]) = read_stat() {
        let help = "Total user and system CPU time spent in seconds.";
        out.push(("process_cpu_seconds", help, Counter, cpu));
        let help = "Virtual memory size in bytes.";
        out.push(("process_virtual_memory_bytes", help, Gauge, virt));
        let help = "Resident memory size in bytes.";
        out.push(("process_resident_memory_bytes", help, Gauge, resident));
        let help = "Start time of the process since unix epoch in seconds.";
        out.push(("process_start_time_seconds", help, Gauge, start));
    }
    if let Ok(fds) = std::fs::read_dir("/proc/self/fd") {
        let help = "Number of open file descriptors.";
        out.push(("process_open_fds", help, Gauge, fds.count() as f64));
    }
    if let Some(limits) = read_file("/proc/self/limits").and_then(|l| parse_limits(&l)) {
        let help = "Maximum number of open file descriptors.";
        out.push(("process_max_fds", help, Gauge, limits.open_files as f64));
        let help = "Maximum amount of virtual memory available in bytes.";
        let max = limits.address_space as f64;
        out.push(("process_virtual_memory_max_bytes", help, Gauge, max));
    }
    if let Some((rx, tx)) = read_file("/proc/self/net/netstat").and_then(|n| parse_netstat(&n)) {
        let help = "Number of bytes received by the process over the network.";
        out.push(("process_network_receive_bytes", help, Counter, rx));
        let help = "Number of bytes sent by the process over the network.";
        out.push(("process_network_transmit_bytes", help, Counter, tx));
    }
    out
}

/// client_golang's process collector's series, with its help texts (a counter's name without
/// the `_total` the encoder appends).
#[derive(Debug, Default)]
pub struct ProcessCollector;

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for (name, help, kind, value) in read() {
            let metric = encoder.encode_descriptor(name, help, None, kind)?;
            match kind {
                MetricType::Counter => ConstCounter::new(value).encode(metric)?,
                _ => ConstGauge::new(value).encode(metric)?,
            }
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

    /// As proc(5) prints them, "unlimited" read as procfs reads it (the largest u64, which
    /// client_golang exports as 1.8446744073709552e+19).
    #[test]
    fn the_soft_limits_are_read_and_unlimited_is_the_largest_u64() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max cpu time              unlimited            unlimited            seconds   \n\
                      Max open files            1048576              1048576              files     \n\
                      Max address space         unlimited            unlimited            bytes     \n";
        assert_eq!(
            parse_limits(limits),
            Some(Limits {
                open_files: 1048576,
                address_space: u64::MAX,
            })
        );
        assert_eq!(parse_limits("Limit Soft Hard\n"), None);
    }

    #[test]
    fn network_bytes_come_from_the_ipext_line_pair() {
        let netstat = "TcpExt: SyncookiesSent SyncookiesRecv\nTcpExt: 0 0\n\
                       IpExt: InNoRoutes InTruncatedPkts InMcastPkts OutMcastPkts InBcastPkts OutBcastPkts InOctets OutOctets\n\
                       IpExt: 0 0 0 0 0 0 123456 654321\n";
        assert_eq!(parse_netstat(netstat), Some((123456.0, 654321.0)));
        assert_eq!(parse_netstat("TcpExt: A\nTcpExt: 1\n"), None);
    }
}
