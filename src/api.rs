//! The three custom resources of `math.example.com/v1beta1`.
//!
//! The Rust types are the single source of truth: `crds/` is generated from them
//! (`make crds`, or `math-controller crds`), its kustomization with them, and a test fails
//! when the two drift apart.
//! Field names follow the Kubernetes API conventions (camelCase), unlike the Go original's
//! snake_case status fields.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// API group of every kind in this crate.
pub const GROUP: &str = "math.example.com";
/// The one served and stored version.
pub const VERSION: &str = "v1beta1";
/// The largest Fermat `spec.number` the schema admits: 20000 means 10000 Tuples and 20000
/// Numbers, already more than a workshop cluster wants to hold.
pub const MAX_FERMAT_NUMBER: i64 = 20_000;
/// The most items a Tuple's `spec.numbers` may hold (the schema's `maxItems`).
pub const MAX_TUPLE_LEN: usize = 1_000;
/// The condition every kind reports; `kubectl wait --for=condition=Ready` works on all three.
pub const READY: &str = "Ready";

/// A Number computes fizzbuzz, squareness and primality of its value.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[kube(
    group = "math.example.com",
    version = "v1beta1",
    kind = "Number",
    namespaced,
    status = "NumberStatus",
    shortname = "num",
    category = "math",
    doc = "A Number computes fizzbuzz, whether it is a perfect square, and whether it is prime.",
    printcolumn = r#"{"name": "Value", "type": "integer", "jsonPath": ".spec.value"}"#,
    printcolumn = r#"{"name": "FizzBuzz", "type": "string", "jsonPath": ".status.fizzBuzz"}"#,
    printcolumn = r#"{"name": "Square", "type": "boolean", "jsonPath": ".status.isSquare"}"#,
    printcolumn = r#"{"name": "Prime", "type": "boolean", "jsonPath": ".status.isPrime"}"#,
    printcolumn = r#"{"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct NumberSpec {
    /// Any 64-bit signed integer.
    pub value: i64,
}

/// What the Number controller computed for `observedGeneration`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NumberStatus {
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Ready` is True once the values below describe the current spec.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// "Fizz", "Buzz", "FizzBuzz" or the decimal value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fizz_buzz: Option<String>,
    /// The value is at least 0 and exactly k² for some integer k.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_square: Option<bool>,
    /// The value is a prime number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_prime: Option<bool>,
}

/// A Tuple owns one Number per item and reports whether they are all perfect squares.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[kube(
    group = "math.example.com",
    version = "v1beta1",
    kind = "Tuple",
    namespaced,
    status = "TupleStatus",
    shortname = "tup",
    category = "math",
    doc = "A Tuple owns one Number per item (named <tuple>-<index>) and reports whether all of them are perfect squares.",
    printcolumn = r#"{"name": "Numbers", "type": "string", "jsonPath": ".spec.numbers"}"#,
    printcolumn = r#"{"name": "AllSquares", "type": "boolean", "jsonPath": ".status.allSquares"}"#,
    printcolumn = r#"{"name": "ReadyNumbers", "type": "integer", "jsonPath": ".status.readyNumbers"}"#,
    printcolumn = r#"{"name": "Desired", "type": "integer", "jsonPath": ".status.desiredNumbers"}"#,
    printcolumn = r#"{"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct TupleSpec {
    /// The values of the child Numbers, in order. May be empty.
    #[schemars(length(max = 1000))]
    pub numbers: Vec<i64>,
}

/// What the Tuple controller found among its children for `observedGeneration`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TupleStatus {
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Ready` is True only when every desired Number exists, is controlled by this Tuple,
    /// has the desired value and is Ready for its own current generation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Every child Number is a perfect square (true for an empty Tuple). Absent while waiting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all_squares: Option<bool>,
    /// Children that are Ready with the desired value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_numbers: Option<i64>,
    /// Children the spec asks for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired_numbers: Option<i64>,
}

