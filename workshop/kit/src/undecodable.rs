//! Objects the learner's own types cannot decode, kept out of the controllers' lists and
//! watches so that one of them stops nothing else.
//!
//! A CRD changed under stored objects is ordinary in a workshop: a learner whose `value` is an
//! `i32` meets a stored `number-large.yaml`; `make install` after `make workshop-install`
//! leaves objects written under the other schema. kube decodes a list page as one
//! `ObjectList<K>`, so one such object failed every list of its kind: the learner's
//! `Controller` never started, and nothing said which object was at fault. The learner's code
//! stays as kube-rs's examples write it (`Controller::new(ctx.watched(), ..)`); instead the
//! runner's client ([`tolerant`]) reads each list and watch of the three kinds and leaves out
//! the objects the track's types cannot decode ([`crate::track::Track::decodes`]), naming
//! each once in the log (kind, namespace, name, the field); a watch event that brings it back
//! decodable lets it in again, one that deletes it is let through as it came. The finished
//! manager does the same inside its watches (`src/cluster/undecodable.rs`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::StreamExt;
use http::{Method, Request, Response};
use http_body::Frame;
use http_body_util::{BodyStream, StreamBody};
use kube::client::Body;
use serde_json::Value;

use crate::messages as m;
use crate::t;

/// Why an object of `plural` cannot be decoded by the learner's type, if it cannot; `None`
/// for a plural that is not one of the three kinds.
pub type Decodes = fn(plural: &str, object: &Value) -> Option<String>;

/// What the controllers' client answers: the API server's bytes, with undecodable objects
/// left out of the lists and watches of the three kinds.
type Answer = StreamBody<futures::stream::BoxStream<'static, Result<Frame<Bytes>, kube::Error>>>;

/// `client`, whose lists and watches of the three kinds hold only what `decodes` accepts.
pub fn tolerant(client: kube::Client, decodes: Decodes) -> kube::Client {
    let default_namespace = client.default_namespace().to_string();
    let named = Named::default();
    let service = tower::service_fn(move |request: Request<Body>| {
        let (client, named) = (client.clone(), named.clone());
        async move {
            let read = Read::of(&request);
            let response = client.send(request).await?;
            Ok::<_, kube::Error>(match read {
                Some(read) if response.status().is_success() => {
                    read.filter(response, decodes, named).await?
                }
                _ => response.map(|body| StreamBody::new(frames(body))),
            })
        }
    });
    kube::Client::new(service, default_namespace)
}

/// A body's frames, as they come.
fn frames(body: Body) -> futures::stream::BoxStream<'static, Result<Frame<Bytes>, kube::Error>> {
    BodyStream::new(body).boxed()
}

/// Whether `request` asks for objects' metadata only (`PartialObjectMetadata[List]`).
fn metadata_only(request: &Request<Body>) -> bool {
    (request.headers().get_all(http::header::ACCEPT).iter())
        .filter_map(|accept| accept.to_str().ok())
        .any(|accept| accept.contains("as=PartialObjectMetadata"))
}

/// A list or a watch of one of the three kinds (by its plural).
struct Read {
    plural: String,
    watch: bool,
}

impl Read {
    /// `GET /apis/math.example.com/<version>/[namespaces/<ns>/]<plural>` (a collection), of
    /// whole objects: a list or watch of their metadata only (`.owns` watches children so,
    /// kube-runtime's `metadata_watcher`, `Accept: …;as=PartialObjectMetadata…`) always decodes,
    /// and must keep every event (without it a child's change never woke its parent).
    fn of(request: &Request<Body>) -> Option<Read> {
        if request.method() != Method::GET || metadata_only(request) {
            return None;
        }
        let parts: Vec<&str> = request.uri().path().trim_matches('/').split('/').collect();
        let plural = match parts.as_slice() {
            ["apis", "math.example.com", _, plural] => plural,
            ["apis", "math.example.com", _, "namespaces", _, plural] => plural,
            _ => return None,
        };
        let query = request.uri().query().unwrap_or_default();
        let watch = query
            .split('&')
            .any(|p| p == "watch=true" || p == "watch=1");
        Some(Read {
            plural: plural.to_string(),
            watch,
        })
    }

