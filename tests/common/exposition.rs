//! A scrape in the Prometheus text format 0.0.4 (what `/metrics` answers curl, and what
//! controller-runtime answers everyone), read as a scraper reads it: each family's type and help
//! text, and every sample with its labels and value.

use std::collections::{BTreeMap, BTreeSet};

/// One sample line: `name{a="x",b="y"} 1`.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// A parsed scrape.
#[derive(Clone, Debug, Default)]
pub struct Scrape {
    /// Family name → type (`counter`, `gauge`, `histogram`, ...).
    pub types: BTreeMap<String, String>,
    /// Family name → help text, as written.
    pub help: BTreeMap<String, String>,
    pub samples: Vec<Sample>,
}

/// A label value as the text format escapes it: `\\`, `\"`, `\n`.
fn unescape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// `{a="x",b="y"}` after the name: the labels and the rest of the line.
fn labels(s: &str) -> Option<(BTreeMap<String, String>, &str)> {
    let mut out = BTreeMap::new();
    let mut rest = s.strip_prefix('{')?;
    loop {
        rest = rest.trim_start_matches(',');
        if let Some(after) = rest.strip_prefix('}') {
            return Some((out, after));
        }
        let (name, after) = rest.split_once("=\"")?;
        // The value ends at the first quote not escaped.
        let bytes = after.as_bytes();
        let mut end = 0;
        while end < bytes.len() && bytes[end] != b'"' {
            end += if bytes[end] == b'\\' { 2 } else { 1 };
        }
        out.insert(name.trim().to_string(), unescape(after.get(..end)?));
        rest = after.get(end + 1..)?;
    }
}

/// A sample's value as the text format writes it (`+Inf`, `NaN` included).
fn value(text: &str) -> Option<f64> {
    match text {
        "+Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        v => v.parse().ok(),
    }
}

fn sample(line: &str) -> Option<Sample> {
    let end = line.find(['{', ' '])?;
    let name = line[..end].to_string();
    let (labels, rest) = match line[end..].starts_with('{') {
        true => labels(&line[end..])?,
        false => (BTreeMap::new(), &line[end..]),
    };
    let value = value(rest.split_whitespace().next()?)?;
    Some(Sample {
        name,
        labels,
        value,
    })
}

impl Scrape {
    pub fn parse(text: &str) -> Scrape {
        let mut scrape = Scrape::default();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                if let Some((name, kind)) = rest.split_once(' ') {
                    scrape.types.insert(name.to_string(), kind.to_string());
                }
            } else if let Some(rest) = line.strip_prefix("# HELP ") {
                let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
                scrape.help.insert(name.to_string(), help.to_string());
            } else if !line.starts_with('#') && !line.is_empty() {
                scrape.samples.extend(sample(line));
            }
        }
        scrape
    }

    /// The family a sample belongs to: its own name, or a histogram's without `_bucket`,
    /// `_sum`, `_count`.
    pub fn family_of(&self, sample: &str) -> Option<String> {
        if self.types.contains_key(sample) {
            return Some(sample.to_string());
        }
        ["_bucket", "_sum", "_count"]
            .iter()
            .filter_map(|s| sample.strip_suffix(s))
            .find(|f| self.types.get(*f).is_some_and(|t| t == "histogram"))
            .map(str::to_string)
    }

    /// The samples of a family (a histogram's buckets, sum and count included).
    pub fn of_family<'a>(&'a self, family: &'a str) -> impl Iterator<Item = &'a Sample> + 'a {
        self.samples
            .iter()
            .filter(move |s| self.family_of(&s.name).as_deref() == Some(family))
    }

    /// The label names a family's samples carry (`le` left out).
    pub fn label_names(&self, family: &str) -> BTreeSet<String> {
        self.of_family(family)
            .flat_map(|s| s.labels.keys().cloned())
            .filter(|l| l != "le")
            .collect()
    }

    /// The value of the one sample named `name` whose labels include `labels`.
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.samples
            .iter()
            .filter(|s| s.name == name)
            .find(|s| {
                labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(v))
            })
            .map(|s| s.value)
    }
}
