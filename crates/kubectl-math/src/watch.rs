//! `kubectl math tree --watch`: the tree redrawn from watches (no polling) in the terminal's
//! alternate screen, with what just changed highlighted for a few seconds.
//!
//! [`Model`] is the part without a terminal (watch events in, frames out), so that it can be
//! measured and driven headless (`examples/tree_bench.rs`); [`Watch::run`] adds the screen
//! and the keys. The terminal is restored however the view ends: q, Ctrl-C, an error or a
//! panic.

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event::{Event as TermEvent, EventStream, KeyCode, KeyEvent, KeyModifiers};
use crossterm::{cursor, execute, queue, terminal};
use futures::stream::{BoxStream, SelectAll};
use futures::{FutureExt, Stream, StreamExt};
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;

use super::live::{Seen, Tracker};
use super::load::{Connection, PluginError};
use super::memo::Memo;
pub use super::pace::FRAME;
use super::pace::Pacer;
use super::render::{self, Line, Options, Style};
use super::{Kind, Node, NotFound, Object, Objects, Target, build_with};

/// How often an idle view redraws, for its clock and ages.
const TICK: Duration = Duration::from_secs(1);

/// What a watch reports, for any kind.
pub enum Update {
    Seen(Seen, Kind, Object),
    /// A kind's watch (re)listed everything: its cache is complete.
    Synced(Kind),
    /// The watch failed and retries with backoff.
    Failed(String),
}

/// The three watches, their caches and what changed: everything but the terminal.
pub struct Model {
    fermats: Store<Fermat>,
    tuples: Store<Tuple>,
    numbers: Store<Number>,
    synced: [bool; 3],
    /// The list taken before the watches started, shown until they have synced.
    initial: Option<Objects>,
    pub tracker: Tracker,
    /// The last frame's subtrees, for the next frame to reuse.
    memo: Memo,
    /// The last frame's tree, while no watch event came since: a key or the clock redraws
    /// without building anything.
    tree: Option<Tree>,
    /// The last watch error, until the next event shows it recovered.
    pub trouble: Option<String>,
}

use math_controller::api::{Fermat, Number, Tuple};

fn watch_kind<K>(
    client: &Client,
    scope: Option<&str>,
    kind: Kind,
    wrap: fn(Arc<K>) -> Object,
) -> (Store<K>, BoxStream<'static, Update>)
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let api: Api<K> = match scope {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    };
    let (store, writer) = reflector::store();
    let events = watcher(api, watcher::Config::default()).default_backoff();
    let stream = reflector::reflector(writer, events).filter_map(move |event| {
        let update = match event {
            Ok(watcher::Event::Apply(o)) => {
                Some(Update::Seen(Seen::Applied, kind, wrap(Arc::new(o))))
            }
            Ok(watcher::Event::InitApply(o)) => {
                Some(Update::Seen(Seen::Listed, kind, wrap(Arc::new(o))))
            }
            Ok(watcher::Event::Delete(o)) => {
                Some(Update::Seen(Seen::Deleted, kind, wrap(Arc::new(o))))
            }
            Ok(watcher::Event::InitDone) => Some(Update::Synced(kind)),
            Ok(watcher::Event::Init) => None,
            Err(e) => Some(Update::Failed(format!("watching {}s: {e}", kind.as_str()))),
        };
        futures::future::ready(update)
    });
    (store, stream.boxed())
}

impl Model {
    /// Start watching; the returned stream must be polled for the caches to fill.
    pub fn start(
        client: &Client,
        scope: Option<&str>,
        initial: Objects,
    ) -> (Model, impl Stream<Item = Update> + Unpin + use<>) {
        let (fermats, f) = watch_kind(client, scope, Kind::Fermat, Object::Fermat);
        let (tuples, t) = watch_kind(client, scope, Kind::Tuple, Object::Tuple);
        let (numbers, n) = watch_kind(client, scope, Kind::Number, Object::Number);
        let mut updates = SelectAll::new();
        updates.extend([f, t, n]);
        let model = Model {
            fermats,
            tuples,
            numbers,
            synced: [false; 3],
            initial: Some(initial),
            tracker: Tracker::new(),
            memo: Memo::new(),
            tree: None,
            trouble: None,
        };
        (model, updates)
    }

