//! The randomized soak: for each seed, a fresh test API server and manager, a burst of random
//! creates, edits and deletions of parents and children (also by hand, also orphans to adopt),
//! interleaved with closed watches, compactions and held-back reconnects; then quiet. The
//! cluster must end converged: exactly the desired children, each controlled by its parent,
//! with the desired spec, and every status right for its current generation.
//!
//! `SOAK_SEEDS=n` runs seeds 1..=n (default 20), `SOAK_SEED=s` runs seed `s` alone. A failure
//! names its seed.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use common::*;
use kube::ResourceExt;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use math_controller::api::{Fermat, Number, NumberSpec, Tuple};
use math_controller::math;
use math_controller::ops::manager::Options;
use serde_json::json;
use test_apiserver::{RequestFilter, Verb};

/// Seeds run at once (each on its own server and manager).
const PARALLEL: usize = 4;
/// Random steps per seed, each followed by a pause of up to 40 ms.
const STEPS: usize = 50;
/// How long a seed may take to converge once the faults stop.
const QUIET: Duration = Duration::from_secs(45);

const TUPLES: [&str; 3] = ["ta", "tb", "tc"];
const FERMATS: [&str; 3] = ["fa", "fb", "fc"];
const NUMBERS: [&str; 2] = ["na", "nb"];
const RESOURCES: [&str; 3] = ["numbers", "tuples", "fermats"];

/// SplitMix64: small, seedable, good enough to pick operations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn value(&mut self) -> i64 {
        *self.pick(&[-4, 0, 1, 2, 3, 4, 5, 9, 15, 16, 17, 25, 36, 49])
    }

    fn numbers(&mut self) -> Vec<i64> {
        (0..self.below(5)).map(|_| self.value()).collect()
    }
}

