//! What the server logs of every request, and the filters tests count them with.

use std::time::{Duration, SystemTime};

/// The verb of a request, as in kube-apiserver's audit log and RBAC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verb {
    /// GET of one object.
    Get,
    /// GET of a collection.
    List,
    /// GET of a collection with `watch=true`.
    Watch,
    /// POST.
    Create,
    /// PUT.
    Update,
    /// PATCH, server-side apply included.
    Patch,
    /// DELETE of one object.
    Delete,
    /// DELETE of a collection.
    DeleteCollection,
    /// Requests outside resources: discovery, `/version`, `/healthz`, `/openapi`.
    NonResource,
}

impl Verb {
    /// create, update, patch, delete and deletecollection.
    pub fn is_write(self) -> bool {
        matches!(
            self,
            Verb::Create | Verb::Update | Verb::Patch | Verb::Delete | Verb::DeleteCollection
        )
    }

    /// The lower-case name kube-apiserver uses (`deletecollection`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
            Verb::NonResource => "nonresource",
        }
    }
}

/// One request the server answered.
#[derive(Debug, Clone)]
pub struct RequestRecord {
    /// The request's verb.
    pub verb: Verb,
    /// HTTP method.
    pub method: String,
    /// URL path (without the query).
    pub path: String,
    /// Raw query string.
    pub query: String,
    /// API group ("" for core, and for non-resource requests).
    pub group: String,
    /// API version ("v1", "v1beta1"; "" for non-resource requests).
    pub version: String,
    /// Resource plural ("" for non-resource requests).
    pub resource: String,
    /// `status`, `scale`, `log`, ... when the request is to a subresource.
    pub subresource: Option<String>,
    /// The namespace in the path, for namespaced resources.
    pub namespace: Option<String>,
    /// The object's name in the path (None for collections).
    pub name: Option<String>,
    /// HTTP status code of the answer (200 for a watch that was started).
    pub status: u16,
    /// `dryRun=All` was requested.
    pub dry_run: bool,
    /// `fieldManager` or the manager derived from the User-Agent.
    pub field_manager: String,
    /// The `User-Agent` header.
    pub user_agent: String,
    /// When the request arrived.
    pub time: SystemTime,
    /// Time to produce the answer (for a watch: to start streaming).
    pub duration: Duration,
}

/// Selects requests: every field that is `Some` must match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestFilter {
    /// Only this verb.
    pub verb: Option<Verb>,
    /// Resource plural, e.g. `numbers`.
    pub resource: Option<String>,
    /// `status`; use [`RequestFilter::main_resource`] to exclude subresources.
    pub subresource: Option<String>,
    /// Only requests in this namespace.
    pub namespace: Option<String>,
    /// Only requests naming this object.
    pub name: Option<String>,
    /// Only requests to the main resource (no subresource).
    pub main_only: bool,
}

impl RequestFilter {
    /// Matches every request.
    pub fn new() -> RequestFilter {
        RequestFilter::default()
    }
    /// Only requests with this verb.
    pub fn verb(mut self, verb: Verb) -> Self {
        self.verb = Some(verb);
        self
    }
    /// Only requests to this resource (plural, e.g. `numbers`).
    pub fn resource(mut self, resource: impl Into<String>) -> Self {
        self.resource = Some(resource.into());
        self
    }
    /// Only requests to this subresource (e.g. `status`).
    pub fn subresource(mut self, subresource: impl Into<String>) -> Self {
        self.subresource = Some(subresource.into());
        self
    }
    /// Only requests without a subresource.
    pub fn main_resource(mut self) -> Self {
        self.main_only = true;
        self
    }
    /// Only requests in this namespace.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }
    /// Only requests naming this object.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Does this filter select the request?
    pub fn matches(&self, r: &RequestRecord) -> bool {
        self.matches_parts(
            r.verb,
            &r.resource,
            r.subresource.as_deref(),
            r.namespace.as_deref(),
            r.name.as_deref(),
        )
    }

    pub(crate) fn matches_parts(
        &self,
        verb: Verb,
        resource: &str,
        sub: Option<&str>,
        ns: Option<&str>,
        name: Option<&str>,
    ) -> bool {
        self.verb.is_none_or(|v| v == verb)
            && self.resource.as_deref().is_none_or(|x| x == resource)
            && self.subresource.as_deref().is_none_or(|x| Some(x) == sub)
            && (!self.main_only || sub.is_none())
            && self.namespace.as_deref().is_none_or(|x| Some(x) == ns)
            && self.name.as_deref().is_none_or(|x| Some(x) == name)
    }
}
