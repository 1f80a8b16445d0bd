//! The values an SQL92 selector computes with, and the comparisons Apache's
//! `ComparisonExpression.__compare` makes between them (with `convertStringExpressions`
//! on, as the broker's parser always sets it).
//!
//! Message properties are strings. A string meets a number by being parsed as the number's
//! Java type (`Integer.valueOf`, `Long.valueOf`, `Double.valueOf`); a literal in the int range
//! is an `Int`, so `a > 5` parses `a` as an int and "5.5" or "3000000000" fail. A failed parse
//! is an [`EvalError`]: Apache's evaluation throws, and the message does not match.

use std::cmp::Ordering;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value<'a> {
    Null,
    Bool(bool),
    Int(i32),
    Long(i64),
    Double(f64),
    Str(&'a str),
}

/// Why evaluating a selector over one message failed (Apache throws; the message does not
/// match, whatever the rest of the expression would have said).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    #[error("a property is not a number of the type it is compared with")]
    NumberFormat,
    /// Apache casts the boolean itself to a string here (`TRUE = a`) and fails.
    #[error("a boolean compared with a string")]
    ClassCast,
    #[error("null in a comparison")]
    Null,
}

/// `Integer.valueOf(String)`: optional sign, decimal digits, in range.
fn java_int(s: &str) -> Result<i32, EvalError> {
    s.parse().map_err(|_| EvalError::NumberFormat)
}

/// `Long.valueOf(String)`.
fn java_long(s: &str) -> Result<i64, EvalError> {
    s.parse().map_err(|_| EvalError::NumberFormat)
}

/// `Boolean.valueOf(String)`: "true" in any case, everything else false.
fn java_boolean(s: &str) -> bool {
    s.eq_ignore_ascii_case("true")
}

/// `Double.valueOf(String)`: surrounding characters up to U+0020 trimmed, an optional sign,
/// `NaN`, `Infinity`, a decimal number with an optional exponent or a hexadecimal one with a
/// binary exponent, and an optional `f`/`F`/`d`/`D` suffix.
pub fn java_double(s: &str) -> Result<f64, EvalError> {
    let s = s.trim_matches(|c: char| c <= ' ');
    let (negative, unsigned) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let magnitude = match unsigned {
        "NaN" => f64::NAN,
        "Infinity" => f64::INFINITY,
        _ => {
            let number = unsigned
                .strip_suffix(['f', 'F', 'd', 'D'])
                .unwrap_or(unsigned);
            match number.get(..2) {
                Some("0x" | "0X") => hex_double(&number[2..])?,
                _ => decimal_double(number)?,
            }
        }
    };
    Ok(if negative { -magnitude } else { magnitude })
}

/// Digits with an optional point and exponent; Rust's parser agrees on those but also takes
/// words like "inf", which Java does not.
fn decimal_double(s: &str) -> Result<f64, EvalError> {
    let mantissa_end = s.find(['e', 'E']).unwrap_or(s.len());
    let (mantissa, exponent) = s.split_at(mantissa_end);
    let mantissa_ok = mantissa.bytes().any(|b| b.is_ascii_digit())
        && mantissa.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && mantissa.bytes().filter(|&b| b == b'.').count() <= 1;
    let exponent_ok = exponent.is_empty() || {
        let digits = exponent[1..]
            .strip_prefix(['+', '-'])
            .unwrap_or(&exponent[1..]);
        !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
    };
    if !(mantissa_ok && exponent_ok) {
        return Err(EvalError::NumberFormat);
    }
    s.parse().map_err(|_| EvalError::NumberFormat)
}

