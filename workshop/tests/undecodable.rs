//! The runner beside an object the learner's types cannot decode (issue 48, item 1): a Number
//! stored while the CRD said `value: {type: number}` (`spec.value: 1.5`), then the track's
//! strict CRDs installed again. Before, kube's list of Numbers failed as a whole and the
//! learner's Number controller never started; now the runner's client leaves that one object
//! out (and names it once in the log), and every other Number is reconciled.

use std::time::{Duration, Instant};

use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use math_workshop::runner::{self, Controllers};
use math_workshop::{crds, solutions};
use serde_json::json;

fn numbers(client: &kube::Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("math.example.com", "v1beta1", "Number");
    Api::namespaced_with(client.clone(), "default", &ApiResource::from_gvk(&gvk))
}

async fn create(client: &kube::Client, name: &str, value: serde_json::Value) {
    let gvk = GroupVersionKind::gvk("math.example.com", "v1beta1", "Number");
    let mut number = DynamicObject::new(name, &ApiResource::from_gvk(&gvk));
    number.data = json!({ "spec": { "value": value } });
    numbers(client)
        .create(&PostParams::default(), &number)
        .await
        .expect("the Number is stored");
}

/// The track's Number CRD with `spec.value` loosened to any JSON number.
fn loose_number_crd(track: &math_workshop::track::Track) -> String {
    let number = (track.crds)()
        .into_iter()
        .find(|crd| crd.spec.names.kind == "Number")
        .expect("the track has a Number CRD");
    let mut crd = serde_json::to_value(number).expect("a CRD is JSON");
    let value = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/value";
    *crd.pointer_mut(value).expect("spec.value in the schema") = json!({ "type": "number" });
    serde_yaml::to_string(&crd).expect("a CRD is YAML")
}

#[tokio::test(flavor = "multi_thread")]
async fn the_runner_reconciles_beside_a_number_its_types_cannot_decode() {
    let track = solutions::track();
    let server = crds::on_a_test_server(&track)
        .await
        .expect("a test API server with the workshop's CRDs");
    let strict = crds::yaml(&track).expect("the track's CRDs as YAML");
    server
        .apply_crd_yaml(&loose_number_crd(&track))
        .expect("the loose CRD installs");
    let client = server.client();
    create(&client, "loose", json!(1.5)).await;
    server
        .apply_crd_yaml(&strict)
        .expect("the strict CRDs install again");

    let ctx = runner::context(client.clone(), Some("default".into()), &track);
    let controllers = Controllers::start(&track, 1, &ctx);
    create(&client, "fine", json!(4)).await;
    let start = Instant::now();
    let computed = loop {
        let fine = numbers(&client).get("fine").await.expect("fine is there");
        if fine.data["status"]["isSquare"] == json!(true) {
            break true;
        }
        if start.elapsed() > Duration::from_secs(60) {
            break false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    controllers.stop();
    assert!(
        computed,
        "the Number beside the undecodable one gets its status"
    );
}
