//! `diff-servers --recording FILE --right KUBECONFIG [--left KUBECONFIG]`: replays a recorded
//! sequence of requests against two API servers and prints every difference of status
//! code, `Status` reason, `Warning` headers and body shape. Without `--left` the left side is
//! a fresh in-process test API server. Exit status: 0 when the answers agree, 1 when any
//! step differs, 2 when a server could not be reached or the recording not read.

use clap::Parser;
use std::path::PathBuf;
use std::process::ExitCode;
use test_apiserver::TestServer;
use test_apiserver::diff::{self, StepReport};

/// Replays a recording against two API servers and prints where their answers differ.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// The recording: a YAML list of steps (name, method, path, body, contentType).
    #[arg(long)]
    recording: PathBuf,
    /// Kubeconfig of the left server (default: a fresh test API server).
    #[arg(long)]
    left: Option<PathBuf>,
    /// Kubeconfig of the right server (a real cluster, say); its current context is used.
    #[arg(long)]
    right: PathBuf,
}

async fn client_for(path: &PathBuf) -> anyhow::Result<kube::Client> {
    let kubeconfig = kube::config::Kubeconfig::read_from(path)?;
    let options = kube::config::KubeConfigOptions::default();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options).await?;
    Ok(kube::Client::try_from(config)?)
}

fn print(reports: &[StepReport]) -> usize {
    let mut differing = 0;
    for r in reports {
        if r.differences.is_empty() {
            println!("✓ {}", r.name);
        } else {
            differing += 1;
            println!("✗ {}  ({})", r.name, r.request);
            for d in &r.differences {
                println!("    {d}");
            }
        }
    }
    differing
}

async fn run(args: Args) -> anyhow::Result<usize> {
    let steps = diff::parse_recording(&std::fs::read_to_string(&args.recording)?)?;
    let (server, left) = match &args.left {
        Some(p) => (None, client_for(p).await?),
        None => {
            let s = TestServer::start().await?;
            let c = s.client();
            (Some(s), c)
        }
    };
    let right = client_for(&args.right).await?;
    let run = format!("{:06x}", rand::random::<u32>() & 0xff_ffff);
    let reports = diff::replay(&left, &right, &steps, &run).await?;
    let differing = print(&reports);
    println!(
        "diff-servers: {} steps, {} differ (left: {}, right: {})",
        reports.len(),
        differing,
        args.left
            .as_ref()
            .map_or("a fresh test API server".into(), |p| p
                .display()
                .to_string()),
        args.right.display()
    );
    if let Some(s) = server {
        s.shutdown().await;
    }
    Ok(differing)
}

#[tokio::main]
async fn main() -> ExitCode {
    match run(Args::parse()).await {
        Ok(0) => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(1),
        Err(e) => {
            eprintln!("diff-servers: {e:#}");
            ExitCode::from(2)
        }
    }
}
