//! A small PromQL evaluator over two scrapes, for the dashboards' test: enough of the language
//! for what kubebuilder's dashboards, ours and the usual alerts write (selectors with `=`,
//! `!=`, `=~`, `!~`; `rate`, `irate`, `increase` over a range; `histogram_quantile`; `time()`;
//! `sum`, `max`, `min`, `avg`, `count` with `by`/`without` before or after their argument;
//! `=~` and `!~` with a literal, as Grafana writes one selected value;
//! arithmetic between vectors and scalars, and between vectors of the same label sets).
//! Anything else is an error, never a silent pass: a dashboard that starts using more of
//! PromQL makes the test say which part it does not know.
//!
//! A range covers both scrapes (they are seconds apart, the dashboards' ranges minutes), so a
//! rate is the increase between them over the seconds between them (a counter reset counts
//! from zero). The values are Prometheus's up to its extrapolation; what the test asks of a
//! query is whether it returns a series, as Grafana draws one.

use std::collections::BTreeMap;

use anyhow::{Context as _, Result, bail, ensure};

pub type Labels = BTreeMap<String, String>;

/// A scrape at a moment: every sample, its labels with `__name__`.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub time: f64,
    pub samples: Vec<(Labels, f64)>,
}

/// What an expression evaluates to.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Scalar(f64),
    Vector(Vec<(Labels, f64)>),
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Ident(String),
    Number(f64),
    Str(String),
    Duration,
    Punct(&'static str),
}

const PUNCTS: [&str; 13] = [
    "=~", "!~", "!=", "(", ")", "{", "}", ",", "=", "+", "-", "*", "/",
];

fn tokens(expr: &str) -> Result<Vec<Token>> {
    let s = expr.as_bytes();
    let (mut out, mut i) = (Vec::new(), 0);
    while i < s.len() {
        let c = s[i] as char;
        if c.is_whitespace() {
            i += 1;
        } else if c == '[' {
            let end = expr[i..].find(']').context("an unclosed range")?;
            out.push(Token::Duration);
            i += end + 1;
        } else if c == '"' {
            let end = expr[i + 1..].find('"').context("an unclosed string")?;
            out.push(Token::Str(expr[i + 1..i + 1 + end].to_string()));
            i += end + 2;
        } else if c.is_ascii_digit() || (c == '.' && i + 1 < s.len()) {
            let end = (i..s.len())
                .find(|&j| !(s[j].is_ascii_digit() || s[j] == b'.'))
                .unwrap_or(s.len());
            out.push(Token::Number(expr[i..end].parse()?));
            i = end;
        } else if c.is_ascii_alphabetic() || c == '_' || c == ':' {
            let end = (i..s.len())
                .find(|&j| !(s[j].is_ascii_alphanumeric() || s[j] == b'_' || s[j] == b':'))
                .unwrap_or(s.len());
            out.push(Token::Ident(expr[i..end].to_string()));
            i = end;
        } else if let Some(p) = PUNCTS.iter().find(|p| expr[i..].starts_with(**p)) {
            out.push(Token::Punct(p));
            i += p.len();
        } else {
            bail!("`{c}` in {expr}");
        }
    }
    Ok(out)
}

/// A label matcher: name, operator, value.
type Matcher = (String, &'static str, String);

fn matches((name, op, value): &Matcher, labels: &Labels) -> Result<bool> {
    let have = labels.get(name).map_or("", String::as_str);
    Ok(match *op {
        "=" => have == value,
        "!=" => have != value,
        // What Grafana writes for one selected value: a literal. A real pattern is beyond
        // this evaluator, and says so.
        "=~" | "!~" => {
            let special = |c: char| "\\.+*?()|[]{}^$".contains(c);
            ensure!(
                !value.contains(special),
                "the pattern {value:?} is not known here"
            );
            (have == value) == (*op == "=~")
        }
        other => bail!("matcher {other}"),
    })
}

struct Parser<'a> {
    tokens: &'a [Token],
    at: usize,
    now: &'a Snapshot,
    before: &'a Snapshot,
}

