use super::*;

fn headers(value: &str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
    h
}

#[test]
fn bearer_tokens_are_read_from_the_authorization_header() {
    assert_eq!(bearer_token(&HeaderMap::new()), None);
    assert_eq!(bearer_token(&headers("Bearer abc")), Some("abc"));
    assert_eq!(bearer_token(&headers("bearer  abc ")), Some("abc"));
    assert_eq!(bearer_token(&headers("Basic abc")), None);
    assert_eq!(bearer_token(&headers("Bearer ")), None);
    assert_eq!(bearer_token(&headers("Bearer")), None);
}

#[test]
fn decisions_map_to_401_403_and_through() {
    assert_eq!(
        refusal(&Decision::Unauthenticated, "get", "/metrics", None).map(|r| r.status()),
        Some(StatusCode::UNAUTHORIZED)
    );
    assert_eq!(
        refusal(
            &Decision::Forbidden { user: "u".into() },
            "get",
            "/metrics",
            None
        )
        .map(|r| r.status()),
        Some(StatusCode::FORBIDDEN)
    );
    assert!(
        refusal(
            &Decision::Allowed { user: "u".into() },
            "get",
            "/metrics",
            None
        )
        .is_none()
    );
}

#[tokio::test]
async fn a_403_names_the_cluster_role_to_bind_when_there_is_one() {
    let forbidden = &Decision::Forbidden { user: "u".into() };
    let body = |role| async move {
        let response = refusal(forbidden, "get", "/metrics", role).expect("a refusal");
        let bytes = axum::body::to_bytes(response.into_body(), 4096).await;
        String::from_utf8_lossy(&bytes.expect("a body")).into_owned()
    };
    assert_eq!(
        body(Some("metrics-reader")).await,
        "Forbidden: user \"u\" may not get /metrics; bind the ClusterRole metrics-reader to it\n"
    );
    assert_eq!(
        body(None).await,
        "Forbidden: user \"u\" may not get /metrics\n"
    );
}

#[test]
fn refusals_are_cached_shorter_than_permissions() {
    let s = SecureMetrics::default();
    assert_eq!((s.allowed_ttl, s.denied_ttl), (ALLOWED_TTL, DENIED_TTL));
    assert!(DENIED_TTL < ALLOWED_TTL);
}

#[test]
fn the_verb_is_the_method_in_lower_case_as_for_kube_apiserver() {
    use axum::http::Method;
    assert_eq!(verb_of(&Method::GET), "get");
    assert_eq!(verb_of(&Method::HEAD), "head");
    assert_eq!(verb_of(&Method::POST), "post");
}

#[test]
fn cache_keys_depend_on_every_part() {
    let k = key(&[b"get", b"/metrics", b"t"]);
    assert_eq!(k, key(&[b"get", b"/metrics", b"t"]));
    assert_ne!(k, key(&[b"get", b"/metrics", b"u"]));
    assert_ne!(k, key(&[b"get", b"/other", b"t"]));
    assert_ne!(k, key(&[b"post", b"/metrics", b"t"]));
    // The separator keeps ("ab", "c") and ("a", "bc") apart.
    assert_ne!(key(&[b"/ab", b"c"]), key(&[b"/a", b"bc"]));
}

const TTL: (Duration, Duration) = (Duration::from_secs(60), Duration::from_secs(60));
const WAIT: Duration = Duration::from_secs(10);

fn answers(entries: usize) -> Arc<Answers<bool>> {
    Answers::new(|yes| *yes, NonZeroUsize::new(entries).unwrap())
}

#[tokio::test]
async fn noes_never_push_out_a_yes() {
    let answers = answers(4);
    let turns = Arc::new(Semaphore::new(1));
    let ask = |answer: bool| async move { Ok(answer) };
    assert_eq!(
        answers
            .get_or_ask(key(&[b"yes"]), &turns, TTL, WAIT, ask(true))
            .await,
        Ok(true)
    );
    for i in 0..100u32 {
        let k = key(&[&i.to_be_bytes()]);
        assert_eq!(
            answers.get_or_ask(k, &turns, TTL, WAIT, ask(false)).await,
            Ok(false)
        );
    }
    assert_eq!(
        answers.remembered(),
        (1, 4),
        "the noes are bounded, the yes is kept"
    );
    let asked = answers
        .get_or_ask(key(&[b"yes"]), &turns, TTL, WAIT, async {
            panic!("asked again")
        })
        .await;
    assert_eq!(asked, Ok(true));
}

#[tokio::test]
async fn the_least_recently_used_yes_goes_first() {
    let answers = answers(2);
    let turns = Arc::new(Semaphore::new(1));
    for name in [b"a", b"b"] {
        answers
            .get_or_ask(key(&[name]), &turns, TTL, WAIT, async { Ok(true) })
            .await
            .unwrap();
    }
    // a is used again, then c arrives: b goes.
    answers
        .get_or_ask(key(&[b"a"]), &turns, TTL, WAIT, async {
            panic!("a is known")
        })
        .await
        .unwrap();
    answers
        .get_or_ask(key(&[b"c"]), &turns, TTL, WAIT, async { Ok(true) })
        .await
        .unwrap();
    answers
        .get_or_ask(key(&[b"a"]), &turns, TTL, WAIT, async {
            panic!("a is known")
        })
        .await
        .unwrap();
    let asked = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = asked.clone();
    answers
        .get_or_ask(key(&[b"b"]), &turns, TTL, WAIT, async move {
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
            Ok(true)
        })
        .await
        .unwrap();
    assert!(
        asked.load(std::sync::atomic::Ordering::SeqCst),
        "b was forgotten"
    );
}

#[tokio::test]
async fn errors_are_not_remembered_and_end_the_flight() {
    let answers = answers(4);
    let turns = Arc::new(Semaphore::new(1));
    let failed = answers
        .get_or_ask(key(&[b"k"]), &turns, TTL, WAIT, async {
            Err(ReviewError::TimedOut {
                kind: "TokenReview",
                timeout: WAIT,
            })
        })
        .await;
    assert!(failed.is_err());
    assert_eq!(answers.remembered(), (0, 0));
    assert_eq!(
        answers
            .get_or_ask(key(&[b"k"]), &turns, TTL, WAIT, async { Ok(true) })
            .await,
        Ok(true)
    );
    assert_eq!(turns.available_permits(), 1, "the turn is given back");
}

#[tokio::test]
async fn no_turn_within_the_wait_is_an_error() {
    let answers = answers(4);
    let turns = Arc::new(Semaphore::new(1));
    let _taken = turns.clone().acquire_owned().await.unwrap();
    let waited = answers
        .get_or_ask(
            key(&[b"k"]),
            &turns,
            TTL,
            Duration::from_millis(10),
            async { Ok(true) },
        )
        .await;
    assert_eq!(waited, Err(ReviewError::Busy(Duration::from_millis(10))));
}

#[tokio::test]
async fn a_review_that_panics_ends_its_flight_and_frees_its_turn() {
    let answers = answers(4);
    let turns = Arc::new(Semaphore::new(1));
    let panicked = answers
        .get_or_ask(key(&[b"k"]), &turns, TTL, WAIT, async {
            panic!("a review that panics")
        })
        .await;
    assert!(
        matches!(panicked, Err(ReviewError::Failed { .. })),
        "{panicked:?}"
    );
    // The next request for the same token asks again, and gets its turn.
    assert_eq!(
        answers
            .get_or_ask(key(&[b"k"]), &turns, TTL, WAIT, async { Ok(true) })
            .await,
        Ok(true)
    );
    assert_eq!(answers.remembered(), (1, 0));
}