    pub fn update(&mut self, update: Update, now: Instant) {
        match update {
            Update::Seen(seen, kind, object) => {
                self.trouble = None;
                self.tree = None;
                self.tracker.observe(seen, &object, kind, now);
            }
            Update::Synced(kind) => {
                self.trouble = None;
                self.tree = None;
                self.synced[kind as usize] = true;
                if self.synced.iter().all(|s| *s) {
                    self.initial = None;
                }
            }
            Update::Failed(message) => self.trouble = Some(message),
        }
    }

    /// What the caches hold now (the initial list until every watch has synced).
    pub fn objects(&self) -> Objects {
        match &self.initial {
            Some(objects) => objects.clone(),
            None => Objects {
                fermats: self.fermats.state(),
                tuples: self.tuples.state(),
                numbers: self.numbers.state(),
            },
        }
    }

    /// The tree lines of one frame, and how many objects they were built from. A frame of a
    /// Fermat of 20000 must stay cheap while thousands of objects change: the tree is only
    /// built again after a watch event, and then only the subtrees that changed (see
    /// [`Memo`]); a key or the clock just lays the last tree out again.
    pub fn frame(
        &mut self,
        target: &Target,
        namespace: &str,
        options: &Options,
        now: Instant,
    ) -> (Vec<Line>, usize) {
        let tree = match self.tree.take() {
            Some(tree) if &tree.target == target && tree.namespace == namespace => tree,
            _ => {
                let objects = self.objects();
                Tree {
                    roots: build_with(&objects, target, namespace, &mut self.memo),
                    count: objects.len(),
                    target: target.clone(),
                    namespace: namespace.to_string(),
                }
            }
        };
        let marks = self.tracker.marks(now);
        let lines = match &tree.roots {
            Ok(roots) => render::lines(roots, options, &marks, Timestamp::now()),
            Err(missing) => vec![vec![render::span(
                format!("{missing}; waiting for it to appear"),
                Style::Bad,
            )]],
        };
        let count = tree.count;
        self.tree = Some(tree);
        (lines, count)
    }
}

/// A built tree and what it was built for.
struct Tree {
    roots: Result<Vec<Node>, NotFound>,
    count: usize,
    target: Target,
    namespace: String,
}

/// The longest a batch of watch updates is taken in before the keys and the next frame get
/// their turn: a burst of 30000 events must not hold up q.
const BATCH: Duration = Duration::from_millis(20);

/// Take in `first` and every update that is ready now (up to [`BATCH`]), so that a frame
/// shows a whole burst instead of the loop going round once per event. How many were taken.
pub fn drain(
    model: &mut Model,
    updates: &mut (impl Stream<Item = Update> + Unpin),
    first: Update,
) -> usize {
    let start = Instant::now();
    model.update(first, start);
    let mut taken = 1;
    while start.elapsed() < BATCH {
        match updates.next().now_or_never() {
            Some(Some(update)) => model.update(update, Instant::now()),
            _ => break,
        }
        taken += 1;
    }
    taken
}

/// The live view's settings.
pub struct Watch {
    pub conn: Connection,
    pub scope: Option<String>,
    pub target: Target,
    pub namespace: String,
    pub options: Options,
    pub colour: bool,
    /// What the person typed, for the title line.
    pub title: String,
}

/// Restores the terminal when dropped: on q, on an error, and while unwinding from a panic.
struct Screen;

impl Screen {
    fn enter() -> std::io::Result<Screen> {
        terminal::enable_raw_mode()?;
        let screen = Screen;
        execute!(
            std::io::stdout(),
            terminal::EnterAlternateScreen,
            cursor::Hide
        )?;
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
        Ok(screen)
    }
}

fn restore() {
    let _ = execute!(
        std::io::stdout(),
        cursor::Show,
        terminal::LeaveAlternateScreen
    );
    let _ = terminal::disable_raw_mode();
}

impl Drop for Screen {
    fn drop(&mut self) {
        restore();
    }
}

enum Key {
    Quit,
    Scroll(isize),
    Top,
    Bottom,
    Other,
}

fn key(event: KeyEvent, page: isize) -> Key {
    match (event.code, event.modifiers) {
        (KeyCode::Char('c'), KeyModifiers::CONTROL) => Key::Quit,
        (KeyCode::Char('q' | 'Q') | KeyCode::Esc, _) => Key::Quit,
        (KeyCode::Down | KeyCode::Char('j'), _) => Key::Scroll(1),
        (KeyCode::Up | KeyCode::Char('k'), _) => Key::Scroll(-1),
        (KeyCode::PageDown | KeyCode::Char(' '), _) => Key::Scroll(page),
        (KeyCode::PageUp, _) => Key::Scroll(-page),
        (KeyCode::Home | KeyCode::Char('g'), _) => Key::Top,
        (KeyCode::End | KeyCode::Char('G'), _) => Key::Bottom,
        _ => Key::Other,
    }
}

