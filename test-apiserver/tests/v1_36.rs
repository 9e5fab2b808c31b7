//! Behaviours of kube-apiserver v1.36 that a kube-rs 5 client or kubectl meets, each
//! answered as v1.36 answers. Each expected answer was first derived from kube-apiserver's
//! source (v1.36), which each test names, then sent to a real kube-apiserver v1.36.2 + etcd
//! 3.6 on loopback (2026-11-27), which answered as quoted below.

use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::client::Body;
use serde_json::{Value, json};
use test_apiserver::TestServer;

const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.v136.example.com}
spec:
  group: v136.example.com
  names: {kind: Gadget, plural: gadgets, singular: gadget, listKind: GadgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, maximum: MAX}
              label: {type: string}
"#;

async fn server_with_gadgets(max: u32) -> TestServer {
    let s = TestServer::start().await.expect("server starts");
    s.apply_crd_yaml(&CRD.replace("MAX", &max.to_string()))
        .expect("the CRD installs");
    s
}

/// A raw POST of `body`, answered with its status, `Warning` headers and body.
async fn post(s: &TestServer, query: &str, body: Value) -> (u16, Vec<String>, Value) {
    let path = format!("/apis/v136.example.com/v1/namespaces/default/gadgets{query}");
    let request = http::Request::post(path)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string().into_bytes()))
        .expect("a request");
    let response = s.client().send(request).await.expect("an answer");
    let code = response.status().as_u16();
    let warnings = response
        .headers()
        .get_all("warning")
        .iter()
        .map(|h| h.to_str().unwrap_or("").to_string())
        .collect();
    let bytes = response.into_body().collect_bytes().await.expect("a body");
    (
        code,
        warnings,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

fn gadget(name: &str) -> Value {
    json!({"apiVersion": "v136.example.com/v1", "kind": "Gadget", "metadata": {"name": name},
        "spec": {"size": 1, "colour": "blue"}})
}

/// Unknown fields by `fieldValidation` (k8s.io/apiserver `handlers/rest.go`: an empty
/// directive is `Warn`; apiextensions-apiserver reports pruned fields as
/// `unknown field "spec.colour"`): Warn and the default answer 201 with
/// `Warning: 299 - "unknown field \"spec.colour\""` and the field pruned; Ignore answers
/// 201 without a warning; Strict answers 400
/// `Gadget in version "v1" cannot be handled as a Gadget: strict decoding error: unknown field "spec.colour"`.
/// v1.36.2 answered exactly so: `HTTP/2 201` + `warning: 299 - "unknown field \"spec.colour\""`
/// (no directive, and Warn), 201 without a warning (Ignore), 400 with that message (Strict).
#[tokio::test]
async fn unknown_fields_warn_by_default_and_fail_when_strict() {
    let s = server_with_gadgets(10).await;
    let warning = r#"299 - "unknown field \"spec.colour\"""#;
    for (query, name) in [("", "default"), ("?fieldValidation=Warn", "warn")] {
        let (code, warnings, body) = post(&s, query, gadget(name)).await;
        assert_eq!(
            (code, warnings),
            (201, vec![warning.to_string()]),
            "{query}"
        );
        assert_eq!(body["spec"], json!({"size": 1}));
    }
    let (code, warnings, _) = post(&s, "?fieldValidation=Ignore", gadget("ignore")).await;
    assert_eq!((code, warnings), (201, vec![]));
    let (code, warnings, body) = post(&s, "?fieldValidation=Strict", gadget("strict")).await;
    assert_eq!((code, warnings), (400, vec![]));
    assert_eq!(
        body["message"],
        r#"Gadget in version "v1" cannot be handled as a Gadget: strict decoding error: unknown field "spec.colour""#
    );
}

/// CRD validation ratcheting (GA in v1.33, on in v1.36: apiextensions-apiserver's
/// ratcheting schema validator drops the errors of a value equal to the stored one): after
/// the CRD lowers `maximum` from 100 to 10, a Gadget of size 50 can still have its label
/// changed (200), but a change of its size to another invalid value is refused (422
/// `spec.size: Invalid value: 60: spec.size in body should be less than or equal to 10`).
/// v1.36.2 answered so: the relabel 200 with `spec: {label: x, size: 50}`, the resize 422
/// `Gadget.v136.example.com "big" is invalid: spec.size: Invalid value: 60: spec.size in
/// body should be less than or equal to 10`.
#[tokio::test]
async fn an_unchanged_invalid_field_is_ratcheted() {
    let s = server_with_gadgets(100).await;
    let gvk = kube::api::GroupVersionKind::gvk("v136.example.com", "v1", "Gadget");
    let api: Api<DynamicObject> =
        Api::default_namespaced_with(s.client(), &kube::api::ApiResource::from_gvk(&gvk));
    let big: DynamicObject = serde_json::from_value(json!({"apiVersion": "v136.example.com/v1",
        "kind": "Gadget", "metadata": {"name": "big"}, "spec": {"size": 50}}))
    .expect("a Gadget");
    api.create(&PostParams::default(), &big).await.unwrap();
    s.apply_crd_yaml(&CRD.replace("MAX", "10"))
        .expect("the CRD tightens");
    let merge = |spec: Value| Patch::Merge(json!({"spec": spec}));
    let relabelled = api
        .patch(
            "big",
            &PatchParams::default(),
            &merge(json!({"label": "x"})),
        )
        .await
        .expect("an unchanged invalid size is ratcheted");
    assert_eq!(relabelled.data["spec"], json!({"size": 50, "label": "x"}));
    let refused = api
        .patch("big", &PatchParams::default(), &merge(json!({"size": 60})))
        .await
        .expect_err("a changed size is validated");
    let kube::Error::Api(status) = refused else {
        panic!("an API error: {refused:?}")
    };
    assert_eq!(status.code, 422);
    assert!(
        status.message.contains(
            "spec.size: Invalid value: 60: spec.size in body should be less than or equal to 10"
        ),
        "{}",
        status.message
    );
}