const AGGREGATIONS: [&str; 5] = ["sum", "max", "min", "avg", "count"];

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn next(&mut self) -> Result<Token> {
        let t = self.peek().cloned().context("the expression ends early")?;
        self.at += 1;
        Ok(t)
    }

    fn expect(&mut self, p: &'static str) -> Result<()> {
        let t = self.next()?;
        ensure!(t == Token::Punct(p), "expected {p}, found {t:?}");
        Ok(())
    }

    fn eat(&mut self, p: &'static str) -> bool {
        let found = self.peek() == Some(&Token::Punct(p));
        self.at += usize::from(found);
        found
    }

    /// expr := product (('+' | '-') product)*
    fn expr(&mut self) -> Result<Value> {
        let mut left = self.product()?;
        while let Some(op) = ["+", "-"]
            .into_iter()
            .find(|p| self.peek() == Some(&Token::Punct(p)))
        {
            self.at += 1;
            left = binary(op, left, self.product()?)?;
        }
        Ok(left)
    }

    /// product := term (('*' | '/') term)*
    fn product(&mut self) -> Result<Value> {
        let mut left = self.term()?;
        while let Some(op) = ["*", "/"]
            .into_iter()
            .find(|p| self.peek() == Some(&Token::Punct(p)))
        {
            self.at += 1;
            left = binary(op, left, self.term()?)?;
        }
        Ok(left)
    }

    fn term(&mut self) -> Result<Value> {
        match self.next()? {
            Token::Number(n) => Ok(Value::Scalar(n)),
            Token::Punct("(") => {
                let v = self.expr()?;
                self.expect(")")?;
                Ok(v)
            }
            Token::Ident(name) if AGGREGATIONS.contains(&name.as_str()) => self.aggregation(&name),
            Token::Ident(name) if self.peek() == Some(&Token::Punct("(")) => self.call(&name),
            Token::Ident(name) => self.selector(name).map(|(v, _)| Value::Vector(v)),
            other => bail!("unexpected {other:?}"),
        }
    }

    /// `name{matchers}` and whether a range follows it; the samples of the current scrape.
    fn selector(&mut self, name: String) -> Result<(Vec<(Labels, f64)>, bool)> {
        let mut matchers: Vec<Matcher> = vec![("__name__".into(), "=", name)];
        if self.eat("{") {
            while !self.eat("}") {
                let Token::Ident(label) = self.next()? else {
                    bail!("a label name")
                };
                let Token::Punct(op) = self.next()? else {
                    bail!("a matcher")
                };
                let Token::Str(value) = self.next()? else {
                    bail!("a label value")
                };
                matchers.push((label, op, value));
                self.eat(",");
            }
        }
        let ranged = self.peek() == Some(&Token::Duration);
        self.at += usize::from(ranged);
        let mut out = Vec::new();
        for (labels, value) in &self.now.samples {
            let all = matchers
                .iter()
                .map(|m| matches(m, labels))
                .collect::<Result<Vec<_>>>()?;
            if all.into_iter().all(|m| m) {
                out.push((labels.clone(), *value));
            }
        }
        Ok((out, ranged))
    }

    /// `by (a, b)` or `without (a, b)`, if there.
    fn grouping(&mut self) -> Result<Option<(bool, Vec<String>)>> {
        let Some(Token::Ident(word)) = self.peek().cloned() else {
            return Ok(None);
        };
        if word != "by" && word != "without" {
            return Ok(None);
        }
        self.at += 1;
        self.expect("(")?;
        let mut labels = Vec::new();
        while !self.eat(")") {
            let Token::Ident(label) = self.next()? else {
                bail!("a label in by()")
            };
            labels.push(label);
            self.eat(",");
        }
        Ok(Some((word == "by", labels)))
    }

    fn aggregation(&mut self, op: &str) -> Result<Value> {
        let before = self.grouping()?;
        self.expect("(")?;
        let Value::Vector(input) = self.expr()? else {
            bail!("{op} of a scalar")
        };
        self.expect(")")?;
        let (by, labels) = before.or(self.grouping()?).unwrap_or((true, Vec::new()));
        let mut groups: BTreeMap<Labels, Vec<f64>> = BTreeMap::new();
        for (l, v) in input {
            let key = l
                .into_iter()
                .filter(|(k, _)| k != "__name__" && labels.contains(k) == by)
                .collect();
            groups.entry(key).or_default().push(v);
        }
        let fold = |vs: Vec<f64>| -> f64 {
            match op {
                "sum" => vs.iter().sum(),
                "max" => vs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                "min" => vs.iter().copied().fold(f64::INFINITY, f64::min),
                "avg" => vs.iter().sum::<f64>() / vs.len() as f64,
                _ => vs.len() as f64,
            }
        };
        Ok(Value::Vector(
            groups.into_iter().map(|(k, vs)| (k, fold(vs))).collect(),
        ))
    }

    fn call(&mut self, name: &str) -> Result<Value> {
        self.expect("(")?;
        let value = match name {
            "time" => Value::Scalar(self.now.time),
            "rate" | "irate" | "increase" => self.rate(name)?,
            "histogram_quantile" => {
                let Value::Scalar(q) = self.expr()? else {
                    bail!("a quantile")
                };
                self.expect(",")?;
                let Value::Vector(buckets) = self.expr()? else {
                    bail!("buckets")
                };
                Value::Vector(quantiles(q, buckets))
            }
            other => bail!("the function {other} is not known here"),
        };
        self.expect(")")?;
        Ok(value)
    }

    /// rate(selector[range]): the increase between the two scrapes, per second (`increase`:
    /// not divided).
    fn rate(&mut self, name: &str) -> Result<Value> {
        let Token::Ident(metric) = self.next()? else {
            bail!("{name} of a selector")
        };
        let (now, ranged) = self.selector(metric)?;
        ensure!(ranged, "{name} needs a range");
        let seconds = self.now.time - self.before.time;
        let mut out = Vec::new();
        for (labels, v1) in now {
            let Some((_, v0)) = self.before.samples.iter().find(|(l, _)| *l == labels) else {
                continue;
            };
            let increase = if v1 < *v0 { v1 } else { v1 - v0 };
            let value = if name == "increase" {
                increase
            } else {
                increase / seconds
            };
            let mut labels = labels;
            labels.remove("__name__");
            out.push((labels, value));
        }
        Ok(Value::Vector(out))
    }
}

