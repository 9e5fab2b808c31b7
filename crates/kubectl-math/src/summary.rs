//! What each object's status says, in a few words, for the STATUS column.

use math_controller::api::{Fermat, Number, NumberSpec, Tuple, TupleSpec};

pub fn tuple_wanted(spec: &TupleSpec) -> String {
    list(&spec.numbers)
}

pub fn number_wanted(spec: &NumberSpec) -> String {
    format!("value {}", spec.value)
}

/// `[1, 4]`, shortened for long Tuples.
pub fn list(numbers: &[i64]) -> String {
    const SHOWN: usize = 8;
    let mut items: Vec<String> = numbers.iter().take(SHOWN).map(i64::to_string).collect();
    if numbers.len() > SHOWN {
        items.push(format!("… {} items", numbers.len()));
    }
    format!("[{}]", items.join(", "))
}

/// `15 → FizzBuzz`, `16 → 16, square`, `2 → 2, prime`; the value alone before the status,
/// `7 → ?` while the status describes an older spec (a status is not shown for a spec it
/// was not computed for).
pub fn number_summary(n: &Number) -> String {
    let value = n.spec.value;
    let Some(s) = n.status.as_ref().filter(|s| s.fizz_buzz.is_some()) else {
        return value.to_string();
    };
    if s.observed_generation != n.metadata.generation {
        return format!("{value} → ?");
    }
    let mut text = format!("{value} → {}", s.fizz_buzz.as_deref().unwrap_or("?"));
    if s.is_square == Some(true) {
        text.push_str(", square");
    }
    if s.is_prime == Some(true) {
        text.push_str(", prime");
    }
    text
}

/// `[1, 4] → all squares`, `[2, 3] → not all squares`, `[2, 3] (1/2 Numbers)` while waiting.
pub fn tuple_summary(t: &Tuple) -> String {
    let mut text = list(&t.spec.numbers);
    let Some(s) = t.status.as_ref() else {
        return text;
    };
    if s.observed_generation != t.metadata.generation {
        return text + " → ?";
    }
    match s.all_squares {
        Some(true) => text.push_str(" → all squares"),
        Some(false) => text.push_str(" → not all squares"),
        None => {
            if let (Some(ready), Some(desired)) = (s.ready_numbers, s.desired_numbers) {
                text.push_str(&format!(" ({ready}/{desired} Numbers)"));
            }
        }
    }
    text
}

/// `13 (prime, 1 mod 4) → 2²+3²`, `19 (prime) → no two squares`, `13 (3/6 Tuples)` while waiting.
pub fn fermat_summary(f: &Fermat) -> String {
    let mut text = f.spec.number.to_string();
    let Some(s) = f.status.as_ref() else {
        return text;
    };
    if s.observed_generation != f.metadata.generation {
        return text + " → ?";
    }
    let mut facts = Vec::new();
    if s.is_prime == Some(true) {
        facts.push("prime".to_string());
    }
    if s.one_mod_four == Some(true) {
        facts.push("1 mod 4".to_string());
    }
    if s.decompositions.is_none()
        && let (Some(ready), Some(desired)) = (s.ready_tuples, s.desired_tuples)
    {
        facts.push(format!("{ready}/{desired} Tuples"));
    }
    if !facts.is_empty() {
        text.push_str(&format!(" ({})", facts.join(", ")));
    }
    match s.decompositions.as_deref() {
        Some([]) => text.push_str(" → no two squares"),
        Some(found) => text.push_str(&format!(" → {}", found.join(", "))),
        None => {}
    }
    text
}
