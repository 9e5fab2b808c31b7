//! Drawing trees: styled lines (shared by the printed tree and the live view), plain or
//! coloured text, and JSON for scripts. Pure: the clock and the highlights come in as values.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::Arc;

use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use super::{Kind, Node, Object, Problem, Ready, display_name};
use math_controller::api::{GROUP, VERSION};

/// How much of the trees to draw.
#[derive(Clone, Debug)]
pub struct Options {
    /// Levels below the roots to show; `None` for all.
    pub depth: Option<usize>,
    /// Children shown per parent before the rest is folded into one summary line.
    pub max_children: usize,
    /// Add a NAMESPACE column.
    pub namespaces: bool,
}

/// What a piece of text looks like; turned into terminal attributes by [`ansi`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    Plain,
    Header,
    /// Tree lines, ages, summaries of folded children.
    Dim,
    /// Ready.
    Good,
    /// Not Ready yet: waiting is not an error.
    Waiting,
    /// Something a controller or a person must fix.
    Bad,
    /// Just changed for the better (back with a new UID, now Ready): the live view's highlight.
    Flash,
    /// Just disappeared.
    FlashBad,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Span {
    pub text: String,
    pub style: Style,
}

pub type Line = Vec<Span>;

/// A piece of a line. Every piece is built here, escaped (see [`escape_terminal`]), so that
/// widths are counted on what the terminal will show and nothing from the cluster reaches it raw.
pub fn span(text: impl Into<String>, style: Style) -> Span {
    let text = text.into();
    let text = match escape_terminal(&text) {
        Cow::Borrowed(_) => text,
        Cow::Owned(escaped) => escaped,
    };
    Span { text, style }
}

/// A change the live view has just seen, shown for a few seconds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Flash {
    /// The object was deleted and is back, under a new UID.
    Back { previous_uid: String },
    /// Its Ready condition just became True for its current generation.
    NowReady,
}

/// The highlights in force when drawing.
#[derive(Clone, Debug, Default)]
pub struct Marks {
    pub by_uid: HashMap<String, Vec<Flash>>,
    /// (kind, namespace, name) of objects deleted a moment ago.
    pub gone: HashSet<(Kind, String, String)>,
}

/// One row before the columns are aligned.
struct Row {
    namespace: String,
    tree: Vec<Span>,
    ready: Span,
    age: String,
    status: Vec<Span>,
}

