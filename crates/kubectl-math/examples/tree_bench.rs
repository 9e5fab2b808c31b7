//! How fast `kubectl math tree` draws a big tree, and how the live view keeps up while the
//! manager builds one: a Fermat of n (default 20000: 10000 Tuples, 20000 Numbers) against
//! the in-memory test API server, with the manager and the live view's model (watches,
//! caches, frames; no terminal) in this process.
//!
//! ```text
//! cargo run --release --locked -p kubectl-math --example tree_bench -- [n]
//! ```
//! It prints numbers; it asserts nothing. While the manager converges, the view is paced
//! the way `--watch` paces it ([`Pacer`], [`drain`]) and the bench reports what a person
//! would feel: what a frame costs, how often one comes, and how long after a watch event
//! reached the process the frame that shows it was ready (the lag). The watch events are
//! received and stamped by a task of their own, so that time spent waiting for the view's
//! loop counts as lag.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::stream::LocalBoxStream;
use kube::api::{Api, DeleteParams, PostParams};
use kubectl_math::cli::MAX_CHILDREN;
use kubectl_math::load::{self, Connection};
use kubectl_math::pace::Pacer;
use kubectl_math::render::{self, Line, Marks, Options};
use kubectl_math::watch::{FRAME, Model, Update, drain};
use kubectl_math::{Kind, Object, Target, build, is_ready};
use math_controller::api::{Fermat, FermatSpec, Number};
use math_controller::metrics::Metrics;
use math_controller::ops::manager::{self, Options as ManagerOptions};
use test_apiserver::TestServer;

fn stats(name: &str, unit: &str, samples: &mut [Duration]) {
    if samples.is_empty() {
        println!("{name}: no {unit}");
        return;
    }
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize];
    println!(
        "{name}: {} {unit}, p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        samples.len(),
        at(0.5).as_secs_f64() * 1e3,
        at(0.99).as_secs_f64() * 1e3,
        at(1.0).as_secs_f64() * 1e3
    );
}

/// The CPU time this thread has had, to a scheduler tick (Linux; zero elsewhere). On a busy
/// machine a frame's wall time is much waiting for a core (the manager and the API server
/// run in this process too); its CPU time is what the view itself costs.
fn thread_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let nanos = stat.split_whitespace().next().and_then(|n| n.parse().ok());
    Duration::from_nanos(nanos.unwrap_or(0))
}

/// What the headless view measured while it followed the cluster.
#[derive(Default)]
struct Feel {
    costs: Vec<Duration>,
    cpu: Vec<Duration>,
    intervals: Vec<Duration>,
    lags: Vec<Duration>,
    last_start: Option<Instant>,
}

impl Feel {
    /// A frame started at `started` (with `cpu` from [`thread_cpu`]) and was ready now,
    /// showing the events stamped `shown`.
    fn frame(&mut self, started: Instant, cpu: Duration, shown: &mut Vec<Instant>) -> Duration {
        let ready = Instant::now();
        let cost = ready - started;
        self.costs.push(cost);
        self.cpu.push(thread_cpu().saturating_sub(cpu));
        if let Some(previous) = self.last_start.replace(started) {
            self.intervals.push(started - previous);
        }
        self.lags.extend(shown.drain(..).map(|at| ready - at));
        cost
    }

    fn print(&mut self, what: &str) {
        stats(&format!("{what}: frame cost"), "frames", &mut self.costs);
        stats(&format!("{what}: frame CPU time"), "frames", &mut self.cpu);
        stats(
            &format!("{what}: between frame starts"),
            "intervals",
            &mut self.intervals,
        );
        stats(
            &format!("{what}: watch event to the frame showing it"),
            "events",
            &mut self.lags,
        );
    }
}

/// The live view without a terminal, paced and fed the way `--watch` is.
struct View {
    model: Model,
    updates: LocalBoxStream<'static, Update>,
    /// When each update taken from `updates` since the last frame arrived.
    stamps: Rc<RefCell<Vec<Instant>>>,
    pacer: Pacer,
    target: Target,
    options: Options,
}

impl View {
    /// Draw frames as the watch events come until `done` says so; how many events came.
    async fn follow(
        &mut self,
        feel: &mut Feel,
        mut done: impl FnMut(&mut Model, &[Line], usize) -> bool,
    ) -> usize {
        let mut events = 0;
        loop {
            let deadline = self
                .pacer
                .next(self.pacer.started() + Duration::from_secs(1));
            tokio::select! {
                biased;
                _ = tokio::time::sleep_until(deadline.into()) => {
                    let (started, cpu) = (Instant::now(), thread_cpu());
                    let (lines, count) = self.model.frame(&self.target, "default", &self.options, started);
                    let cost = feel.frame(started, cpu, &mut self.stamps.borrow_mut());
                    self.pacer.drawn(started, cost);
                    if done(&mut self.model, &lines, count) {
                        return events;
                    }
                }
                Some(update) = self.updates.next() => {
                    events += drain(&mut self.model, &mut self.updates, update);
                    self.pacer.changed();
                }
            }
        }
    }
}

