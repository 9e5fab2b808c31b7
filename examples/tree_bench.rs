//! How fast `kubectl math tree` draws a big tree, and how the live view keeps up while the
//! manager builds one: a Fermat of n (default 20000: 10000 Tuples, 20000 Numbers) against
//! the in-memory test API server, with the manager and the live view's model (watches,
//! caches, frames; no terminal) in this process.
//!
//! ```text
//! cargo run --release --locked --example tree_bench -- [n]
//! ```
//! It prints numbers; it asserts nothing.

use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::api::{Api, DeleteParams, PostParams};
use math_controller::api::{Fermat, FermatSpec, Number};
use math_controller::manager::{self, Options as ManagerOptions};
use math_controller::metrics::Metrics;
use math_controller::tree::cli::MAX_CHILDREN;
use math_controller::tree::load::{self, Connection};
use math_controller::tree::render::{self, Marks, Options};
use math_controller::tree::watch::{FRAME, Model};
use math_controller::tree::{Kind, Object, Target, build, is_ready};
use test_apiserver::TestServer;

fn stats(name: &str, samples: &mut [Duration]) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize];
    println!(
        "{name}: {} frames, p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        samples.len(),
        at(0.5).as_secs_f64() * 1e3,
        at(0.99).as_secs_f64() * 1e3,
        at(1.0).as_secs_f64() * 1e3
    );
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let n: i64 = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(20_000);
    let expected = 1 + (n / 2) as usize * 3;
    println!(
        "kubectl math tree: Fermat n = {n} ({expected} objects), test API server on loopback\n"
    );
    let server = TestServer::start().await?;
    let crds = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("crds");
    for entry in std::fs::read_dir(crds)? {
        server.apply_crd_yaml(&std::fs::read_to_string(entry?.path())?)?;
    }
    let client = server.client();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let manager = tokio::spawn(manager::run(
        client.clone(),
        ManagerOptions::default(),
        Metrics::new(),
        async move {
            let _ = stopped.await;
        },
    ));

    // The live view, headless: a frame every FRAME while anything changes.
    let conn = Connection {
        client: client.clone(),
        namespace: "default".into(),
        url: server.url(),
    };
    let target = Target::One {
        kind: Kind::Fermat,
        name: "f".into(),
    };
    let options = Options {
        depth: None,
        max_children: MAX_CHILDREN,
        namespaces: false,
    };
    let initial = load::list_all(&conn, Some("default")).await?;
    let (mut model, mut updates) = Model::start(&client, Some("default"), initial);
    let fermats: Api<Fermat> = Api::default_namespaced(client.clone());
    let start = Instant::now();
    fermats
        .create(
            &PostParams::default(),
            &Fermat::new("f", FermatSpec { number: n }),
        )
        .await?;
    let (mut frames, mut events) = (Vec::new(), 0usize);
    let mut next = Instant::now();
    loop {
        tokio::select! {
            Some(update) = updates.next() => {
                model.update(update, Instant::now());
                events += 1;
            }
            _ = tokio::time::sleep_until(next.into()) => {
                let t = Instant::now();
                let (_lines, count) = model.frame(&target, "default", &options, t);
                frames.push(t.elapsed());
                next = Instant::now() + FRAME;
                let done = model.objects().fermats.first().is_some_and(|f| is_ready(&Object::Fermat(f.clone())));
                if done && count == expected {
                    break;
                }
            }
        }
    }
    println!(
        "converged in {:.1} s with the live view following ({events} watch events)",
        start.elapsed().as_secs_f64()
    );
    stats(
        "live view while converging (build + lay out one frame)",
        &mut frames,
    );

    // A deleted Number, from the delete request to the frame that shows it back.
    let numbers: Api<Number> = Api::default_namespaced(client.clone());
    let victim = format!("f-{}-and-{}-1", n / 4, n - n / 4);
    let deleted = Instant::now();
    numbers.delete(&victim, &DeleteParams::default()).await?;
    let mut next = Instant::now();
    let (mut gone_seen, mut back_frames) = (None, Vec::new());
    loop {
        tokio::select! {
            Some(update) = updates.next() => model.update(update, Instant::now()),
            _ = tokio::time::sleep_until(next.into()) => {
                let t = Instant::now();
                let (lines, _) = model.frame(&target, "default", &options, t);
                back_frames.push(t.elapsed());
                next = Instant::now() + FRAME;
                let text = render::to_text(&lines, false);
                let line = text.lines().find(|l| l.contains(&victim)).unwrap_or("");
                if line.contains("✗") && gone_seen.is_none() {
                    gone_seen = Some(deleted.elapsed());
                }
                if line.contains("↻ back") && line.contains("True") {
                    break;
                }
            }
        }
    }
    println!(
        "a deleted Number: on screen as gone after {}, back and Ready after {:.0} ms (frames every {} ms)",
        gone_seen.map_or("(between two frames)".to_string(), |d| format!(
            "{:.0} ms",
            d.as_secs_f64() * 1e3
        )),
        deleted.elapsed().as_secs_f64() * 1e3,
        FRAME.as_millis()
    );

    // The one-shot `kubectl math tree fermat/f`: list, build, lay out, print.
    for _ in 0..5 {
        let t = Instant::now();
        let objects = load::list_all(&conn, Some("default")).await?;
        let listed = t.elapsed();
        let t = Instant::now();
        let roots = build(&objects, &target, "default")?;
        let built = t.elapsed();
        let lines = render::lines(
            &roots,
            &options,
            &Marks::default(),
            k8s_openapi::jiff::Timestamp::now(),
        );
        let text = render::to_text(&lines, true);
        let rendered = t.elapsed();
        let t = Instant::now();
        let json = serde_json::to_string(&render::to_json(&roots, None))?;
        let json_time = t.elapsed();
        println!(
            "one-shot: list {:.0} ms ({} objects); after the list: build {:.0} ms, build + text {:.0} ms ({} lines); -o json {:.0} ms ({} MB)",
            listed.as_secs_f64() * 1e3,
            objects.len(),
            built.as_secs_f64() * 1e3,
            rendered.as_secs_f64() * 1e3,
            text.lines().count(),
            json_time.as_secs_f64() * 1e3,
            json.len() / 1_000_000
        );
    }
    let _ = stop.send(());
    let _ = manager.await;
    Ok(())
}
