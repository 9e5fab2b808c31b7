//! Watch streams: initial ADDED events or a replay from the watch cache, then live
//! changes as chunked JSON lines, filtered by selectors (ADDED/DELETED when an object
//! enters or leaves the selection), with BOOKMARKs, `timeoutSeconds` and 410 Expired.

use super::negotiation::{View, content_type};
use super::routing::Target;
use crate::Shared;
use crate::registry::ResourceType;
use crate::selector::{FieldSelector, LabelSelector};
use crate::status::{ApiError, ApiResult};
use crate::store::{self, ChangeType, WatchMsg, Watcher};
use crate::table;
use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, header};
use axum::response::Response;
use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

struct WatchCtx {
    rt: ResourceType,
    view: View,
    include: String,
    lsel: LabelSelector,
    fsel: FieldSelector,
    name: Option<String>,
    shared: Arc<Shared>,
    rx: mpsc::UnboundedReceiver<WatchMsg>,
    pending: VecDeque<Bytes>,
    deadline: tokio::time::Instant,
    bookmarks: bool,
    tick: tokio::time::Interval,
    done: bool,
    first: bool,
}

fn line(ty: &str, obj: Value) -> Bytes {
    let mut s = json!({"type": ty, "object": obj}).to_string();
    s.push('\n');
    Bytes::from(s)
}

impl WatchCtx {
    fn matches(&self, obj: &Value) -> bool {
        self.lsel.matches(obj)
            && self.fsel.matches(obj)
            && self
                .name
                .as_deref()
                .is_none_or(|n| crate::util::name_of(obj) == n)
    }

    fn render(&mut self, ty: &str, stored: &Value) -> Bytes {
        let v = store::to_view(&self.rt, stored);
        let obj = match self.view {
            View::Full => v,
            View::Metadata => table::partial(&v),
            View::Table => {
                let t = table::table(
                    &self.rt,
                    std::slice::from_ref(&v),
                    json!({"resourceVersion": crate::util::rv_of(&v)}),
                    &self.include,
                    self.first,
                );
                self.first = false;
                t
            }
        };
        line(ty, obj)
    }

    fn on_change(&mut self, c: &store::Change) {
        let new_match = self.matches(&c.new);
        let old_match = c.old.as_ref().is_some_and(|o| self.matches(o));
        let ty = match c.kind {
            ChangeType::Added if new_match => "ADDED",
            ChangeType::Deleted if new_match => "DELETED",
            ChangeType::Modified => match (old_match, new_match) {
                (true, true) => "MODIFIED",
                (false, true) => "ADDED",
                (true, false) => "DELETED",
                (false, false) => return,
            },
            _ => return,
        };
        let b = self.render(ty, &c.new);
        self.pending.push_back(b);
        self.shared.faults_io.watch_event();
    }

    fn bookmark(&self, rv: u64, initial_end: bool) -> Bytes {
        let mut meta = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let obj = match self.view {
            View::Metadata => {
                json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta})
            }
            _ => {
                json!({"kind": self.rt.kind, "apiVersion": self.rt.api_version(), "metadata": meta})
            }
        };
        line("BOOKMARK", obj)
    }
}

pub(super) fn watch(
    shared: &Arc<Shared>,
    t: &Target,
    view: View,
    q: &HashMap<String, String>,
    plural: &str,
) -> ApiResult<Response> {
    let (tx, rx) = mpsc::unbounded_channel();
    let mut ctx = WatchCtx::open(shared, t, view, q, plural, rx)?;
    let send_initial = q.get("sendInitialEvents").is_some_and(|b| b == "true");
    let rv_param = q.get("resourceVersion").cloned().unwrap_or_default();
    {
        let mut st = shared.state();
        ctx.begin(&st, t, send_initial, &rv_param)?;
        if !ctx.done {
            st.watch.watchers.push(Watcher {
                storage: t.rt.storage.clone(),
                ns: t.ns.clone(),
                tx,
            });
        }
    }
    let stream = futures::stream::unfold(ctx, |ctx| ctx.next());
    let mut r = Response::new(Body::from_stream(stream));
    if let Ok(h) = HeaderValue::from_str(content_type(view, false)) {
        r.headers_mut().insert(header::CONTENT_TYPE, h);
    }
    Ok(r)
}

/// Whether a watch starts from the objects as they are now (an ADDED event each) rather than
/// from a replay of the changes after its `resourceVersion`: asked for (`sendInitialEvents`),
/// or no resourceVersion, or "0" (any).
fn starts_from_now(send_initial: bool, rv_param: &str) -> bool {
    send_initial || rv_param.is_empty() || rv_param == "0"
}