    /// The answer with the undecodable objects left out.
    async fn filter(
        self,
        response: Response<Body>,
        decodes: Decodes,
        named: Named,
    ) -> Result<Response<Answer>, kube::Error> {
        let (parts, body) = response.into_parts();
        let body: Answer = if self.watch {
            StreamBody::new(watch_lines(frames(body), self.plural, decodes, named))
        } else {
            let list = body.collect_bytes().await?;
            let kept = self.list(&list, decodes, &named).unwrap_or(list);
            StreamBody::new(futures::stream::once(async { Ok(Frame::data(kept)) }).boxed())
        };
        Ok(Response::from_parts(parts, body))
    }

    /// A list's bytes without its undecodable items (`None`: not a list, left as it is).
    fn list(&self, bytes: &[u8], decodes: Decodes, named: &Named) -> Option<Bytes> {
        let mut list: Value = serde_json::from_slice(bytes).ok()?;
        let items = list.get_mut("items")?.as_array_mut()?;
        let before = items.len();
        items.retain(|item| named.decodes(&self.plural, item, decodes));
        if items.len() == before {
            return None;
        }
        serde_json::to_vec(&list).ok().map(Bytes::from)
    }
}

/// A watch's lines (one event each), without the events whose object does not decode, except
/// deletions: the learner's cache must let go of an object even if it was stored wrong.
fn watch_lines(
    frames: futures::stream::BoxStream<'static, Result<Frame<Bytes>, kube::Error>>,
    plural: String,
    decodes: Decodes,
    named: Named,
) -> futures::stream::BoxStream<'static, Result<Frame<Bytes>, kube::Error>> {
    // Whole lines only: an event may come in several frames, or several in one.
    let keep = move |lines: &[u8]| -> Bytes {
        let kept: Vec<u8> = (lines.split_inclusive(|b| *b == b'\n'))
            .filter(|line| keep_event(line, &plural, decodes, &named))
            .flatten()
            .copied()
            .collect();
        Bytes::from(kept)
    };
    let start = (frames, Vec::<u8>::new(), false);
    futures::stream::unfold(start, move |(mut frames, mut pending, ended)| {
        let keep = keep.clone();
        async move {
            if ended {
                return None;
            }
            let data = match frames.next().await {
                Some(Ok(frame)) => frame.into_data().unwrap_or_default(),
                Some(Err(error)) => return Some((Err(error), (frames, pending, false))),
                // The last line, even without its newline.
                None => {
                    let rest = keep(&pending);
                    return Some((Ok(Frame::data(rest)), (frames, Vec::new(), true)));
                }
            };
            pending.extend_from_slice(&data);
            let complete = match pending.iter().rposition(|b| *b == b'\n') {
                Some(end) => pending.drain(..=end).collect(),
                None => Vec::new(),
            };
            Some((Ok(Frame::data(keep(&complete))), (frames, pending, false)))
        }
    })
    .boxed()
}

/// Whether one watch line goes to the learner's watcher.
fn keep_event(line: &[u8], plural: &str, decodes: Decodes, named: &Named) -> bool {
    let Ok(event) = serde_json::from_slice::<Value>(line) else {
        return true;
    };
    match (
        event.get("type").and_then(Value::as_str),
        event.get("object"),
    ) {
        (Some("ADDED" | "MODIFIED"), Some(object)) => named.decodes(plural, object, decodes),
        _ => true,
    }
}

/// The objects named so far, with why, so that each is named once while its error lasts.
#[derive(Clone, Default)]
struct Named(Arc<Mutex<HashMap<String, String>>>);