/// A Fermat owns one Tuple `[a, n-a]` per a in 1..=n/2 and reports which are sums of two squares.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[kube(
    group = "math.example.com",
    version = "v1beta1",
    kind = "Fermat",
    namespaced,
    status = "FermatStatus",
    shortname = "fer",
    category = "math",
    doc = "A Fermat owns the Tuples [a, n-a] for a = 1..=n/2 (named <fermat>-<a>-and-<n-a>) and finds the ways to write n as a sum of two positive squares.",
    printcolumn = r#"{"name": "Number", "type": "integer", "jsonPath": ".spec.number"}"#,
    printcolumn = r#"{"name": "Prime", "type": "boolean", "jsonPath": ".status.isPrime"}"#,
    printcolumn = r#"{"name": "OneModFour", "type": "boolean", "jsonPath": ".status.oneModFour"}"#,
    printcolumn = r#"{"name": "TwoSquares", "type": "boolean", "jsonPath": ".status.twoSquaresFound"}"#,
    printcolumn = r#"{"name": "Found", "type": "string", "jsonPath": ".status.decompositions"}"#,
    printcolumn = r#"{"name": "ReadyTuples", "type": "integer", "jsonPath": ".status.readyTuples", "priority": 1}"#,
    printcolumn = r#"{"name": "Desired", "type": "integer", "jsonPath": ".status.desiredTuples", "priority": 1}"#,
    printcolumn = r#"{"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct FermatSpec {
    /// The number to write as a sum of two squares, 0 ≤ n ≤ 20000.
    #[schemars(range(min = 0, max = 20000))]
    pub number: i64,
}

/// What the Fermat controller found among its Tuples for `observedGeneration`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FermatStatus {
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Ready` is True only when every desired Tuple exists, is controlled by this Fermat,
    /// has the desired numbers and is Ready for its own current generation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Some child Tuple has `allSquares`. Absent while waiting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub two_squares_found: Option<bool>,
    /// The decompositions found by the child Tuples, e.g. `1²+4²`, smallest first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decompositions: Option<Vec<String>>,
    /// n is a prime number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_prime: Option<bool>,
    /// n ≡ 1 (mod 4): for an odd prime, exactly the case where Fermat's theorem promises a
    /// decomposition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub one_mod_four: Option<bool>,
    /// Child Tuples that are Ready with the desired numbers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_tuples: Option<i64>,
    /// Child Tuples the spec asks for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired_tuples: Option<i64>,
}

/// The three CRDs as one multi-document YAML stream, in the order `kubectl apply` wants none
/// in particular: Number, Tuple, Fermat.
pub fn crds_yaml() -> Result<String, serde_yaml::Error> {
    let mut out = String::new();
    for crd in [Number::crd(), Tuple::crd(), Fermat::crd()] {
        out.push_str("---\n");
        out.push_str(&serde_yaml::to_string(&crd)?);
    }
    Ok(out)
}

/// The name of `crds/`'s kustomization: one of the three names kustomize reads, and the one
/// without an extension, so that `kubectl apply -f crds/` (which reads only `.yaml`, `.yml`
/// and `.json` files of a directory) still applies the CRDs and nothing else, while `crds/` is
/// a kustomize base that `deploy/` names as a resource (`kubectl apply -k deploy/` installs the
/// CRDs with the manager, as kubebuilder's `config/default` does with `config/crd`).
pub const KUSTOMIZATION: &str = "Kustomization";

/// The files of `crds/`: one per kind, with the CRD that belongs in each, and the
/// [`KUSTOMIZATION`] that lists them.
pub fn crd_files() -> Result<Vec<(String, String)>, serde_yaml::Error> {
    let mut files = [Number::crd(), Tuple::crd(), Fermat::crd()]
        .into_iter()
        .map(|crd| {
            let name = format!("{}.yaml", crd.metadata.name.clone().unwrap_or_default());
            Ok((name, serde_yaml::to_string(&crd)?))
        })
        .collect::<Result<Vec<_>, serde_yaml::Error>>()?;
    files.sort();
    let kustomization = kustomization(files.iter().map(|(name, _)| name.as_str()));
    files.push((KUSTOMIZATION.to_string(), kustomization));
    Ok(files)
}

/// A kustomization whose resources are `files`.
fn kustomization<'a>(files: impl Iterator<Item = &'a str>) -> String {
    let mut out = String::from(
        "# Generated with the CRDs beside it from src/api.rs (make crds): crds/ as a kustomize\n\
         # base, which deploy/ names as a resource. `kubectl apply -f crds/` reads no file\n\
         # without an extension, so it still applies the CRDs alone.\n\
         apiVersion: kustomize.config.k8s.io/v1beta1\n\
         kind: Kustomization\n\
         resources:\n",
    );
    for file in files {
        out.push_str(&format!("  - {file}\n"));
    }
    out
}