fn seeds() -> Vec<u64> {
    let var = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    match (var("SOAK_SEED"), var("SOAK_SEEDS")) {
        (Some(seed), _) => vec![seed],
        (None, Some(n)) => (1..=n).collect(),
        (None, None) => (1..=20).collect(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_faults_end_converged() {
    let seeds = seeds();
    let mut failures = Vec::new();
    for batch in seeds.chunks(PARALLEL) {
        let runs = batch
            .iter()
            .map(|&seed| async move { (seed, soak(seed).await) });
        for (seed, result) in futures::future::join_all(runs).await {
            if let Err(why) = result {
                eprintln!("soak seed {seed} failed (rerun: SOAK_SEED={seed}): {why}");
                failures.push(seed);
            }
        }
    }
    assert!(
        failures.is_empty(),
        "soak seeds {failures:?} did not converge (rerun one with SOAK_SEED=<seed>)"
    );
}

/// One seed: chaos, quiet, then the cluster must converge. Err says what stayed wrong.
async fn soak(seed: u64) -> Result<(), String> {
    let mut h = Harness::without_manager().await;
    h.start_manager_with(Options {
        // Short, so that a seed that needs the safety net still ends in seconds.
        in_flight_timeout: Duration::from_secs(2),
        ..Options::default()
    });
    let mut rng = Rng(seed);
    for _ in 0..STEPS {
        step(&h, &mut rng).await;
        tokio::time::sleep(Duration::from_millis(rng.below(40) as u64)).await;
    }
    h.server.clear_faults();
    let start = Instant::now();
    let mut last = String::new();
    while start.elapsed() < QUIET {
        match check(&h).await {
            Ok(()) => {
                eprintln!(
                    "soak seed {seed}: converged {:?} after the faults stopped",
                    start.elapsed()
                );
                h.stop_manager().await;
                return Ok(());
            }
            Err(why) => last = why,
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(format!("not converged after {QUIET:?}: {last}"))
}

/// One random operation; errors (a 404, a 409 from a racing manager) are part of the game.
async fn step(h: &Harness, rng: &mut Rng) {
    let pp = PostParams::default();
    let patch = |v: serde_json::Value| Patch::Merge(v);
    let pa = PatchParams::default();
    let dp = DeleteParams::default();
    match rng.below(16) {
        0 | 1 => {
            let name = *rng.pick(&TUPLES);
            let _ = h
                .tuples()
                .create(&pp, &Tuple::new(name, tuple_spec(rng)))
                .await;
        }
        2 => {
            let name = *rng.pick(&TUPLES);
            let numbers = rng.numbers();
            let edit = patch(json!({"spec": {"numbers": numbers}}));
            let _ = h.tuples().patch(name, &pa, &edit).await;
        }
        3 => {
            let name = *rng.pick(&TUPLES);
            let _ = h.tuples().delete(name, &dp).await;
        }
        4 | 5 => {
            let name = *rng.pick(&FERMATS);
            let spec = math_controller::api::FermatSpec {
                number: rng.below(15) as i64,
            };
            let _ = h.fermats().create(&pp, &Fermat::new(name, spec)).await;
        }
        6 => {
            let edit = patch(json!({"spec": {"number": rng.below(15)}}));
            let name = *rng.pick(&FERMATS);
            let _ = h.fermats().patch(name, &pa, &edit).await;
        }
        7 => {
            let name = *rng.pick(&FERMATS);
            let _ = h.fermats().delete(name, &dp).await;
        }
        8 | 14 => {
            // A child deleted by hand.
            if rng.below(2) == 0 {
                let names = names(h.numbers().list(&ListParams::default()).await);
                if !names.is_empty() {
                    let _ = h.numbers().delete(rng.pick(&names[..]).as_str(), &dp).await;
                }
            } else {
                let names = names(h.tuples().list(&ListParams::default()).await);
                if !names.is_empty() {
                    let _ = h.tuples().delete(rng.pick(&names[..]).as_str(), &dp).await;
                }
            }
        }
        9 => {
            // A child's spec edited by hand.
            let names = names(h.numbers().list(&ListParams::default()).await);
            if !names.is_empty() {
                let edit = patch(json!({"spec": {"value": rng.value()}}));
                let _ = h
                    .numbers()
                    .patch(rng.pick(&names[..]).as_str(), &pa, &edit)
                    .await;
            }
        }
        10 => {
            // A Number of a name a Tuple wants (or a standalone one), with no owner: adopted.
            let name = match rng.below(2) {
                0 => format!("{}-{}", rng.pick(&TUPLES), rng.below(3)),
                _ => rng.pick(&NUMBERS).to_string(),
            };
            let spec = NumberSpec { value: rng.value() };
            let _ = h.numbers().create(&pp, &Number::new(&name, spec)).await;
        }
        11 => h.server.close_watches(),
        12 => {
            h.server.close_watches();
            h.server.compact();
        }
        _ => {
            // Reconnects of one kind held back for a while (cleared by a later step, or at
            // the end of the chaos).
            let resource = *rng.pick(&RESOURCES);
            let latency = Duration::from_millis(rng.below(1500) as u64);
            for verb in [Verb::List, Verb::Watch] {
                let filter = RequestFilter::new().verb(verb).resource(resource);
                h.server.set_latency(filter, latency);
            }
            h.server.close_watches();
            if rng.below(2) == 0 {
                h.server.compact();
            }
        }
    }
}

fn tuple_spec(rng: &mut Rng) -> math_controller::api::TupleSpec {
    math_controller::api::TupleSpec {
        numbers: rng.numbers(),
    }
}

fn names<K: kube::Resource + Clone>(list: kube::Result<kube::core::ObjectList<K>>) -> Vec<String> {
    list.map(|l| l.items.iter().map(|o| o.name_any()).collect())
        .unwrap_or_default()
}

fn controller_uid<K: kube::Resource>(obj: &K) -> Option<String> {
    obj.owner_references()
        .iter()
        .find(|r| r.controller == Some(true))
        .map(|r| r.uid.clone())
}

/// Whether the cluster is converged; Err says the first thing that is not.
async fn check(h: &Harness) -> Result<(), String> {
    let lp = ListParams::default();
    let err = |e: kube::Error| e.to_string();
    let numbers = h.numbers().list(&lp).await.map_err(err)?.items;
    let tuples = h.tuples().list(&lp).await.map_err(err)?.items;
    let fermats = h.fermats().list(&lp).await.map_err(err)?.items;
    let uids: BTreeSet<String> = numbers
        .iter()
        .map(|o| o.uid())
        .chain(tuples.iter().map(|o| o.uid()))
        .chain(fermats.iter().map(|o| o.uid()))
        .flatten()
        .collect();
    let all_meta = numbers
        .iter()
        .map(|o| &o.metadata)
        .chain(tuples.iter().map(|o| &o.metadata))
        .chain(fermats.iter().map(|o| &o.metadata));
    for meta in all_meta {
        let name = meta.name.clone().unwrap_or_default();
        if meta.deletion_timestamp.is_some() {
            return Err(format!("{name} is still being deleted"));
        }
        let controller = meta
            .owner_references
            .iter()
            .flatten()
            .find(|r| r.controller == Some(true));
        if let Some(owner) = controller
            && !uids.contains(&owner.uid)
        {
            return Err(format!("{name} outlived its owner {}", owner.name));
        }
    }

    for n in &numbers {
        let name = n.name_any();
        if !number_ready(n) {
            return Err(format!("Number {name} not ready: {:?}", n.status));
        }
        let s = n.status.as_ref().ok_or("no status")?;
        let v = n.spec.value;
        let right = (s.fizz_buzz.clone(), s.is_square, s.is_prime)
            == (
                Some(math::fizzbuzz(v)),
                Some(math::is_square(v)),
                Some(math::is_prime(v)),
            );
        if !right {
            return Err(format!("Number {name} = {v} has a wrong status: {s:?}"));
        }
    }

    let numbers_by_name: BTreeMap<String, &Number> =
        numbers.iter().map(|n| (n.name_any(), n)).collect();
    for t in &tuples {
        let name = t.name_any();
        let uid = t.uid();
        let wanted: BTreeMap<String, i64> = t
            .spec
            .numbers
            .iter()
            .enumerate()
            .map(|(i, v)| (format!("{name}-{i}"), *v))
            .collect();
        for (child, value) in &wanted {
            let n = numbers_by_name
                .get(child)
                .ok_or_else(|| format!("Tuple {name}: {child} missing"))?;
            if controller_uid(*n) != uid || n.spec.value != *value {
                return Err(format!("Tuple {name}: {child} not ours or not {value}"));
            }
        }
        let extra: Vec<_> = numbers
            .iter()
            .filter(|n| controller_uid(*n) == uid && !wanted.contains_key(&n.name_any()))
            .map(|n| n.name_any())
            .collect();
        if !extra.is_empty() {
            return Err(format!("Tuple {name} still owns {extra:?}"));
        }
        if !tuple_ready(t) {
            return Err(format!("Tuple {name} not ready: {:?}", t.status));
        }
        let s = t.status.as_ref().ok_or("no status")?;
        let all = t.spec.numbers.iter().all(|v| math::is_square(*v));
        let count = Some(wanted.len() as i64);
        if (s.all_squares, s.ready_numbers, s.desired_numbers) != (Some(all), count, count) {
            return Err(format!(
                "Tuple {name} {:?} has a wrong status: {s:?}",
                t.spec
            ));
        }
    }

    let tuples_by_name: BTreeMap<String, &Tuple> =
        tuples.iter().map(|t| (t.name_any(), t)).collect();
    for f in &fermats {
        let name = f.name_any();
        let uid = f.uid();
        let n = f.spec.number;
        let splits = math::fermat_splits(n);
        let wanted: BTreeMap<String, Vec<i64>> = splits
            .iter()
            .map(|(a, b)| (format!("{name}-{a}-and-{b}"), vec![*a, *b]))
            .collect();
        for (child, numbers) in &wanted {
            let t = tuples_by_name
                .get(child)
                .ok_or_else(|| format!("Fermat {name}: {child} missing"))?;
            if controller_uid(*t) != uid || &t.spec.numbers != numbers {
                return Err(format!(
                    "Fermat {name}: {child} not ours or not {numbers:?}"
                ));
            }
        }
        let extra: Vec<_> = tuples
            .iter()
            .filter(|t| controller_uid(*t) == uid && !wanted.contains_key(&t.name_any()))
            .map(|t| t.name_any())
            .collect();
        if !extra.is_empty() {
            return Err(format!("Fermat {name} still owns {extra:?}"));
        }
        if !fermat_ready(f) {
            return Err(format!("Fermat {name} not ready: {:?}", f.status));
        }
        let s = f.status.as_ref().ok_or("no status")?;
        let found: Vec<String> = splits
            .iter()
            .filter_map(|(a, b)| Some((math::exact_sqrt(*a)?, math::exact_sqrt(*b)?)))
            .map(|(x, y)| math::format_decomposition(x, y))
            .collect();
        let count = Some(wanted.len() as i64);
        let expected = (
            Some(!found.is_empty()),
            Some(found),
            Some(math::is_prime(n)),
            Some(math::is_one_mod_four(n)),
            count,
            count,
        );
        let actual = (
            s.two_squares_found,
            s.decompositions.clone(),
            s.is_prime,
            s.one_mod_four,
            s.ready_tuples,
            s.desired_tuples,
        );
        if actual != expected {
            return Err(format!("Fermat {name} = {n} has a wrong status: {s:?}"));
        }
    }
    Ok(())
}