impl Watch {
    /// Draw until q or Ctrl-C.
    pub async fn run(self, initial: Objects) -> Result<(), PluginError> {
        let (mut model, mut updates) =
            Model::start(&self.conn.client, self.scope.as_deref(), initial);
        let _screen = Screen::enter()?;
        let mut keys = EventStream::new();
        let mut scroll: usize = 0;
        let mut pacer = Pacer::new(Instant::now());
        let mut stdout = std::io::stdout();
        let ctrl_c = tokio::signal::ctrl_c();
        tokio::pin!(ctrl_c);
        loop {
            // Nothing new from the cluster: redraw when a highlight fades, and once a second
            // for the clock and the ages (from the caches, no request).
            let tick = pacer.started() + TICK;
            let idle = model.tracker.next_expiry().map_or(tick, |at| at.min(tick));
            let deadline = pacer.next(idle);
            // In this order: quitting first, then keys, then a frame that is due, and only
            // then more watch events (a burst would otherwise hold off frames and keys).
            tokio::select! {
                biased;
                _ = &mut ctrl_c => return Ok(()),
                event = keys.next() => match event {
                    Some(Ok(TermEvent::Key(event))) => {
                        let (_, height) = terminal::size()?;
                        match key(event, height.saturating_sub(2).max(1) as isize) {
                            Key::Quit => return Ok(()),
                            Key::Scroll(by) => scroll = scroll.saturating_add_signed(by),
                            Key::Top => scroll = 0,
                            Key::Bottom => scroll = usize::MAX,
                            Key::Other => {}
                        }
                        pacer.changed();
                    }
                    Some(Ok(_)) => pacer.changed(),
                    Some(Err(e)) => return Err(e.into()),
                    None => return Ok(()),
                },
                _ = tokio::time::sleep_until(deadline.into()) => {
                    let started = Instant::now();
                    scroll = self.draw_frame(&mut model, &mut stdout, scroll, started)?;
                    pacer.drawn(started, started.elapsed());
                }
                Some(update) = updates.next() => {
                    drain(&mut model, &mut updates, update);
                    pacer.changed();
                }
            }
        }
    }

    /// Build, lay out and write one frame; returns the scroll position, clamped.
    fn draw_frame(
        &self,
        model: &mut Model,
        out: &mut impl Write,
        scroll: usize,
        now: Instant,
    ) -> Result<usize, PluginError> {
        let (lines, count) = model.frame(&self.target, &self.namespace, &self.options, now);
        // Built with `render::span`, which escapes: the trouble may quote the API server.
        let status = match &model.trouble {
            Some(trouble) => render::span(format!("  {trouble}; retrying"), Style::Bad),
            None => render::span("", Style::Plain),
        };
        let title = vec![
            render::span(
                format!(
                    "kubectl math {} · {count} objects · {} UTC · q quits, ↑ ↓ PgUp PgDn scroll",
                    self.title,
                    Timestamp::now().strftime("%H:%M:%S")
                ),
                Style::Header,
            ),
            status,
        ];
        Ok(draw(out, &title, &lines, scroll, self.colour)?)
    }
}

/// One screen: the title, then as many tree lines as fit from `scroll` on (the tree's
/// header stays on top). Returns the scroll position, clamped.
fn draw(
    out: &mut impl Write,
    title: &Line,
    lines: &[Line],
    scroll: usize,
    colour: bool,
) -> std::io::Result<usize> {
    let (width, height) = terminal::size()?;
    let (width, height) = (width as usize, height as usize);
    let body = height.saturating_sub(2);
    let rows = lines.len().saturating_sub(1);
    let scroll = scroll.min(rows.saturating_sub(body));
    let mut shown: Vec<&Line> = vec![title];
    shown.extend(lines.first());
    shown.extend(lines.iter().skip(1 + scroll).take(body));
    for (row, line) in shown.into_iter().enumerate() {
        queue!(out, cursor::MoveTo(0, row as u16))?;
        let text = render::to_text(&[render::truncate(line, width)], colour);
        write!(out, "{}", text.trim_end_matches('\n'))?;
        queue!(out, terminal::Clear(terminal::ClearType::UntilNewLine))?;
    }
    queue!(out, terminal::Clear(terminal::ClearType::FromCursorDown))?;
    out.flush()?;
    Ok(scroll)
}