/// Prometheus's `histogram_quantile`: per label set without `le`, the quantile by linear
/// interpolation within the bucket it falls in (NaN without observations).
fn quantiles(q: f64, buckets: Vec<(Labels, f64)>) -> Vec<(Labels, f64)> {
    let mut groups: BTreeMap<Labels, Vec<(f64, f64)>> = BTreeMap::new();
    for (mut labels, count) in buckets {
        let Some(le) = labels.remove("le") else {
            continue;
        };
        let bound = if le == "+Inf" {
            f64::INFINITY
        } else {
            le.parse().unwrap_or(f64::NAN)
        };
        labels.remove("__name__");
        groups.entry(labels).or_default().push((bound, count));
    }
    let mut out = Vec::new();
    for (labels, mut b) in groups {
        b.sort_by(|x, y| x.0.total_cmp(&y.0));
        let total = b.last().map_or(0.0, |l| l.1);
        let value = if total <= 0.0 || b.len() < 2 {
            f64::NAN
        } else {
            let rank = q * total;
            let i = b
                .iter()
                .position(|(_, c)| *c >= rank)
                .unwrap_or(b.len() - 1);
            if i == b.len() - 1 {
                b[b.len() - 2].0
            } else {
                let (lower, below) = if i == 0 { (0.0, 0.0) } else { b[i - 1] };
                let (upper, count) = b[i];
                lower + (upper - lower) * (rank - below) / (count - below).max(f64::MIN_POSITIVE)
            }
        };
        out.push((labels, value));
    }
    out
}

fn arithmetic(op: &str, a: f64, b: f64) -> f64 {
    match op {
        "+" => a + b,
        "-" => a - b,
        "*" => a * b,
        _ => a / b,
    }
}

/// A binary operation; between two vectors, one to one on their label sets without the name.
fn binary(op: &str, left: Value, right: Value) -> Result<Value> {
    let strip = |mut l: Labels| {
        l.remove("__name__");
        l
    };
    Ok(match (left, right) {
        (Value::Scalar(a), Value::Scalar(b)) => Value::Scalar(arithmetic(op, a, b)),
        (Value::Vector(v), Value::Scalar(b)) => Value::Vector(
            v.into_iter()
                .map(|(l, a)| (strip(l), arithmetic(op, a, b)))
                .collect(),
        ),
        (Value::Scalar(a), Value::Vector(v)) => Value::Vector(
            v.into_iter()
                .map(|(l, b)| (strip(l), arithmetic(op, a, b)))
                .collect(),
        ),
        (Value::Vector(a), Value::Vector(b)) => {
            let right: BTreeMap<Labels, f64> = b.into_iter().map(|(l, v)| (strip(l), v)).collect();
            Value::Vector(
                a.into_iter()
                    .filter_map(|(l, x)| {
                        let l = strip(l);
                        let y = *right.get(&l)?;
                        Some((l, arithmetic(op, x, y)))
                    })
                    .collect(),
            )
        }
    })
}

/// Evaluates `expr` at the time of `now`, ranges reaching back to `before`.
pub fn evaluate(expr: &str, before: &Snapshot, now: &Snapshot) -> Result<Value> {
    let tokens = tokens(expr)?;
    let mut parser = Parser {
        tokens: &tokens,
        at: 0,
        now,
        before,
    };
    let value = parser.expr().with_context(|| format!("in {expr}"))?;
    ensure!(
        parser.at == tokens.len(),
        "{expr}: left over from {:?}",
        parser.peek()
    );
    Ok(value)
}
