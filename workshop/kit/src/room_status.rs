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

/// Releases the runner's heartbeat in `namespace` as it stops: the holder is cleared (the apply
/// leaves it out), the renewal time stays. The finished manager, started next (`cargo run`),
/// then knows at once that no workshop controller runs here any more.
pub async fn release(client: &kube::Client, namespace: &str) -> kube::Result<()> {
    let lease = json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": HEARTBEAT},
        "spec": {
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

/// The table as drawn: a header, one line per participant, each column as wide as its widest
/// cell on screen (a Japanese character takes two columns), cut at `width`.
pub fn table(rows: &[Row], width: usize, lang: m::Lang) -> String {
    let say = |msg: &m::Msg| msg.render(lang, &[]);
    let header = [
        say(&m::STATUS_PARTICIPANT),
        say(&m::STATUS_STAGE),
        say(&m::STATUS_RUNNER),
        say(&m::STATUS_WARNING),
    ];
    let mut lines = vec![header];
    for row in rows {
        let runner = match row.heartbeat_age {
            Some(age) if age <= DOWN_AFTER_SECONDS => {
                m::STATUS_UP.render(lang, &[("seconds", &age)])
            }
            Some(age) => m::STATUS_DOWN_FOR.render(lang, &[("seconds", &age)]),
            None => say(&m::STATUS_NEVER),
        };
        let warning = row.warning.clone().unwrap_or_else(|| "-".to_string());
        lines.push([
            row.participant.clone(),
            row.stage.to_string(),
            runner,
            warning,
        ]);
    }
    let widths: Vec<usize> = (0..3)
        .map(|column| {
            lines
                .iter()
                .map(|l| on_screen(&l[column]))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for line in &lines {
        let mut drawn = String::new();
        for (column, cell) in line.iter().enumerate() {
            drawn.push_str(cell);
            if let Some(wide) = widths.get(column) {
                drawn.push_str(&" ".repeat(wide - on_screen(cell) + 2));
            }
        }
        let mut used = 0;
        let cut: String = drawn
            .chars()
            .take_while(|c| {
                used += on_screen(&c.to_string());
                used <= width
            })
            .collect();
        out.push_str(cut.trim_end());
        out.push('\n');
    }
    out
}

/// How many terminal columns `text` takes: two for the wide (CJK) characters.
fn on_screen(text: &str) -> usize {
    text.chars()
        .map(|c| {
            if ('\u{1100}'..='\u{ffdc}').contains(&c) && !c.is_ascii() {
                2
            } else {
                1
            }
        })
        .sum()
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
            Ok(rows) => table(&rows, 160, m::lang()),
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
        assert_eq!(stage_of(std::slice::from_ref(&number), &[], &[]), 1);
        assert_eq!(
            stage_of(
                std::slice::from_ref(&number),
                std::slice::from_ref(&tuple),
                &[asked]
            ),
            2
        );
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
        let drawn = table(&rows, 200, m::Lang::En);
        let lines: Vec<&str> = drawn.lines().map(str::trim_end).collect();
        assert_eq!(lines[0], "PARTICIPANT  STAGE  RUNNER         LAST WARNING");
        assert_eq!(lines[1], "alice        2      up (3 s ago)   -");
        assert_eq!(lines[2], "bob          0      down for 40 s  Failed: boom");
        assert_eq!(lines[3], "carol        1      never started  -");
        let drawn = table(&rows, 200, m::Lang::Ja);
        let lines: Vec<&str> = drawn.lines().collect();
        assert_eq!(
            lines[0],
            "参加者  ステージ  ランナー         最後の Warning"
        );
        assert_eq!(lines[1], "alice   2         動作中 (3 秒前)  -");
    }
}
