//! The mathematics of the workshop, as pure functions over the whole `i64` range.
//!
//! Everything here is exact integer arithmetic: no floating-point square roots (an `f64`
//! cannot even represent every `i64`, so `sqrt` answers wrongly near 2^63) and no overflow.

/// "Fizz" for multiples of 3, "Buzz" for multiples of 5, "FizzBuzz" for multiples of 15,
/// otherwise the decimal value. Negative multiples count too (-15 is "FizzBuzz"), and so
/// does 0, which is a multiple of everything.
pub fn fizzbuzz(value: i64) -> String {
    // `%` cannot overflow for these divisors (only `i64::MIN % -1` would).
    match (value % 3 == 0, value % 5 == 0) {
        (true, true) => "FizzBuzz".to_string(),
        (true, false) => "Fizz".to_string(),
        (false, true) => "Buzz".to_string(),
        (false, false) => value.to_string(),
    }
}

/// The exact integer square root of `value` when `value` is a perfect square (0 = 0²).
/// Negative values are never squares.
pub fn exact_sqrt(value: i64) -> Option<i64> {
    if value < 0 {
        return None;
    }
    // `isqrt` is the exact floor of the square root; r² ≤ value ≤ i64::MAX cannot overflow.
    let root = value.isqrt();
    (root * root == value).then_some(root)
}

/// Whether `value` is at least 0 and exactly k² for some integer k.
pub fn is_square(value: i64) -> bool {
    exact_sqrt(value).is_some()
}

/// Whether `value` is prime. Numbers below 2 (0, 1 and all negatives) are not.
/// Deterministic for all of `u64` (num-prime's `is_prime64`).
pub fn is_prime(value: i64) -> bool {
    u64::try_from(value).is_ok_and(|v| v >= 2 && num_prime::nt_funcs::is_prime64(v))
}

/// Whether n ≡ 1 (mod 4), with the mathematical (non-negative) remainder.
pub fn is_one_mod_four(n: i64) -> bool {
    n.rem_euclid(4) == 1
}

/// The pairs `[a, n - a]` for a = 1 ..= n/2 that a Fermat of `n` splits into Tuples.
/// Empty for n < 2.
pub fn fermat_splits(n: i64) -> Vec<(i64, i64)> {
    if n < 2 {
        return Vec::new();
    }
    (1..=n / 2).map(|a| (a, n - a)).collect()
}

/// Every way to write `n` as x² + y² with 1 ≤ x ≤ y, smallest x first: the answer the
/// Fermat hierarchy should discover. Computed directly (O(√n)), for tests and for checking.
pub fn two_square_decompositions(n: i64) -> Vec<(i64, i64)> {
    let mut found = Vec::new();
    if n < 2 {
        return found;
    }
    let mut x: i64 = 1;
    // x ≤ y ⇔ 2x² ≤ n; checked_mul keeps this exact near i64::MAX.
    while x
        .checked_mul(x)
        .and_then(|sq| sq.checked_mul(2))
        .is_some_and(|d| d <= n)
    {
        if let Some(y) = exact_sqrt(n - x * x) {
            found.push((x, y));
        }
        x += 1;
    }
    found
}

