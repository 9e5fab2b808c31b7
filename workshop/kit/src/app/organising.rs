//! `math-workshop room` and `room-down` (`make workshop-room`, `make workshop-room-down`): the
//! organiser's commands, in the order an organiser needs their answers. The names first (a
//! refused one costs nothing yet), then the cluster and the address the files will carry (tried
//! before anything is written), then the room, then the table of who has which file until when.

use std::path::{Path, PathBuf};

use k8s_openapi::jiff::Timestamp;
use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::messages as m;
use crate::organiser::{self, files, names, reach, table};
use crate::{check, cluster, crds, t};

/// What `room` was asked: the names as given, `--server` (`ROOM_SERVER`), `--token-hours`
/// (`TOKEN_HOURS`), `--dir`. (The help texts are in the catalogue, set by the app's HELP.)
#[derive(clap::Args, Debug)]
pub(super) struct Asked {
    #[arg(required = true)]
    participants: Vec<String>,
    #[arg(long)]
    server: Option<String>,
    #[arg(long, default_value_t = organiser::TOKEN_HOURS, allow_negative_numbers = true)]
    token_hours: i64,
    #[arg(long)]
    dir: Option<PathBuf>,
}

/// Where the participants' files are: `--dir`, else `workshop/room/` of the repository.
fn room_dir(dir: Option<PathBuf>) -> PathBuf {
    dir.unwrap_or_else(|| files::room_dir(&check::repository()))
}

/// `make workshop-room`: the reference solution's CRDs and every participant's namespace,
/// rights and kubeconfig, on the cluster of the organiser's kubeconfig; the closing table.
pub(super) async fn set_up(asked: Asked) -> anyhow::Result<()> {
    let refused = names::refusals(&asked.participants);
    if !refused.is_empty() {
        for line in &refused {
            eprintln!("{line}");
        }
        anyhow::bail!("{}", m::NAMES_REFUSED.text());
    }
    anyhow::ensure!(
        (1..=8760).contains(&asked.token_hours),
        "{}",
        t!(m::ROOM_TOKEN_HOURS_BAD, hours = asked.token_hours)
    );
    let instead = m::ROOM_NEEDS_A_CLUSTER.text();
    let connected = cluster::connect(&instead).await?;
    let (server, portable) = address(asked.server.as_deref(), &connected.described).await?;
    println!(
        "{}",
        t!(
            m::ROOM_ON,
            described = connected.described,
            count = asked.participants.len(),
            server = server.to_string().trim_end_matches('/')
        )
    );
    let dir = room_dir(asked.dir);
    let crds = crds::generate(&crate::solutions::track());
    let room = organiser::Room {
        crds: &crds,
        cluster: &portable,
        participants: &asked.participants,
        dir: &dir,
        token_hours: asked.token_hours,
    };
    let handed = organiser::set_up(&connected.client, &room).await?;
    tell_shorter_tokens(&handed, asked.token_hours);
    println!(
        "{}",
        t!(
            m::ROOM_READY,
            count = handed.len(),
            described = connected.described
        )
    );
    for line in table::closing(&handed, &check::repository(), Timestamp::now()) {
        println!("{line}");
    }
    Ok(())
}

/// The address the files carry ([`files::room_server`]) and the participants' cluster entry
/// ([`files::portable_cluster`]), once the API server answered there with a certificate that
/// names it ([`reach::answers_at`]); `explicit` is `ROOM_SERVER`, `described` the organiser's
/// cluster as the lines name it.
async fn address(
    explicit: Option<&str>,
    described: &str,
) -> anyhow::Result<(http::Uri, serde_json::Value)> {
    let kubeconfig = Kubeconfig::read()?;
    let (context, entry) = files::current_cluster(&kubeconfig)?;
    let server =
        files::room_server(explicit, &context, &entry, described).map_err(anyhow::Error::msg)?;
    let portable = files::portable_cluster(&entry, &server).map_err(anyhow::Error::msg)?;
    let config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    reach::answers_at(config, &server)
        .await
        .map_err(anyhow::Error::msg)?;
    Ok((server, portable))
}

/// One line per token the cluster cut shorter than asked (its maximum lifetime).
fn tell_shorter_tokens(handed: &[table::Handed], hours: i64) {
    let asked_until = Timestamp::now().as_second() + hours * 3600;
    for one in handed {
        // A minute's grace: the server counts from its own clock.
        if let Some(expires) = one.expires.filter(|e| e.as_second() < asked_until - 60) {
            eprintln!(
                "{}",
                t!(
                    m::ROOM_TOKEN_SHORTER,
                    participant = one.participant,
                    expires = expires,
                    hours = hours
                )
            );
        }
    }
}

/// `make workshop-room-down`: everything the room made goes ([`organiser::down`]).
pub(super) async fn take_down(dir: Option<PathBuf>) -> anyhow::Result<()> {
    let instead = m::ROOM_NEEDS_A_CLUSTER.text();
    let connected = cluster::connect(&instead).await?;
    println!("{}", t!(m::DOWN_ON, described = connected.described));
    let dir = room_dir(dir);
    let shown = shown(&dir);
    let found =
        organiser::down::take_down(&connected.client, &shown, &mut |line| println!("{line}"))
            .await?;
    if !found {
        println!("{}", t!(m::DOWN_NOTHING, described = connected.described));
    }
    Ok(())
}

/// `dir` relative to the current directory when it is inside it (`workshop/room`), for the
/// lines that name it.
fn shown(dir: &Path) -> PathBuf {
    std::env::current_dir()
        .ok()
        .and_then(|here| dir.strip_prefix(here).ok().map(Path::to_path_buf))
        .unwrap_or_else(|| dir.to_path_buf())
}
