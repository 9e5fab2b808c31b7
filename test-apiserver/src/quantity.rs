//! Resource quantities (`5`, `1k`, `500m`, `2Ki`) as apimachinery's `resource.Quantity`
//! parses and prints them, for ResourceQuota: kube-apiserver stores and reports them in
//! canonical form (`--hard=count/x=1000` reads back as `1k`), and its refusals print
//! them that way (`limited: count/tuples.math.example.com=5`).
//!
//! Only what counts need: values are kept in thousandths (milli-units), so fractions finer
//! than `1m` are rounded up, as the Go type rounds values it cannot hold exactly.

/// The suffix family a quantity was written in, which decides how it prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    DecimalSi,
    BinarySi,
}

/// A parsed quantity: its value in thousandths, and its format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quantity {
    milli: i128,
    format: Format,
}

const DECIMAL: &[(&str, u32)] = &[
    ("k", 3),
    ("M", 6),
    ("G", 9),
    ("T", 12),
    ("P", 15),
    ("E", 18),
];
const BINARY: &[(&str, u32)] = &[
    ("Ki", 10),
    ("Mi", 20),
    ("Gi", 30),
    ("Ti", 40),
    ("Pi", 50),
    ("Ei", 60),
];

/// The message kube-apiserver answers (400) for a string that is no quantity.
pub const SYNTAX_ERROR: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

impl Quantity {
    /// A whole number of units (a count).
    pub fn from_count(n: i64) -> Quantity {
        Quantity {
            milli: i128::from(n) * 1000,
            format: Format::DecimalSi,
        }
    }

    /// Parses `[+-]digits[.digits][suffix]` with the SI (`m`, `k`, `M`, ...), binary (`Ki`,
    /// `Mi`, ...) or exponent (`e3`) suffixes.
    pub fn parse(s: &str) -> Option<Quantity> {
        let s = s.trim();
        let (negative, s) = match s.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, s.strip_prefix('+').unwrap_or(s)),
        };
        let end = s
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(s.len());
        let (number, suffix) = s.split_at(end);
        if number.is_empty() || number.matches('.').count() > 1 || number == "." {
            return None;
        }
        let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
        // The number as an integer scaled by 10^-frac_digits.
        let digits = format!("{int_part}{frac_part}");
        let mantissa: i128 = if digits.is_empty() {
            0
        } else {
            digits.parse().ok()?
        };
        let mut scale10: i32 = -(frac_part.len() as i32);
        let mut scale2: u32 = 0;
        let format = match suffix {
            "" => Format::DecimalSi,
            "m" => {
                scale10 -= 3;
                Format::DecimalSi
            }
            s if DECIMAL.iter().any(|(x, _)| *x == s) => {
                scale10 += DECIMAL
                    .iter()
                    .find(|(x, _)| *x == s)
                    .map(|(_, e)| *e as i32)?;
                Format::DecimalSi
            }
            s if BINARY.iter().any(|(x, _)| *x == s) => {
                scale2 = BINARY.iter().find(|(x, _)| *x == s).map(|(_, e)| *e)?;
                Format::BinarySi
            }
            s if s.starts_with(['e', 'E']) => {
                scale10 += s[1..].parse::<i32>().ok()?;
                Format::DecimalSi
            }
            _ => return None,
        };
        // milli = mantissa * 10^(scale10 + 3) * 2^scale2, rounded up.
        let mut milli = mantissa.checked_mul(1i128.checked_shl(scale2)?)?;
        let exp = scale10 + 3;
        if exp >= 0 {
            milli = milli.checked_mul(10i128.checked_pow(exp as u32)?)?;
        } else {
            let div = 10i128.checked_pow((-exp) as u32)?;
            milli = (milli + div - 1) / div;
        }
        Some(Quantity {
            milli: if negative { -milli } else { milli },
            format,
        })
    }

    pub fn is_negative(&self) -> bool {
        self.milli < 0
    }

    pub fn add(self, other: Quantity) -> Quantity {
        Quantity {
            milli: self.milli + other.milli,
            format: self.format,
        }
    }

    pub fn cmp_value(&self, other: &Quantity) -> std::cmp::Ordering {
        self.milli.cmp(&other.milli)
    }

    /// The canonical form `Quantity.String()` prints: the largest SI (or, for a whole
    /// binary value of at least 1024, binary) suffix that keeps the number whole.
    pub fn canonical(&self) -> String {
        let sign = if self.milli < 0 { "-" } else { "" };
        let m = self.milli.unsigned_abs();
        if !m.is_multiple_of(1000) {
            return format!("{sign}{m}m");
        }
        let units = m / 1000;
        if self.format == Format::BinarySi && units >= 1024 {
            let mut best = (units, "");
            for (suffix, exp) in BINARY {
                let div = 1u128 << exp;
                if units.is_multiple_of(div) {
                    best = (units / div, suffix);
                }
            }
            return format!("{sign}{}{}", best.0, best.1);
        }
        if units == 0 {
            return "0".into();
        }
        let mut best = (units, "");
        for (suffix, exp) in DECIMAL {
            let div = 10u128.pow(*exp);
            if units.is_multiple_of(div) {
                best = (units / div, suffix);
            }
        }
        format!("{sign}{}{}", best.0, best.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(s: &str) -> String {
        Quantity::parse(s)
            .map(|q| q.canonical())
            .unwrap_or_default()
    }

    /// What `resource.MustParse(s).String()` prints.
    #[test]
    fn canonical_forms() {
        assert_eq!(canon("5"), "5");
        assert_eq!(canon("1000"), "1k");
        assert_eq!(canon("1500"), "1500");
        assert_eq!(canon("1500000"), "1500k");
        assert_eq!(canon("2k"), "2k");
        assert_eq!(canon("0.5"), "500m");
        assert_eq!(canon("500m"), "500m");
        assert_eq!(canon("1e3"), "1k");
        assert_eq!(canon("2048Ki"), "2Mi");
        assert_eq!(canon("1Ki"), "1Ki");
        assert_eq!(canon("0"), "0");
        assert_eq!(canon("-3"), "-3");
        assert!(Quantity::parse("abc").is_none());
        assert!(Quantity::parse("5x").is_none());
        assert!(Quantity::parse("").is_none());
    }
}
