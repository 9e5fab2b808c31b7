//! The manager under measurement: the release binary started as a person would start it
//! (`--namespace`, a kubeconfig), read through its own `/metrics` and `/readyz`.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};

/// One look at the run: when, the manager's writes so far, and the machine's CPU so far.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    pub at: Duration,
    pub writes: u64,
    /// Busy and total time of all cores (`/proc/stat`, in clock ticks): whether a slow stretch
    /// was the machine's CPU or waiting.
    pub cpu: Option<(u64, u64)>,
}

/// The machine's busy and total CPU ticks so far (all cores; idle and iowait are not busy).
pub fn machine_cpu() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let ticks: Vec<u64> = stat
        .lines()
        .next()?
        .strip_prefix("cpu ")?
        .split_whitespace()
        .filter_map(|t| t.parse().ok())
        .collect();
    let total: u64 = ticks.iter().take(8).sum();
    let idle = ticks.get(3)? + ticks.get(4)?;
    Some((total - idle, total))
}

pub struct Manager {
    child: Child,
    metrics: SocketAddr,
    /// Its log (stderr), line by line, at its default level unless MANAGER_LOG says.
    log: Arc<Mutex<Vec<String>>>,
}

/// The manager's write requests, from `math_controller_write_requests_total`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Writes {
    pub creates: u64,
    pub statuses: u64,
    /// Of the statuses, the Fermats': its answer, and progress reports before it.
    pub fermat_statuses: u64,
    /// Corrections, adoptions, deletions.
    pub other: u64,
    pub events: u64,
    /// Reconciles run, by controller: number, tuple, fermat.
    pub reconciles: [u64; 3],
}

impl Writes {
    /// Writes to Numbers, Tuples and Fermats.
    pub fn objects(&self) -> u64 {
        self.creates + self.statuses + self.other
    }

    pub fn all(&self) -> u64 {
        self.objects() + self.events
    }

    fn parse(text: &str) -> Writes {
        let mut w = Writes::default();
        for line in text.lines() {
            if let Some(rest) =
                line.strip_prefix("controller_runtime_reconcile_total{controller=\"")
                && let Some((controller, rest)) = rest.split_once('"')
                && let Some((_, value)) = rest.split_once("} ")
            {
                let slot = ["number", "tuple", "fermat"]
                    .iter()
                    .position(|c| *c == controller);
                if let (Some(slot), Ok(value)) = (slot, value.trim().parse::<f64>()) {
                    w.reconciles[slot] += value as u64;
                }
            }
            let Some(rest) = line.strip_prefix("math_controller_write_requests_total{") else {
                continue;
            };
            let Some((labels, value)) = rest.split_once("} ") else {
                continue;
            };
            let value = value.trim().parse::<f64>().unwrap_or(0.0) as u64;
            let label = |name: &str| {
                labels
                    .split(',')
                    .find_map(|l| l.strip_prefix(&format!("{name}=\"")))
                    .map(|v| v.trim_end_matches('"'))
            };
            match label("operation") {
                Some("create") => w.creates += value,
                Some("patch_status") => {
                    w.statuses += value;
                    if label("kind") == Some("Fermat") {
                        w.fermat_statuses += value;
                    }
                }
                Some("event") => w.events += value,
                Some(_) => w.other += value,
                None => {}
            }
        }
        w
    }
}

/// The CPU time (user + system) process `pid` has used so far, from `/proc/<pid>/stat`.
pub fn cpu_of(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces) in parentheses.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // USER_HZ is 100 on every Linux this runs on.
    Some(Duration::from_millis(ticks * 10))
}

fn free_port() -> anyhow::Result<SocketAddr> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?)
}