impl Named {
    /// Whether `object` decodes; one that does not is named the first time (or with a new
    /// error), one that decodes again is forgotten.
    fn decodes(&self, plural: &str, object: &Value, decodes: Decodes) -> bool {
        let text = |field: &str| object["metadata"][field].as_str().unwrap_or_default();
        let (namespace, name) = (text("namespace"), text("name"));
        let key = format!("{plural}/{namespace}/{name}");
        let mut named = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let Some(why) = decodes(plural, object) else {
            named.remove(&key);
            return true;
        };
        if named.get(&key) != Some(&why) {
            let kind = object["kind"].as_str().unwrap_or(plural);
            tracing::warn!(target: "math_workshop::runner", "{}", t!(m::UNDECODABLE, kind = kind, namespace = namespace, name = name, why = why));
            named.insert(key, why);
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decodes(plural: &str, object: &Value) -> Option<String> {
        (plural == "numbers" && !object["spec"]["value"].is_i64()).then(|| "spec.value".into())
    }

    fn number(name: &str, value: Value) -> Value {
        json!({"kind": "Number", "metadata": {"name": name, "namespace": "ns"}, "spec": {"value": value}})
    }

    #[test]
    fn a_list_keeps_what_decodes() {
        let read = Read {
            plural: "numbers".into(),
            watch: false,
        };
        let list = json!({"kind": "NumberList", "items": [number("a", json!(1.5)), number("b", json!(2))]});
        let bytes = serde_json::to_vec(&list).unwrap_or_default();
        let kept = read
            .list(&bytes, decodes, &Named::default())
            .unwrap_or_default();
        let kept: Value = serde_json::from_slice(&kept).unwrap_or_default();
        assert_eq!(kept["items"].as_array().map(Vec::len), Some(1));
        assert_eq!(kept["items"][0]["metadata"]["name"], "b");
        // Nothing to leave out: the bytes are left as they came.
        let fine =
            serde_json::to_vec(&json!({"items": [number("b", json!(2))]})).unwrap_or_default();
        assert!(read.list(&fine, decodes, &Named::default()).is_none());
    }

    #[test]
    fn a_watch_drops_an_undecodable_change_but_not_its_deletion() {
        let line = |type_: &str, value: Value| {
            let mut l = serde_json::to_vec(&json!({"type": type_, "object": number("a", value)}))
                .unwrap_or_default();
            l.push(b'\n');
            l
        };
        let named = Named::default();
        assert!(!keep_event(
            &line("ADDED", json!(1.5)),
            "numbers",
            decodes,
            &named
        ));
        assert!(!keep_event(
            &line("MODIFIED", json!(1.5)),
            "numbers",
            decodes,
            &named
        ));
        assert!(keep_event(
            &line("DELETED", json!(1.5)),
            "numbers",
            decodes,
            &named
        ));
        assert!(keep_event(
            &line("MODIFIED", json!(3)),
            "numbers",
            decodes,
            &named
        ));
        assert!(keep_event(
            b"{\"type\":\"BOOKMARK\"}\n",
            "numbers",
            decodes,
            &named
        ));
    }

    #[test]
    fn only_collections_of_the_three_kinds_are_read() {
        let read = |uri: &str| {
            let request = Request::get(uri).body(Body::empty()).ok()?;
            Read::of(&request).map(|r| (r.plural, r.watch))
        };
        assert_eq!(
            read(
                "/apis/math.example.com/v1beta1/namespaces/ns/numbers?watch=true&resourceVersion=1"
            ),
            Some(("numbers".into(), true))
        );
        assert_eq!(
            read("/apis/math.example.com/v1beta1/tuples?limit=500"),
            Some(("tuples".into(), false))
        );
        assert_eq!(
            read("/apis/math.example.com/v1beta1/namespaces/ns/numbers/a"),
            None
        );
        assert_eq!(read("/api/v1/namespaces/ns/configmaps"), None);
        // The metadata watch `.owns` makes: every event kept (a child's change wakes its
        // parent), as kube-runtime's metadata_watcher asks.
        let metadata = |uri: &str, accept: &str| {
            let request = Request::get(uri)
                .header(http::header::ACCEPT, accept)
                .body(Body::empty())
                .ok()?;
            Read::of(&request).map(|r| r.plural)
        };
        let uri = "/apis/math.example.com/v1beta1/namespaces/ns/numbers?watch=true";
        assert_eq!(
            metadata(
                uri,
                "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
            ),
            None
        );
        assert_eq!(
            metadata(uri, "application/json"),
            Some("numbers".to_string())
        );
    }
}
