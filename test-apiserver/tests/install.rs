//! `TestServer::apply_crds`: typed CRDs (from `#[derive(CustomResource)]`) installed and
//! usable as soon as it returns, as envtest's `InstallCRDs` leaves them: Established, and
//! listed in discovery for every served version.

use kube::api::{Api, PostParams};
use kube::core::Status;
use kube::discovery::Discovery;
use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use test_apiserver::{ApplyCrdsError, TestServer};

/// A kind of this file's own, so the test shows what any kube-rs project would write.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "install.example.com",
    version = "v1",
    kind = "Dial",
    namespaced
)]
pub struct DialSpec {
    level: i64,
}

/// Right after `apply_crds` the CRD is Established, discovery lists it, and an object
/// can be created and read back.
#[tokio::test]
async fn applied_crds_are_established_and_served_when_it_returns() {
    let s = TestServer::start().await.expect("server starts");
    s.apply_crds([Dial::crd()]).await.expect("the CRD installs");

    let discovery = Discovery::new(s.client()).run().await.expect("discovery");
    assert!(
        discovery.has_group("install.example.com"),
        "discovery lists the group"
    );
    let dials: Api<Dial> = Api::default_namespaced(s.client());
    dials
        .create(
            &PostParams::default(),
            &Dial::new("d", DialSpec { level: 3 }),
        )
        .await
        .expect("created");
    assert_eq!(dials.get("d").await.expect("read back").spec.level, 3);

    // Applying the same CRDs again changes nothing.
    let rv = s.resource_version();
    s.apply_crds([Dial::crd()]).await.expect("applied again");
    assert_eq!(s.resource_version(), rv);
}

/// A CRD the server refuses is an error naming it, with the server's answer.
#[tokio::test]
async fn a_refused_crd_is_an_error_with_the_servers_answer() {
    let s = TestServer::start().await.expect("server starts");
    let mut crd = Dial::crd();
    crd.metadata.name = Some("wrong.install.example.com".into());
    let e = s.apply_crds([crd]).await.expect_err("refused");
    let ApplyCrdsError::Refused { name, source } = e else {
        panic!("expected Refused, got {e:?}")
    };
    assert_eq!(name, "wrong.install.example.com");
    let kube::Error::Api(status) = source else {
        panic!("expected the server's Status")
    };
    let Status { code, .. } = *status;
    assert_eq!(code, 422);
}