/// The header and one line per shown node, columns aligned.
pub fn lines(roots: &[Node], opts: &Options, marks: &Marks, now: Timestamp) -> Vec<Line> {
    let mut rows = Vec::new();
    for root in roots {
        walk(root, "", None, 0, opts, marks, now, &mut rows);
    }
    let width = |text: &str| text.chars().count();
    let tree_width = rows
        .iter()
        .map(|r| r.tree.iter().map(|s| width(&s.text)).sum::<usize>())
        .max()
        .unwrap_or(0)
        .max(4);
    let ns_width = rows
        .iter()
        .map(|r| width(&r.namespace))
        .max()
        .unwrap_or(0)
        .max(9);
    let age_width = rows.iter().map(|r| width(&r.age)).max().unwrap_or(0).max(3);
    let pad = |text: &str, to: usize| " ".repeat(to.saturating_sub(width(text)) + 2);

    let mut out = Vec::with_capacity(rows.len() + 1);
    let mut header = Vec::new();
    if opts.namespaces {
        header.push(span(
            format!("NAMESPACE{}", pad("NAMESPACE", ns_width)),
            Style::Header,
        ));
    }
    header.push(span(
        format!("NAME{}", pad("NAME", tree_width)),
        Style::Header,
    ));
    header.push(span(format!("READY{}", pad("READY", 5)), Style::Header));
    header.push(span(format!("AGE{}", pad("AGE", age_width)), Style::Header));
    header.push(span("STATUS", Style::Header));
    out.push(header);
    for row in rows {
        let mut line = Vec::new();
        if opts.namespaces {
            let ns = format!("{}{}", row.namespace, pad(&row.namespace, ns_width));
            line.push(span(ns, Style::Plain));
        }
        let used: usize = row.tree.iter().map(|s| width(&s.text)).sum();
        line.extend(row.tree);
        line.push(span(" ".repeat(tree_width - used + 2), Style::Plain));
        let ready_pad = pad(&row.ready.text, 5);
        line.push(row.ready);
        line.push(span(ready_pad, Style::Plain));
        line.push(span(
            format!("{}{}", row.age, pad(&row.age, age_width)),
            Style::Dim,
        ));
        line.extend(row.status);
        out.push(line);
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn walk(
    node: &Node,
    indent: &str,
    branch: Option<bool>,
    depth: usize,
    opts: &Options,
    marks: &Marks,
    now: Timestamp,
    rows: &mut Vec<Row>,
) {
    let (glyph, child_indent) = match branch {
        None => ("", String::new()),
        Some(true) => ("└─ ", format!("{indent}   ")),
        Some(false) => ("├─ ", format!("{indent}│  ")),
    };
    rows.push(row(node, &format!("{indent}{glyph}"), marks, now));
    if node.children.is_empty() {
        return;
    }
    let limit = match opts.depth {
        Some(max) if depth >= max => 0,
        _ => opts.max_children,
    };
    let shown = shown(&node.children, limit, marks);
    let folded = node.children.len() - shown.len();
    for (i, &index) in shown.iter().enumerate() {
        let last = i + 1 == shown.len() && folded == 0;
        let child = &node.children[index];
        walk(
            child,
            &child_indent,
            Some(last),
            depth + 1,
            opts,
            marks,
            now,
            rows,
        );
    }
    if folded > 0 {
        let hidden: Vec<&Node> = (0..node.children.len())
            .filter(|i| shown.binary_search(i).is_err())
            .map(|i| node.children[i].as_ref())
            .collect();
        let text = fold_summary(&hidden, !shown.is_empty());
        rows.push(Row {
            namespace: escape_terminal(&node.namespace).into_owned(),
            tree: vec![
                span(format!("{child_indent}└─ "), Style::Dim),
                span(text, Style::Dim),
            ],
            ready: span("", Style::Plain),
            age: String::new(),
            status: Vec::new(),
        });
    }
}

/// Which children to draw when only `limit` fit: the ones with something wrong or that just
/// changed (a learner looks for those), then the healthy ones; as indices in ascending
/// order (the parent's order, and searchable).
pub fn shown(children: &[Arc<Node>], limit: usize, marks: &Marks) -> Vec<usize> {
    if children.len() <= limit {
        return (0..children.len()).collect();
    }
    // Once per child: a Fermat of 20000 has 10000 Tuples to look through every frame.
    let notable: Vec<bool> = (children.iter())
        .map(|n| !n.healthy || flashed(n, marks))
        .collect();
    let first = (0..children.len()).filter(|&i| notable[i]);
    let rest = (0..children.len()).filter(|&i| !notable[i]);
    let mut picked: Vec<usize> = first.chain(rest).take(limit).collect();
    picked.sort_unstable();
    picked
}

/// Whether the node or one below it is highlighted.
fn flashed(node: &Node, marks: &Marks) -> bool {
    if marks.by_uid.is_empty() {
        return false;
    }
    node.uid().is_some_and(|uid| marks.by_uid.contains_key(uid))
        || node.children.iter().any(|c| flashed(c, marks))
}

/// `… 480 more Tuples, all Ready`, or what the folded children are: `… 9000 more Tuples:
/// 8000 Ready, 990 not Ready, 10 missing`. Without `more` when none of them is drawn.
pub fn fold_summary(hidden: &[&Node], more: bool) -> String {
    let kind = hidden.first().map(|n| n.kind).unwrap_or(Kind::Number);
    let count = hidden.len();
    let noun = if count == 1 {
        kind.as_str().to_string()
    } else {
        format!("{}s", kind.as_str())
    };
    let more = if more { "more " } else { "" };
    let healthy = hidden.iter().filter(|n| n.healthy).count();
    let missing = hidden.iter().filter(|n| n.object.is_none()).count();
    if healthy == count {
        let all = if count == 1 { "Ready" } else { "all Ready" };
        return format!("… {count} {more}{noun}, {all}");
    }
    let mut parts = Vec::new();
    if healthy > 0 {
        parts.push(format!("{healthy} Ready"));
    }
    if count - healthy - missing > 0 {
        parts.push(format!("{} not Ready", count - healthy - missing));
    }
    if missing > 0 {
        parts.push(format!("{missing} missing"));
    }
    format!("… {count} {more}{noun}: {}", parts.join(", "))
}

/// One node's row: its name in the tree, Ready, age, and its status followed by what is wrong
/// with it and what just changed.
fn row(node: &Node, prefix: &str, marks: &Marks, now: Timestamp) -> Row {
    let flashes = node.uid().and_then(|uid| marks.by_uid.get(uid));
    let gone = node.object.is_none()
        && marks
            .gone
            .contains(&(node.kind, node.namespace.clone(), node.name.clone()));
    let tree = vec![
        span(prefix, Style::Dim),
        span(
            display_name(node.kind, &node.name),
            name_style(node, flashes.is_some(), gone),
        ),
    ];
    let mut status = vec![span(node.summary.clone(), Style::Plain)];
    if let Ready::False { message, .. } = &node.ready {
        status.push(span(format!("  {message}"), Style::Waiting));
    }
    status.extend(node.problems.iter().map(|p| problem_span(p, gone)));
    status.extend((flashes.into_iter().flatten()).map(|f| flash_span(f, node)));
    Row {
        namespace: escape_terminal(&node.namespace).into_owned(),
        tree,
        ready: ready_span(&node.ready),
        age: created_ago(node, now),
        status,
    }
}

/// A name stands out when it just changed (`flashed`), just disappeared (`gone`), or is
/// missing: where the learner's eye should go.
fn name_style(node: &Node, flashed: bool, gone: bool) -> Style {
    if flashed {
        Style::Flash
    } else if gone {
        Style::FlashBad
    } else if node.object.is_none() {
        Style::Bad
    } else {
        Style::Plain
    }
}

/// The READY column: True, False (waiting, not an error) or `-` for no condition yet.
fn ready_span(ready: &Ready) -> Span {
    match ready {
        Ready::True => span("True", Style::Good),
        Ready::False { .. } => span("False", Style::Waiting),
        Ready::Unknown => span("-", Style::Dim),
    }
}

/// The AGE column, as kubectl shows it; `-` for a child that does not exist.
fn created_ago(node: &Node, now: Timestamp) -> String {
    (node.object.as_ref())
        .and_then(|o| o.meta().creation_timestamp.as_ref())
        .map(|t| age(now.duration_since(t.0).as_secs()))
        .unwrap_or_else(|| "-".to_string())
}

/// One problem in the status column. A child deleted a moment ago says so, highlighted,
/// rather than the plain "missing" it will say once the highlight fades.
fn problem_span(problem: &Problem, gone: bool) -> Span {
    if gone && *problem == Problem::Missing {
        span("  ✗ gone: deleted just now", Style::FlashBad)
    } else {
        span(format!("  ✗ {}", problem.message()), Style::Bad)
    }
}

/// One change the live view has just seen, in the status column.
fn flash_span(flash: &Flash, node: &Node) -> Span {
    let text = match flash {
        Flash::Back { previous_uid } => format!(
            "  ↻ back, new uid {} (was {})",
            short_uid(node.uid().unwrap_or_default()),
            short_uid(previous_uid)
        ),
        Flash::NowReady => "  ✓ now Ready".to_string(),
    };
    span(text, Style::Flash)
}

fn short_uid(uid: &str) -> &str {
    uid.get(..8).unwrap_or(uid)
}

/// Text from the cluster, made safe to print on a terminal: no control character reaches it,
/// so a name, a status or a message cannot set the terminal's title, clear its screen or move
/// its cursor (CVE-2021-25743). ESC and CR are replaced as kubectl replaces them since that
/// fix (`^[` and `\r`, cli-runtime's `printers.EscapeTerminal`), so the two tools print the
/// same thing; the control characters kubectl lets through are escaped as well: `\n` and `\t`,
/// the rest of C0 and DEL in caret notation (BEL is `^G`), C1 as `\u009b`.
pub fn escape_terminal(text: &str) -> Cow<'_, str> {
    // Every span of every frame comes through here: look at bytes first (C1 characters are
    // 0xC2 0x80..=0x9F in UTF-8), decode only when one may be a control character.
    let maybe = text.bytes().any(|b| b < 0x20 || b == 0x7f || b == 0xc2);
    if !maybe || !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\x1b' => out.push_str("^["),
            '\r' => out.push_str("\\r"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\x7f' => out.push_str("^?"),
            c if (c as u32) < 0x20 => {
                out.push('^');
                out.push(char::from(c as u8 + 0x40));
            }
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// The trees' JSON as `-o json` prints it. serde_json escapes C0 characters inside strings but
/// writes DEL and C1 raw; those are escaped too (`\u007f`), which is the same JSON.
pub fn json_text(value: &Value) -> String {
    let text = serde_json::to_string_pretty(value).unwrap_or_default();
    // Outside strings there are only the line ends of the layout, so a `\\uXXXX` in place of
    // any other control character is the same JSON.
    let mut out = String::with_capacity(text.len() + 1);
    for c in text.chars() {
        if c.is_control() && c != '\n' {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    out.push('\n');
    out
}

/// An age the way kubectl prints one: `42s`, `5m10s`, `3h`, `2d`.
pub fn age(seconds: i64) -> String {
    let s = seconds.max(0);
    match s {
        0..120 => format!("{s}s"),
        120..600 if s % 60 != 0 => format!("{}m{}s", s / 60, s % 60),
        120..10_800 => format!("{}m", s / 60),
        10_800..28_800 if s % 3600 >= 60 => format!("{}h{}m", s / 3600, s % 3600 / 60),
        10_800..172_800 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86_400),
    }
}

/// The terminal attributes of a style (SGR codes), `None` for the terminal's default.
pub fn ansi(style: Style) -> Option<&'static str> {
    match style {
        Style::Plain => None,
        Style::Header => Some("1"),
        Style::Dim => Some("2"),
        Style::Good => Some("32"),
        Style::Waiting => Some("33"),
        Style::Bad => Some("31"),
        Style::Flash => Some("30;42"),
        Style::FlashBad => Some("97;41"),
    }
}

/// Lines as text, with terminal colours or without (piped, `NO_COLOR`). Trailing spaces go.
pub fn to_text(lines: &[Line], colour: bool) -> String {
    let mut out = String::new();
    for line in lines {
        let mut text = String::new();
        for s in line {
            match ansi(s.style).filter(|_| colour && !s.text.is_empty()) {
                Some(code) => {
                    let _ = write!(text, "\x1b[{code}m{}\x1b[0m", s.text);
                }
                None => text.push_str(&s.text),
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    }
    out
}

/// The first `width` characters of a line, for a terminal that is narrower.
pub fn truncate(line: &Line, width: usize) -> Line {
    let mut left = width;
    let mut out = Vec::new();
    for s in line {
        if left == 0 {
            break;
        }
        let text: String = s.text.chars().take(left).collect();
        left -= text.chars().count();
        out.push(span(text, s.style));
    }
    out
}

/// The trees as JSON (`-o json`): each object's apiVersion, kind, metadata, spec and status
/// as the API server has them, plus `ready`, `summary`, `problems` and `children`. Only
/// `depth` limits it: scripts get every child.
pub fn to_json(roots: &[Node], depth: Option<usize>) -> Value {
    let items: Vec<Value> = roots.iter().map(|n| node_json(n, depth, 0)).collect();
    json!({ "items": items })
}

fn node_json(node: &Node, depth: Option<usize>, level: usize) -> Value {
    let (metadata, spec, status) = match &node.object {
        Some(object) => {
            let meta = object.meta();
            let metadata = json!({
                "name": meta.name,
                "namespace": meta.namespace,
                "uid": meta.uid,
                "generation": meta.generation,
                "creationTimestamp": meta.creation_timestamp,
                "deletionTimestamp": meta.deletion_timestamp,
            });
            let (spec, status) = match object {
                Object::Fermat(o) => (json!(o.spec), json!(o.status)),
                Object::Tuple(o) => (json!(o.spec), json!(o.status)),
                Object::Number(o) => (json!(o.spec), json!(o.status)),
            };
            (metadata, spec, status)
        }
        None => (
            json!({ "name": node.name, "namespace": node.namespace }),
            Value::Null,
            Value::Null,
        ),
    };
    let (ready, reason) = match &node.ready {
        Ready::True => ("True", None),
        Ready::False { reason, .. } => ("False", Some(reason.clone())),
        Ready::Unknown => ("Unknown", None),
    };
    let problems: Vec<Value> = (node.problems.iter())
        .map(|p| json!({ "type": p.code(), "message": p.message() }))
        .collect();
    let children: Vec<Value> = match depth {
        Some(max) if level >= max => Vec::new(),
        _ => (node.children.iter())
            .map(|c| node_json(c, depth, level + 1))
            .collect(),
    };
    json!({
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "kind": node.kind.as_str(),
        "metadata": metadata,
        "exists": node.object.is_some(),
        "ready": ready,
        "reason": reason,
        "summary": node.summary,
        "healthy": node.healthy,
        "problems": problems,
        "spec": spec,
        "status": status,
        "children": children,
    })
}