/// `GET path` over plain HTTP/1.0: the body, when the answer is 200.
async fn get(address: SocketAddr, path: &str) -> Option<String> {
    let mut stream = tokio::net::TcpStream::connect(address).await.ok()?;
    let request = format!("GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.ok()?;
    let (head, body) = answer.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200")
        .then(|| body.to_string())
        .or_else(|| head.starts_with("HTTP/1.0 200").then(|| body.to_string()))
}

impl Manager {
    /// Start the binary on `namespace` (`None`: all namespaces) and wait until it reports
    /// ready (caches listed).
    pub async fn start(
        binary: &Path,
        kubeconfig: Option<&Path>,
        namespace: Option<&str>,
    ) -> anyhow::Result<Manager> {
        let (metrics, probes) = (free_port()?, free_port()?);
        let mut command = Command::new(binary);
        if let Some(namespace) = namespace {
            command.args(["--namespace", namespace]);
        }
        // The manager's default unless asked (BENCH_CONCURRENCY=16, say).
        if let Ok(concurrency) = std::env::var("BENCH_CONCURRENCY") {
            command.args(["--concurrency", &concurrency]);
        }
        // BENCH_FLOW_SHARES=false: one namespace may hold every request slot (an A/B).
        if let Ok(shares) = std::env::var("BENCH_FLOW_SHARES") {
            command.arg(format!("--flow-shares={shares}"));
        }
        command
            .arg(format!("--metrics-bind-address={metrics}"))
            .arg(format!("--health-probe-bind-address={probes}"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // Its log is collected (to count lines), and shown only when asked for
        // (MANAGER_LOG=info, say): a line per write would drown the numbers.
        let show = std::env::var("MANAGER_LOG").ok();
        match &show {
            Some(filter) => command.env("RUST_LOG", filter),
            None => command.env_remove("RUST_LOG"),
        };
        if let Some(path) = kubeconfig {
            command.env("KUBECONFIG", path);
        }
        let mut child = command.spawn()?;
        let log = collect_log(&mut child, show.is_some());
        wait_ready(probes).await?;
        Ok(Manager {
            child,
            metrics,
            log,
        })
    }

    /// The log lines written so far.
    pub fn log(&self) -> Vec<String> {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    pub async fn writes(&self) -> anyhow::Result<Writes> {
        let text = get(self.metrics, "/metrics")
            .await
            .ok_or_else(|| anyhow::anyhow!("the manager's /metrics did not answer"))?;
        Ok(Writes::parse(&text))
    }

    /// Samples the manager's writes (objects and Events) every 100 ms until `stop` fires:
    /// the pace of a run, to see whether it starts late, sags or tails off.
    pub fn pace(
        &self,
        stop: tokio::sync::oneshot::Receiver<()>,
    ) -> tokio::task::JoinHandle<Vec<Sample>> {
        let address = self.metrics;
        tokio::spawn(async move {
            let start = std::time::Instant::now();
            let mut samples = vec![Sample {
                at: Duration::ZERO,
                writes: 0,
                cpu: machine_cpu(),
            }];
            let mut stop = std::pin::pin!(stop);
            let mut base = None;
            loop {
                if let Some(text) = get(address, "/metrics").await {
                    let all = Writes::parse(&text).all();
                    let base = *base.get_or_insert(all);
                    samples.push(Sample {
                        at: start.elapsed(),
                        writes: all - base,
                        cpu: machine_cpu(),
                    });
                }
                tokio::select! {
                    _ = &mut stop => return samples,
                    _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                }
            }
        })
    }

    /// The process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// The CPU time the process has used so far (user + system).
    pub fn cpu(&self) -> Option<Duration> {
        cpu_of(self.child.id()?)
    }

    /// The process's peak resident memory so far (VmHWM), in MiB.
    pub fn peak_rss_mib(&self) -> Option<f64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()?)).ok()?;
        let kib: f64 = status
            .lines()
            .find(|l| l.starts_with("VmHWM:"))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()?;
        Some(kib / 1024.0)
    }

    /// SIGTERM, and the graceful stop it starts.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        if let Some(pid) = self.child.id() {
            std::process::Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status()?;
        }
        let status = tokio::time::timeout(Duration::from_secs(30), self.child.wait())
            .await
            .map_err(|_| anyhow::anyhow!("the manager did not stop within 30 s of SIGTERM"))??;
        anyhow::ensure!(status.success(), "the manager exited with {status}");
        Ok(())
    }
}

/// The lines of `child`'s stderr, collected as they come (and shown on ours when `show`).
fn collect_log(child: &mut Child, show: bool) -> Arc<Mutex<Vec<String>>> {
    let log = Arc::new(Mutex::new(Vec::new()));
    if let Some(stderr) = child.stderr.take() {
        let sink = log.clone();
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if show {
                    eprintln!("{line}");
                }
                if let Ok(mut log) = sink.lock() {
                    log.push(line);
                }
            }
        });
    }
    log
}

/// Until the manager's `/readyz` on `probes` answers 200 (within 60 s).
async fn wait_ready(probes: SocketAddr) -> anyhow::Result<()> {
    let start = Instant::now();
    while get(probes, "/readyz").await.is_none() {
        anyhow::ensure!(
            start.elapsed() < Duration::from_secs(60),
            "the manager did not become ready within 60 s"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}
