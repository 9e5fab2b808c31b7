//! Whose controllers wrote: every request of the runner and of a `--cluster` check signed with
//! the participant's name.

/// Whose controllers wrote: the participant's name on every request of the runner and of a
/// `--cluster` check. The field manager `math-workshop` of the exercises' server-side applies
/// becomes `math-workshop-<participant>` (and the User-Agent says the same), so that the
/// objects' managedFields and the API server's audit or request log tell two participants'
/// controllers apart, and a runner can tell its own objects from someone else's.
#[derive(Debug, Clone)]
pub struct Signature {
    manager: String,
}

impl Signature {
    pub fn new(participant: &str) -> Signature {
        Signature {
            manager: format!("{}-{participant}", crate::context::MANAGER),
        }
    }

    /// `math-workshop-<participant>`.
    pub fn field_manager(&self) -> &str {
        &self.manager
    }

    /// `math-workshop-<participant>/<version>`: an API server that derives a field manager
    /// from the User-Agent (a write without `fieldManager`) derives the same one.
    pub fn user_agent(&self) -> String {
        format!("{}/{}", self.manager, env!("CARGO_PKG_VERSION"))
    }

    /// The query of a request, with the exercises' field manager replaced by the
    /// participant's; every other parameter as it was.
    pub fn sign_query(&self, query: &str) -> String {
        let plain = format!("fieldManager={}", crate::context::MANAGER);
        query
            .split('&')
            .map(|pair| {
                if pair == plain {
                    format!("fieldManager={}", self.manager)
                } else {
                    pair.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("&")
    }

    /// A client of `config` whose every request carries the signature.
    pub fn client(&self, mut config: kube::Config) -> kube::Result<kube::Client> {
        if let Ok(agent) = http::HeaderValue::from_str(&self.user_agent()) {
            config.headers.push((http::header::USER_AGENT, agent));
        }
        let signature = self.clone();
        let sign = tower::util::MapRequestLayer::new(
            move |mut request: http::Request<kube::client::Body>| {
                signature.sign(&mut request);
                request
            },
        );
        Ok(kube::client::ClientBuilder::try_from(config)?
            .with_layer(&sign)
            .build())
    }

    fn sign<B>(&self, request: &mut http::Request<B>) {
        let Some(query) = request.uri().query() else {
            return;
        };
        let signed = self.sign_query(query);
        if signed == query {
            return;
        }
        let path_and_query = format!("{}?{signed}", request.uri().path());
        let mut parts = request.uri().clone().into_parts();
        parts.path_and_query = path_and_query.parse().ok().or(parts.path_and_query);
        if let Ok(uri) = http::Uri::from_parts(parts) {
            *request.uri_mut() = uri;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exercises_field_manager_is_signed() {
        let alice = Signature::new("alice");
        assert_eq!(
            alice.sign_query("fieldManager=math-workshop&force=true"),
            "fieldManager=math-workshop-alice&force=true"
        );
        assert_eq!(
            alice.sign_query("force=true&fieldManager=math-workshop"),
            "force=true&fieldManager=math-workshop-alice"
        );
        // Somebody else's manager, or one that merely starts alike, is theirs.
        assert_eq!(
            alice.sign_query("fieldManager=math-workshop-bob"),
            "fieldManager=math-workshop-bob"
        );
        assert_eq!(alice.sign_query("watch=true"), "watch=true");
        assert_eq!(
            alice.user_agent().split('/').next(),
            Some("math-workshop-alice")
        );
    }
}
