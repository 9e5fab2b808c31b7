//! A [`Track`] is one set of the three kinds: your exercises or the reference solutions.
//! The runner, the checker and `crds` take a track, so both are compiled into one binary and
//! `--solution` picks the other one.

use std::sync::Arc;

use futures::future::BoxFuture;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

use crate::context::Context;
pub use crate::undecodable::Decodes;

/// Runs one kind's controller until it is stopped (or panics).
pub type RunController = fn(Arc<Context>) -> BoxFuture<'static, ()>;

/// The three kinds, in the order of the stages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Number,
    Tuple,
    Fermat,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Number, Kind::Tuple, Kind::Fermat];

    /// The stage that introduces this kind.
    pub fn stage(self) -> u8 {
        match self {
            Kind::Number => 1,
            Kind::Tuple => 2,
            Kind::Fermat => 3,
        }
    }

    /// `Number`, `Tuple`, `Fermat`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Number => "Number",
            Kind::Tuple => "Tuple",
            Kind::Fermat => "Fermat",
        }
    }

    /// The source file of this kind inside a track's directory.
    pub fn file(self) -> &'static str {
        match self {
            Kind::Number => "number.rs",
            Kind::Tuple => "tuple.rs",
            Kind::Fermat => "fermat.rs",
        }
    }
}

/// One set of the three kinds: their CRDs and their controllers.
#[derive(Clone)]
pub struct Track {
    /// "your exercises" or "the reference solutions", for messages.
    pub name: &'static str,
    /// Where its files are, relative to the repository: `workshop/src/exercises`.
    pub dir: &'static str,
    /// The CRDs generated from its types: Number, Tuple, Fermat.
    pub crds: fn() -> Vec<CustomResourceDefinition>,
    /// Why an object of a plural (`numbers`) cannot be decoded by its types, if it cannot:
    /// the runner leaves such objects out of its controllers' lists and watches
    /// ([`crate::undecodable`]). [`decodes`] with the track's three types.
    pub decodes: Decodes,
    /// Its controllers, by kind.
    pub number: RunController,
    pub tuple: RunController,
    pub fermat: RunController,
}

impl Track {
    /// `exercises` (the learner's, from the crate that holds them), or with `solution` the
    /// reference solutions.
    pub fn select(solution: bool, exercises: fn() -> Track) -> Track {
        if solution {
            crate::solutions::track()
        } else {
            exercises()
        }
    }

    /// The controller of one kind.
    pub fn controller(&self, kind: Kind) -> RunController {
        match kind {
            Kind::Number => self.number,
            Kind::Tuple => self.tuple,
            Kind::Fermat => self.fermat,
        }
    }

    /// "your exercises" or "the reference solutions", in the tools' language.
    pub fn called(&self) -> String {
        if self.dir.ends_with("solutions") {
            crate::messages::TRACK_SOLUTIONS.text()
        } else {
            crate::messages::TRACK_EXERCISES.text()
        }
    }

    /// `workshop/src/exercises/number.rs`.
    pub fn file(&self, kind: Kind) -> String {
        format!("{}/{}", self.dir, kind.file())
    }
}

/// Why `object`, stored as a `plural`, cannot be decoded by the track's type for it (`N` for
/// numbers, `T` for tuples, `F` for fermats), with the failing field; `None` when it can, or
/// when `plural` is none of the three.
pub fn decodes<N, T, F>(plural: &str, object: &serde_json::Value) -> Option<String>
where
    N: serde::de::DeserializeOwned,
    T: serde::de::DeserializeOwned,
    F: serde::de::DeserializeOwned,
{
    fn why<K: serde::de::DeserializeOwned>(object: &serde_json::Value) -> Option<String> {
        K::deserialize(object).err()?;
        let error = serde_path_to_error::deserialize::<_, K>(object).err()?;
        let text = format!("{}: {}", error.path(), error.inner());
        Some(text.chars().filter(|c| !c.is_control()).collect())
    }
    match plural {
        "numbers" => why::<N>(object),
        "tuples" => why::<T>(object),
        "fermats" => why::<F>(object),
        _ => None,
    }
}
