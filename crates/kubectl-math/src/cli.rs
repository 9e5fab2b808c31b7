//! The command line of `kubectl math` (installed as the `kubectl-math` binary, which kubectl
//! finds on the PATH), and the one-shot `tree` command.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::{Args, Parser, Subcommand, ValueEnum};
use k8s_openapi::jiff::Timestamp;

use super::load::{self, PluginError};
use super::render::{self, Marks, Options};
use super::{Kind, Node, Objects, Target, build, watch};

/// Default for `--max-children`: a Tuple's Numbers fit; a Fermat's 10000 Tuples do not.
pub const MAX_CHILDREN: usize = 20;

#[derive(Debug, Parser)]
#[command(
    name = "kubectl-math",
    bin_name = "kubectl math",
    version,
    about = "See the Fermat → Tuple → Number ownership trees, their statuses and what is wrong",
    long_about = None
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// kubectl's usual flags, accepted before or after the command.
#[derive(Debug, Args)]
pub struct Global {
    /// The namespace (default: the kubeconfig context's, else "default").
    #[arg(short = 'n', long, global = true)]
    pub namespace: Option<String>,
    /// Every namespace.
    #[arg(short = 'A', long, global = true, conflicts_with = "namespace")]
    pub all_namespaces: bool,
    /// The kubeconfig file (default: $KUBECONFIG, else ~/.kube/config).
    #[arg(long, global = true, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use (default: the current one).
    #[arg(long, global = true, value_name = "NAME")]
    pub context: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the ownership tree: each object's status, Ready condition and age, and what is
    /// wrong (a child missing, controlled by someone else, with a spec its parent does not
    /// want, or a status older than its spec).
    Tree(TreeArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Text,
    Json,
}

#[derive(Debug, Args)]
pub struct TreeArgs {
    /// `fermat/NAME`, `tuple/NAME`, `number/NAME` (or `fermat NAME`). None: every Fermat,
    /// and every Tuple and Number without an owner.
    #[arg(num_args = 0..=2, value_name = "KIND/NAME")]
    pub target: Vec<String>,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    pub output: Output,
    /// Levels below the top object to show (0: the object alone).
    #[arg(long, value_name = "N")]
    pub depth: Option<usize>,
    /// Children shown per parent; the rest is summed up in one line (not for -o json).
    #[arg(long, value_name = "N", default_value_t = MAX_CHILDREN)]
    pub max_children: usize,
    /// Redraw live as the cluster changes; q or Ctrl-C quits.
    #[arg(short = 'w', long)]
    pub watch: bool,
}

/// `fermat/x`, `fermat x`, `fer/x`, or nothing.
pub fn parse_target(words: &[String]) -> Result<Target, PluginError> {
    let (kind, name) = match words {
        [] => return Ok(Target::All),
        [one] => match one.split_once('/') {
            Some((kind, name)) => (kind, name),
            None if Kind::parse(one).is_some() => {
                return Err(PluginError::Usage(format!(
                    "name the {one}: kubectl math tree {one}/NAME"
                )));
            }
            None => (one.as_str(), ""),
        },
        [kind, name, ..] => (kind.as_str(), name.as_str()),
    };
    let kind = Kind::parse(kind).ok_or_else(|| {
        PluginError::Usage(format!(
            "\"{}\" is not fermat/NAME, tuple/NAME or number/NAME",
            words.join(" ")
        ))
    })?;
    if name.is_empty() {
        return Err(PluginError::Usage(format!(
            "name the {}: kubectl math tree {}/NAME",
            kind.as_str().to_lowercase(),
            kind.as_str().to_lowercase()
        )));
    }
    Ok(Target::One {
        kind,
        name: name.to_string(),
    })
}

/// Colour only on a terminal, and never when NO_COLOR is set (https://no-color.org).
pub fn colour_wanted(is_terminal: bool) -> bool {
    is_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Run the command line: refuse what cannot work before connecting, list once, then either
/// hand the screen to the live view or print the tree once.
pub async fn run(cli: Cli) -> Result<(), PluginError> {
    let Command::Tree(args) = cli.command;
    let target = parse_target(&args.target)?;
    refuse_contradictions(&cli.global, &args, &target, std::io::stdout().is_terminal())?;
    let conn = load::connect(cli.global.kubeconfig, cli.global.context).await?;
    let namespace = cli
        .global
        .namespace
        .unwrap_or_else(|| conn.namespace.clone());
    let scope = (!cli.global.all_namespaces).then_some(namespace.as_str());
    let options = Options {
        depth: args.depth,
        max_children: args.max_children,
        namespaces: cli.global.all_namespaces,
    };

    let started = Instant::now();
    let objects = load::list_all(&conn, scope).await?;
    let listed = started.elapsed();
    if args.watch {
        // Everything that can be wrong with the request shows up above, before the screen
        // is taken over.
        build(&objects, &target, &namespace)?;
        let watch = watch::Watch {
            conn,
            scope: scope.map(str::to_string),
            target,
            namespace,
            options,
            colour: colour_wanted(true),
            title: std::env::args().skip(1).collect::<Vec<_>>().join(" "),
        };
        return watch.run(objects).await;
    }
    print_once(&objects, &target, &namespace, args.output, &options, listed)
}

/// Flags that contradict each other or the terminal, refused before anything is asked of the
/// cluster, so the person learns it at once and nothing is half-drawn.
pub fn refuse_contradictions(
    global: &Global,
    args: &TreeArgs,
    target: &Target,
    stdout_is_terminal: bool,
) -> Result<(), PluginError> {
    if global.all_namespaces && *target != Target::All {
        return Err(PluginError::Usage(
            "a single object cannot be looked up across all namespaces: use -n NAMESPACE".into(),
        ));
    }
    if args.watch && args.output == Output::Json {
        return Err(PluginError::Usage(
            "--watch draws on a terminal; -o json prints once".into(),
        ));
    }
    if args.watch && !stdout_is_terminal {
        return Err(PluginError::Usage(
            "--watch draws in a terminal and this output is not one: drop --watch to print the tree once".into(),
        ));
    }
    Ok(())
}

/// The one-shot tree: built, drawn and printed once. With `KUBECTL_MATH_TIMINGS` set, stderr
/// says where the time went (the list took `listed`), to tell a slow cluster from a slow
/// plugin.
fn print_once(
    objects: &Objects,
    target: &Target,
    namespace: &str,
    output: Output,
    options: &Options,
    listed: Duration,
) -> Result<(), PluginError> {
    let started = Instant::now();
    let roots = build(objects, target, namespace)?;
    let built = started.elapsed();
    let started = Instant::now();
    let text = draw(&roots, output, options);
    let rendered = started.elapsed();
    if roots.is_empty() && output == Output::Text {
        let scope = (!options.namespaces).then_some(namespace);
        say_nothing_found(scope);
    } else {
        print(&text);
    }
    if std::env::var_os("KUBECTL_MATH_TIMINGS").is_some() {
        eprintln!(
            "timings: list {listed:?} ({} objects), build {built:?}, render {rendered:?} ({} lines)",
            objects.len(),
            text.lines().count()
        );
    }
    Ok(())
}

/// The trees as `output` asks: JSON for scripts, or aligned text (coloured on a terminal).
fn draw(roots: &[Node], output: Output, options: &Options) -> String {
    match output {
        Output::Json => render::json_text(&render::to_json(roots, options.depth)),
        Output::Text => {
            let lines = render::lines(roots, options, &Marks::default(), Timestamp::now());
            render::to_text(&lines, colour_wanted(std::io::stdout().is_terminal()))
        }
    }
}

/// An empty tree prints nothing on stdout; stderr says where nothing was found, as
/// `kubectl get` does.
fn say_nothing_found(scope: Option<&str>) {
    match scope {
        Some(ns) => eprintln!("No Fermats, Tuples or Numbers found in namespace {ns}."),
        None => eprintln!("No Fermats, Tuples or Numbers found."),
    }
}

/// The drawn tree on stdout. A closed pipe (`| head`) is not an error worth a message.
fn print(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(text.as_bytes())
        .and_then(|_| stdout.flush());
}
