//! Which kubectl the guides were run with, and which they say is tested: the same range as
//! `make workshop-doctor` warns outside of (workshop/doctor.sh, its words in messages/doctor.rs), and
//! a version inside it. kubectl 1.34 and later print `… deleted from <ns> namespace` where the
//! guides show `… deleted`; the guides say so beside the version.

use std::path::{Path, PathBuf};

use math_workshop::messages::{DOCTOR_KUBECTL_UNTESTED, Lang, Msg};

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn say(msg: &Msg, lang: Lang, args: &[(&str, &str)]) -> String {
    let args: Vec<(&str, &dyn std::fmt::Display)> = args
        .iter()
        .map(|(name, value)| (*name, value as &dyn std::fmt::Display))
        .collect();
    msg.render(lang, &args)
}

/// The kubectl range both guides say is tested is the one the doctor warns outside of, and the
/// kubectl they say printed their outputs is inside it: a reader with kubectl 1.37 learns it from
/// the guide and from the doctor alike, and nobody is told that outputs from an untested kubectl
/// are the tested ones.
#[test]
fn the_guides_state_the_doctors_kubectl_range_and_a_version_inside_it() {
    let mut printed_with = Vec::new();
    for (file, lang, between, marker) in [
        (
            "workshop/README.md",
            Lang::En,
            " to ",
            "printed this guide's outputs:** kubectl v",
        ),
        (
            "workshop/README.ja.md",
            Lang::Ja,
            "〜",
            "このガイドの出力は kubectl v",
        ),
    ] {
        let warning = say(&DOCTOR_KUBECTL_UNTESTED, lang, &[("version", "v0")]);
        let (low, high) = tested_range(&warning, between);
        let guide = std::fs::read_to_string(repository().join(file)).unwrap_or_default();
        let range = format!("kubectl {low}{between}{high}");
        assert!(guide.contains(&range), "{file} does not say {range:?}");
        let version: String = guide
            .split_once(marker)
            .map(|(_, after)| after)
            .unwrap_or_else(|| panic!("{file} does not say which kubectl printed its outputs"))
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let minor = version
            .split('.')
            .nth(1)
            .and_then(|m| m.parse::<u32>().ok());
        let (low, high) = (minor_of(&low), minor_of(&high));
        assert!(
            minor.is_some_and(|m| (low..=high).contains(&m)),
            "{file}: kubectl v{version} is outside 1.{low}-1.{high}"
        );
        printed_with.push(version);
    }
    assert_eq!(
        printed_with[0], printed_with[1],
        "the two guides name two kubectls"
    );
}

/// `1.32` and `1.36` from the doctor's "… kubectl 1.32 to 1.36 …".
fn tested_range(warning: &str, between: &str) -> (String, String) {
    let digits = |text: &str| -> String { text.chars().take_while(char::is_ascii_digit).collect() };
    let after = warning
        .rsplit_once("kubectl 1.")
        .map(|(_, after)| after)
        .unwrap_or_default();
    let low = digits(after);
    let high = after[low.len()..]
        .strip_prefix(between)
        .and_then(|rest| rest.strip_prefix("1."))
        .map(digits)
        .unwrap_or_default();
    (format!("1.{low}"), format!("1.{high}"))
}

fn minor_of(version: &str) -> u32 {
    version
        .split('.')
        .nth(1)
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("no minor version in {version:?}"))
}
