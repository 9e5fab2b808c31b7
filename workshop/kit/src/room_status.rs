//! `make workshop-room-status`: the organiser sees the room, live, in the terminal; one row per
//! participant, from what their namespace shows, so that an assistant walks to the one who is
//! stuck: the stage reached (a Number with a status → 1, a Tuple with `allSquares` → 2, a
//! Fermat whose status describes its generation → 3), whether their runner is up (the
//! heartbeat Lease [`heartbeat`] renews), and their last Warning Event.
//!
//! The participants are the namespaces `make workshop-room` made (annotated with their name);
//! it reads with the organiser's kubeconfig, every few seconds.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Event, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
};
use serde_json::{Value, json};

use crate::messages as m;
use crate::room::{PARTICIPANT, participant_namespace};
use crate::t;

/// The runner's heartbeat: a Lease of this name in its namespace.
pub const HEARTBEAT: &str = "math-workshop-runner";
/// How often the runner renews it; the organiser's table calls a runner down after three
/// missed renewals.
pub const RENEW_EVERY: Duration = Duration::from_secs(5);
const DOWN_AFTER_SECONDS: i64 = 15;

/// Renews the runner's heartbeat in `namespace` (server-side apply, so the first renewal
/// creates it).
pub async fn heartbeat(
    client: &kube::Client,
    namespace: &str,
    participant: &str,
) -> kube::Result<()> {
    let lease = json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": HEARTBEAT},
        "spec": {
            "holderIdentity": participant,
            "leaseDurationSeconds": DOWN_AFTER_SECONDS,
            "renewTime": MicroTime(Timestamp::now()),
        },
    });
    Api::<Lease>::namespaced(client.clone(), namespace)
        .patch(
            HEARTBEAT,
            &PatchParams::apply("math-workshop-heartbeat").force(),
            &Patch::Apply(&lease),
        )
        .await
        .map(|_| ())
}

/// One participant's row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub participant: String,
    /// 0 (nothing yet) to 3.
    pub stage: u8,
    /// Seconds since the runner's last heartbeat, `None` when it never beat.
    pub heartbeat_age: Option<i64>,
    /// The newest Warning Event's reason and message.
    pub warning: Option<String>,
}

/// The stage a namespace shows: the highest whose kind has an answered object.
pub fn stage_of(numbers: &[Value], tuples: &[Value], fermats: &[Value]) -> u8 {
    let current = |o: &Value| {
        let generation = o.pointer("/metadata/generation").and_then(Value::as_i64);
        let observed = o
            .pointer("/status/observedGeneration")
            .and_then(Value::as_i64);
        let ready = o
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|c| {
                c.iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
            });
        ready || (observed.is_some() && observed == generation)
    };
    if fermats.iter().any(current) {
        3
    } else if tuples
        .iter()
        .any(|t| t.pointer("/status/allSquares").is_some())
    {
        2
    } else if numbers
        .iter()
        .any(|n| n.get("status").is_some_and(|s| !s.is_null()))
    {
        1
    } else {
        0
    }
}

/// The newest Warning among `events`: "reason: message".
pub fn last_warning(events: &[Event]) -> Option<String> {
    events
        .iter()
        .filter(|e| e.type_.as_deref() == Some("Warning"))
        .max_by_key(|e| {
            e.last_timestamp
                .as_ref()
                .map(|t| t.0)
                .or(e.event_time.as_ref().map(|t| t.0))
                .or(e.metadata.creation_timestamp.as_ref().map(|t| t.0))
        })
        .map(|e| {
            let reason = e.reason.clone().unwrap_or_default();
            let message = e.message.clone().unwrap_or_default();
            format!("{reason}: {message}")
        })
}

/// The table as drawn: a header, one line per participant, columns aligned.
pub fn table(rows: &[Row], width: usize) -> String {
    let name_width = rows
        .iter()
        .map(|r| r.participant.len())
        .max()
        .unwrap_or(0)
        .max(11);
    let mut out = format!(
        "{:name_width$}  {:5}  {:14}  {}\n",
        m::STATUS_PARTICIPANT.text(),
        m::STATUS_STAGE.text(),
        m::STATUS_RUNNER.text(),
        m::STATUS_WARNING.text()
    );
    for row in rows {
        let runner = match row.heartbeat_age {
            Some(age) if age <= DOWN_AFTER_SECONDS => t!(m::STATUS_UP, seconds = age),
            Some(age) => t!(m::STATUS_DOWN_FOR, seconds = age),
            None => m::STATUS_NEVER.text(),
        };
        let line = format!(
            "{:name_width$}  {:<5}  {:14}  {}",
            row.participant,
            row.stage,
            runner,
            row.warning.clone().unwrap_or_else(|| "-".to_string())
        );
        out.push_str(&line.chars().take(width).collect::<String>());
        out.push('\n');
    }
    out
}