/// How a decomposition is shown in a Fermat's status: `1²+4²`.
pub fn format_decomposition(x: i64, y: i64) -> String {
    format!("{x}²+{y}²")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute_is_prime(n: i64) -> bool {
        n >= 2 && (2..n).take_while(|d| d * d <= n).all(|d| n % d != 0)
    }

    #[test]
    fn fizzbuzz_small_values() {
        assert_eq!(fizzbuzz(0), "FizzBuzz");
        assert_eq!(fizzbuzz(1), "1");
        assert_eq!(fizzbuzz(3), "Fizz");
        assert_eq!(fizzbuzz(5), "Buzz");
        assert_eq!(fizzbuzz(15), "FizzBuzz");
        assert_eq!(fizzbuzz(16), "16");
        assert_eq!(fizzbuzz(-9), "Fizz");
        assert_eq!(fizzbuzz(-10), "Buzz");
        assert_eq!(fizzbuzz(-7), "-7");
    }

    #[test]
    fn fizzbuzz_extremes() {
        // i64::MAX = 9223372036854775807 = 7² · 73 · 127 · 337 · 92737 · 649657: neither.
        assert_eq!(fizzbuzz(i64::MAX), "9223372036854775807");
        // i64::MIN = -2^63: neither.
        assert_eq!(fizzbuzz(i64::MIN), "-9223372036854775808");
        // 2^62 is not divisible by 3 or 5.
        assert_eq!(fizzbuzz(1 << 62), (1i64 << 62).to_string());
        assert_eq!(fizzbuzz(i64::MAX - 7), "FizzBuzz"); // 9223372036854775800
    }

    #[test]
    fn fizzbuzz_matches_definition_on_a_range() {
        for v in -1000..=1000i64 {
            let expected = if v % 15 == 0 {
                "FizzBuzz".to_string()
            } else if v % 3 == 0 {
                "Fizz".to_string()
            } else if v % 5 == 0 {
                "Buzz".to_string()
            } else {
                v.to_string()
            };
            assert_eq!(fizzbuzz(v), expected, "{v}");
        }
    }

    #[test]
    fn squares_against_brute_force() {
        let squares: std::collections::HashSet<i64> = (0..=200i64).map(|k| k * k).collect();
        for v in -100..=40_000i64 {
            assert_eq!(is_square(v), squares.contains(&v), "{v}");
        }
    }

    #[test]
    fn squares_at_the_int64_extremes() {
        assert!(!is_square(i64::MIN));
        assert!(!is_square(-1));
        assert!(is_square(0));
        assert!(is_square(1));
        assert!(is_square(1 << 62));
        assert_eq!(exact_sqrt(1 << 62), Some(1 << 31));
        let largest_root: i64 = 3_037_000_499; // ⌊√(2^63 − 1)⌋
        assert!(is_square(largest_root * largest_root));
        assert!(!is_square(largest_root * largest_root - 1));
        assert!(!is_square(largest_root * largest_root + 1));
        assert!(!is_square(i64::MAX));
        // Where f64 goes wrong: (2^31 + 1)² − 1 rounds to a square in floating point.
        let near = (1i64 << 31) + 1;
        assert!(!is_square(near * near - 1));
        assert!(((near * near - 1) as f64).sqrt().fract() == 0.0);
    }

    #[test]
    fn primes_against_brute_force() {
        for v in -50..=10_000i64 {
            assert_eq!(is_prime(v), brute_is_prime(v), "{v}");
        }
    }

    #[test]
    fn primes_near_the_int64_extremes() {
        assert!(!is_prime(i64::MIN));
        assert!(!is_prime(-1));
        assert!(!is_prime(0));
        assert!(!is_prime(1));
        assert!(is_prime(2));
        assert!(!is_prime(1 << 62));
        assert!(!is_prime(i64::MAX)); // 7² · 73 · 127 · 337 · 92737 · 649657
        assert!(is_prime(9_223_372_036_854_775_783)); // the largest prime below 2^63
        assert!(!is_prime(9_223_372_036_854_775_781));
        assert!(is_prime(2_305_843_009_213_693_951)); // the Mersenne prime 2^61 − 1
        assert!(!is_prime(3_037_000_493 * 3_037_000_453)); // product of two large primes
    }

    #[test]
    fn one_mod_four_uses_the_mathematical_remainder() {
        assert!(is_one_mod_four(1));
        assert!(is_one_mod_four(13));
        assert!(!is_one_mod_four(19));
        assert!(is_one_mod_four(-3)); // −3 = −1·4 + 1
        assert!(!is_one_mod_four(-1));
        assert!(!is_one_mod_four(i64::MIN));
        assert!(!is_one_mod_four(i64::MAX)); // 2^63 − 1 ≡ 3
    }

    #[test]
    fn fermat_splits_cover_one_to_half() {
        assert!(fermat_splits(0).is_empty());
        assert!(fermat_splits(1).is_empty());
        assert_eq!(fermat_splits(2), vec![(1, 1)]);
        assert_eq!(fermat_splits(5), vec![(1, 4), (2, 3)]);
        assert_eq!(fermat_splits(1000).len(), 500);
    }

    #[test]
    fn decompositions_against_brute_force() {
        for n in 0..=2000i64 {
            let brute: Vec<(i64, i64)> = fermat_splits(n)
                .into_iter()
                .filter(|&(a, b)| is_square(a) && is_square(b))
                .map(|(a, b)| (a.isqrt(), b.isqrt()))
                .collect();
            assert_eq!(two_square_decompositions(n), brute, "{n}");
        }
        assert_eq!(two_square_decompositions(50), vec![(1, 7), (5, 5)]);
        assert_eq!(two_square_decompositions(25), vec![(3, 4)]);
        assert!(two_square_decompositions(19).is_empty());
    }

    #[test]
    fn fermat_theorem_holds_for_odd_primes() {
        for p in (3..5000i64).filter(|&p| is_prime(p)) {
            assert_eq!(
                !two_square_decompositions(p).is_empty(),
                is_one_mod_four(p),
                "{p}"
            );
        }
    }

    #[test]
    fn decompositions_of_large_numbers_are_exact() {
        // 10^12 + 1 = 1² + (10^6)², and a few more; each one must add up exactly.
        let n = 1_000_000_000_001i64;
        let found = two_square_decompositions(n);
        assert!(found.contains(&(1, 1_000_000)));
        assert!(found.iter().all(|&(x, y)| x * x + y * y == n && x <= y));
        assert_eq!(format_decomposition(1, 4), "1²+4²");
    }
}