/// `hex[.hex]p[sign]digits`, the part after "0x". Up to 15 significant hex digits are kept
/// (60 bits, more than a double holds); a value needing more may round differently in its
/// last bit than Java.
fn hex_double(s: &str) -> Result<f64, EvalError> {
    let (mantissa, exponent) = s.split_once(['p', 'P']).ok_or(EvalError::NumberFormat)?;
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let hex_digits = int.chars().chain(frac.chars());
    if int.len() + frac.len() == 0 || !hex_digits.clone().all(|c| c.is_ascii_hexdigit()) {
        return Err(EvalError::NumberFormat);
    }
    let digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(EvalError::NumberFormat);
    }
    // A huge exponent is as good as infinite (or zero): clamp before arithmetic.
    let exp: i64 = exponent
        .parse::<i64>()
        .unwrap_or(if exponent.starts_with('-') {
            i64::MIN / 2
        } else {
            i64::MAX / 2
        });
    let mut bits: u64 = 0;
    let mut scale: i64 = -4 * frac.len() as i64;
    for (kept, c) in hex_digits.skip_while(|&c| c == '0').enumerate() {
        if kept < 15 {
            bits = bits << 4 | u64::from(c.to_digit(16).expect("hex digit"));
        } else {
            scale += 4;
        }
    }
    let power = (exp.clamp(-2200, 2200) + scale.clamp(-2200, 2200)) as i32;
    // Two steps, so neither factor overflows or underflows where the product would not.
    Ok(bits as f64 * 2f64.powi(power / 2) * 2f64.powi(power - power / 2))
}

/// `Double.compareTo`: -0.0 below 0.0, NaN above everything and equal to itself.
fn java_double_cmp(a: f64, b: f64) -> Ordering {
    match a.partial_cmp(&b) {
        Some(Ordering::Equal) | None => {
            let bits = |d: f64| {
                if d.is_nan() {
                    0x7ff8_0000_0000_0000
                } else {
                    d.to_bits() as i64
                }
            };
            bits(a).cmp(&bits(b))
        }
        Some(order) => order,
    }
}

/// `__compare(lv, rv, true)`: `Less` for types Apache cannot relate (it answers -1).
pub fn compare(left: Value<'_>, right: Value<'_>) -> Result<Ordering, EvalError> {
    use Value::*;
    Ok(match (left, right) {
        (Null, _) | (_, Null) => return Err(EvalError::Null),
        (Bool(a), Bool(b)) => a.cmp(&b),
        (Int(a), Int(b)) => a.cmp(&b),
        (Long(a), Long(b)) => a.cmp(&b),
        (Double(a), Double(b)) => java_double_cmp(a, b),
        (Str(a), Str(b)) => a.cmp(b),
        (Bool(_), Str(_)) => return Err(EvalError::ClassCast),
        (Int(a), Long(b)) => i64::from(a).cmp(&b),
        (Long(a), Int(b)) => a.cmp(&i64::from(b)),
        (Int(a), Double(b)) => java_double_cmp(f64::from(a), b),
        (Long(a), Double(b)) => java_double_cmp(a as f64, b),
        (Double(a), Int(b)) => java_double_cmp(a, f64::from(b)),
        (Double(a), Long(b)) => java_double_cmp(a, b as f64),
        (Int(a), Str(b)) => a.cmp(&java_int(b)?),
        (Long(a), Str(b)) => a.cmp(&java_long(b)?),
        (Double(a), Str(b)) => java_double_cmp(a, java_double(b)?),
        (Str(a), Bool(b)) => java_boolean(a).cmp(&b),
        (Str(a), Int(b)) => java_int(a)?.cmp(&b),
        (Str(a), Long(b)) => java_long(a)?.cmp(&b),
        (Str(a), Double(b)) => java_double_cmp(java_double(a)?, b),
        (Bool(_), _) | (Int(_) | Long(_) | Double(_), Bool(_)) => Ordering::Less,
    })
}

/// `>`, `>=`, `<`, `<=` order two strings as doubles (both must parse), anything else as
/// [`compare`] does.
pub fn order(left: Value<'_>, right: Value<'_>) -> Result<Ordering, EvalError> {
    match (left, right) {
        (Value::Str(a), Value::Str(b)) => Ok(java_double_cmp(java_double(a)?, java_double(b)?)),
        _ => compare(left, right),
    }
}