impl WatchCtx {
    /// A watch's state from its query: selectors, bookmarks, `timeoutSeconds` (30 minutes
    /// when absent) and the server's bookmark interval.
    fn open(
        shared: &Arc<Shared>,
        t: &Target,
        view: View,
        q: &HashMap<String, String>,
        plural: &str,
        rx: mpsc::UnboundedReceiver<WatchMsg>,
    ) -> ApiResult<Self> {
        let lsel = LabelSelector::parse(q.get("labelSelector").map(String::as_str).unwrap_or(""))?;
        let fsel = FieldSelector::parse(
            q.get("fieldSelector").map(String::as_str).unwrap_or(""),
            plural,
        )?;
        let bookmarks = q.get("allowWatchBookmarks").is_some_and(|b| b == "true");
        let timeout = q
            .get("timeoutSeconds")
            .and_then(|s| s.parse::<u64>().ok())
            .map(Duration::from_secs)
            .unwrap_or(Duration::from_secs(1800));
        let interval = *crate::lock(&shared.bookmark_interval);
        Ok(WatchCtx {
            rt: t.rt.clone(),
            view,
            include: q
                .get("includeObject")
                .cloned()
                .unwrap_or_else(|| "Metadata".into()),
            lsel,
            fsel,
            name: t.name.clone(),
            shared: shared.clone(),
            rx,
            pending: VecDeque::new(),
            deadline: tokio::time::Instant::now() + timeout,
            bookmarks,
            tick: tokio::time::interval_at(tokio::time::Instant::now() + interval, interval),
            done: false,
            first: true,
        })
    }

    /// The watch's first events, under the state's lock so that no change falls between them
    /// and the live ones: the current objects (and the initial-events-end bookmark when asked
    /// for), or the watch cache's changes after `rv_param`, or 410 Expired when the cache no
    /// longer reaches back that far (the watch then ends).
    fn begin(
        &mut self,
        st: &store::State,
        t: &Target,
        send_initial: bool,
        rv_param: &str,
    ) -> ApiResult<()> {
        let ns = t.ns.as_deref();
        if starts_from_now(send_initial, rv_param) {
            let objs: Vec<Value> = st
                .scan(&t.rt, ns)
                .map(|(_, v)| v.clone())
                .filter(|v| self.matches(v))
                .collect();
            for o in objs {
                let b = self.render("ADDED", &o);
                self.pending.push_back(b);
            }
            if send_initial {
                let b = self.bookmark(st.rv, true);
                self.pending.push_back(b);
            }
            return Ok(());
        }
        let from: u64 = rv_param
            .parse()
            .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv_param}")))?;
        let floor = st.watch.watch_floor();
        if from < floor || self.shared.misbehave.is_gone(from) {
            let status =
                ApiError::gone(format!("too old resource version: {from} ({floor})")).to_status();
            self.pending.push_back(line("ERROR", status));
            self.done = true;
        } else {
            let changes = st.watch.changes_since(from, &t.rt.storage, ns);
            for c in changes {
                self.on_change(&c);
            }
        }
        Ok(())
    }

    /// The stream's next chunk: what is pending, else the next change, bookmark or the end
    /// (the timeout, or the server dropping the watcher).
    async fn next(mut self) -> Option<(Result<Bytes, Infallible>, Self)> {
        loop {
            if let Some(b) = self.pending.pop_front() {
                return Some((Ok::<Bytes, Infallible>(b), self));
            }
            if self.done {
                return None;
            }
            tokio::select! {
                m = self.rx.recv() => match m {
                    Some(WatchMsg::Change(c)) => self.on_change(&c),
                    None => self.done = true,
                },
                _ = tokio::time::sleep_until(self.deadline) => self.done = true,
                _ = self.tick.tick(), if self.bookmarks => self.on_tick(),
            }
        }
    }

    /// A bookmark at the state's resourceVersion, after every change up to it already sent
    /// (read under the lock, so that the bookmark never runs ahead of an event).
    fn on_tick(&mut self) {
        let shared = self.shared.clone();
        let st = shared.state();
        let rv = st.rv;
        let mut drained = vec![];
        while let Ok(WatchMsg::Change(c)) = self.rx.try_recv() {
            drained.push(c);
        }
        drop(st);
        for c in drained {
            self.on_change(&c);
        }
        let b = self.bookmark(rv, false);
        self.pending.push_back(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watch_replays_only_from_a_given_resource_version() {
        assert!(starts_from_now(false, ""));
        assert!(starts_from_now(false, "0"));
        assert!(starts_from_now(true, "42"));
        assert!(!starts_from_now(false, "42"));
    }
}