impl View {
    /// The live view, headless, on `conn`'s default namespace: a frame every FRAME while
    /// anything changes. Its watch events are received and stamped by a task of their own, as
    /// they arrive, whatever the view's loop is doing.
    async fn start(conn: &Connection, target: Target, options: Options) -> anyhow::Result<View> {
        let initial = load::list_all(conn, Some("default")).await?;
        let (model, updates) = Model::start(&conn.client, Some("default"), initial);
        let (tx, rx) = futures::channel::mpsc::unbounded();
        tokio::spawn(updates.for_each(move |update| {
            let _ = tx.unbounded_send((Instant::now(), update));
            futures::future::ready(())
        }));
        let stamps = Rc::new(RefCell::new(Vec::new()));
        let taken = stamps.clone();
        let updates = rx.map(move |(at, update)| {
            taken.borrow_mut().push(at);
            update
        });
        Ok(View {
            model,
            updates: updates.boxed_local(),
            stamps,
            pacer: Pacer::new(Instant::now()),
            target,
            options,
        })
    }
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
    // The CRDs as the manager generates them (what `make crds` writes), not a folder's files:
    // this crate's folder has none.
    server.apply_crd_yaml(&math_controller::api::crds_yaml()?)?;
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
    let mut view = View::start(&conn, target.clone(), options.clone()).await?;
    converge(&mut view, &client, n, expected).await?;
    a_deleted_number(&mut view, &client, n).await?;
    for _ in 0..5 {
        one_shot(&conn, &target, &options).await?;
    }
    let _ = stop.send(());
    let _ = manager.await;
    Ok(())
}

/// The live view following the manager's build of Fermat `f` = `n` until all `expected`
/// objects are drawn and the Fermat is Ready, then until the last highlights fade.
async fn converge(
    view: &mut View,
    client: &kube::Client,
    n: i64,
    expected: usize,
) -> anyhow::Result<()> {
    let fermats: Api<Fermat> = Api::default_namespaced(client.clone());
    let start = Instant::now();
    fermats
        .create(
            &PostParams::default(),
            &Fermat::new("f", FermatSpec { number: n }),
        )
        .await?;
    let mut feel = Feel::default();
    let events = view
        .follow(&mut feel, |model, _, count| {
            count == expected
                && (model.objects().fermats.first())
                    .is_some_and(|f| is_ready(&Object::Fermat(f.clone())))
        })
        .await;
    println!(
        "converged in {:.1} s with the live view following ({events} watch events)",
        start.elapsed().as_secs_f64()
    );
    feel.print("live view while converging");

    // Until the last highlights fade: a Tuple is drawn among its 10000 siblings when it is
    // not healthy or just changed, and only MAX_CHILDREN of those fit.
    let mut feel = Feel::default();
    view.follow(&mut feel, |model, _, _| {
        model.tracker.next_expiry().is_none()
    })
    .await;
    feel.print("live view, highlights fading");
    Ok(())
}

/// A deleted Number of the Fermat `n`, from the delete request to the frame that shows it
/// back.
async fn a_deleted_number(view: &mut View, client: &kube::Client, n: i64) -> anyhow::Result<()> {
    let numbers: Api<Number> = Api::default_namespaced(client.clone());
    let victim = format!("f-{}-and-{}-1", n / 4, n - n / 4);
    let deleted = Instant::now();
    numbers.delete(&victim, &DeleteParams::default()).await?;
    let (mut gone_seen, mut feel) = (None, Feel::default());
    view.follow(&mut feel, |_, lines, _| {
        let text = render::to_text(lines, false);
        let line = text.lines().find(|l| l.contains(&victim)).unwrap_or("");
        if line.contains("✗") && gone_seen.is_none() {
            gone_seen = Some(deleted.elapsed());
        }
        line.contains("↻ back") && line.contains("True")
    })
    .await;
    println!(
        "a deleted Number: on screen as gone after {}, back and Ready after {:.0} ms (frames at least {} ms apart)",
        gone_seen.map_or("(between two frames)".to_string(), |d| format!(
            "{:.0} ms",
            d.as_secs_f64() * 1e3
        )),
        deleted.elapsed().as_secs_f64() * 1e3,
        FRAME.as_millis()
    );
    feel.print("live view after the delete");
    Ok(())
}

/// The one-shot `kubectl math tree fermat/f`: list, build, lay out, print, each timed.
async fn one_shot(conn: &Connection, target: &Target, options: &Options) -> anyhow::Result<()> {
    let t = Instant::now();
    let objects = load::list_all(conn, Some("default")).await?;
    let listed = t.elapsed();
    let t = Instant::now();
    let roots = build(&objects, target, "default")?;
    let built = t.elapsed();
    let lines = render::lines(
        &roots,
        options,
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
    Ok(())
}