/// Reads every participant's row from the cluster.
pub async fn rows(client: &kube::Client) -> kube::Result<Vec<Row>> {
    let namespaces = Api::<Namespace>::all(client.clone())
        .list(&ListParams::default())
        .await?;
    let mut participants: Vec<String> = namespaces
        .items
        .iter()
        .filter_map(|ns| {
            let who = ns.metadata.annotations.as_ref()?.get(PARTICIPANT)?.clone();
            (ns.metadata.name.as_deref() == Some(participant_namespace(&who).as_str()))
                .then_some(who)
        })
        .collect();
    participants.sort();
    let mut rows = Vec::new();
    for participant in participants {
        rows.push(row(client, &participant).await?);
    }
    Ok(rows)
}

async fn row(client: &kube::Client, participant: &str) -> kube::Result<Row> {
    let ns = participant_namespace(participant);
    let mut found = Vec::new();
    for (kind, plural) in [
        ("Number", "numbers"),
        ("Tuple", "tuples"),
        ("Fermat", "fermats"),
    ] {
        let gvk = GroupVersionKind::gvk("math.example.com", "v1beta1", kind);
        let resource = ApiResource::from_gvk_with_plural(&gvk, plural);
        let api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &resource);
        let items = match api.list(&ListParams::default()).await {
            Ok(list) => list.items,
            Err(kube::Error::Api(status)) if status.code == 404 => vec![],
            Err(e) => return Err(e),
        };
        found.push(
            items
                .iter()
                .filter_map(|o| serde_json::to_value(o).ok())
                .collect::<Vec<_>>(),
        );
    }
    let lease = Api::<Lease>::namespaced(client.clone(), &ns)
        .get_opt(HEARTBEAT)
        .await?;
    let renewed = lease.and_then(|l| l.spec?.renew_time).map(|t| t.0);
    let heartbeat_age = renewed.map(|t| Timestamp::now().as_second() - t.as_second());
    let events = Api::<Event>::namespaced(client.clone(), &ns)
        .list(&ListParams::default())
        .await?;
    Ok(Row {
        participant: participant.to_string(),
        stage: stage_of(&found[0], &found[1], &found[2]),
        heartbeat_age,
        warning: last_warning(&events.items),
    })
}

/// Draws the table every two seconds until Ctrl-C.
pub async fn live(client: &kube::Client) -> anyhow::Result<()> {
    loop {
        let drawn = match rows(client).await {
            Ok(rows) => table(&rows, 160),
            Err(e) => format!("{}\n", crate::room::said(&e)),
        };
        print!("\x1b[H\x1b[2J{drawn}");
        use std::io::Write;
        let _ = std::io::stdout().flush();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => return Ok(()),
            _ = tokio::time::sleep(Duration::from_secs(2)) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stage_is_the_highest_kind_with_an_answer() {
        let number = json!({"status": {"fizzBuzz": "7"}});
        let asked = json!({"metadata": {"generation": 2}, "status": {"observedGeneration": 1}});
        let tuple = json!({"status": {"allSquares": false}});
        let fermat = json!({"metadata": {"generation": 1}, "status": {"observedGeneration": 1}});
        assert_eq!(stage_of(&[], &[], &[]), 0);
        assert_eq!(stage_of(&[json!({"spec": {}})], &[], &[]), 0);
        assert_eq!(stage_of(&[number.clone()], &[], &[]), 1);
        assert_eq!(stage_of(&[number.clone()], &[tuple.clone()], &[asked]), 2);
        assert_eq!(stage_of(&[number], &[tuple], &[fermat]), 3);
    }

    #[test]
    fn a_row_says_stage_runner_and_warning() {
        let rows = [
            Row {
                participant: "alice".into(),
                stage: 2,
                heartbeat_age: Some(3),
                warning: None,
            },
            Row {
                participant: "bob".into(),
                stage: 0,
                heartbeat_age: Some(40),
                warning: Some("Failed: boom".into()),
            },
            Row {
                participant: "carol".into(),
                stage: 1,
                heartbeat_age: None,
                warning: None,
            },
        ];
        m::choose(Some("en"));
        let drawn = table(&rows, 200);
        let lines: Vec<&str> = drawn.lines().map(str::trim_end).collect();
        assert_eq!(lines[1], "alice        2      up (3 s ago)    -");
        assert_eq!(lines[2], "bob          0      down for 40 s   Failed: boom");
        assert_eq!(lines[3], "carol        1      never started   -");
    }
}
