//! A variable's value, and pgbench's coercions between kinds
//! (`coerceToInt`, `coerceToDouble`, `coerceToBool`, `valueTruth`,
//! `makeVariableValue` in pgbench.c).

use std::fmt;
use std::sync::Arc;

use super::eval::{err, EvalError};

/// A variable's value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    Int(i64),
    Double(f64),
    Bool(bool),
    Null,
    /// From `-D name=value`, `\gset` or `\setshell`: text, given a kind
    /// (pgbench's `makeVariableValue`) when an expression reads it.
    Text(Arc<str>),
}

/// How pgbench writes a value into SQL text, a parameter or `debug()`:
/// doubles as C's `%.15g`, NULL as `NULL`.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(i) => write!(f, "{i}"),
            Value::Double(d) => f.write_str(&format_g15(*d)),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Null => f.write_str("NULL"),
            Value::Text(s) => f.write_str(s),
        }
    }
}

/// `printf("%.15g", d)` as PostgreSQL's own `snprintf` writes it (pgbench
/// prints doubles with `DBL_DIG` digits; infinities as `Infinity`).
pub(crate) fn format_g15(d: f64) -> String {
    if d.is_nan() {
        return "NaN".into();
    }
    if d.is_infinite() {
        return if d < 0.0 { "-Infinity" } else { "Infinity" }.into();
    }
    const P: i32 = 15;
    let sci = format!("{:.*e}", (P - 1) as usize, d);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if !(-4..P).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.abs())
    } else {
        trim(&format!("{:.*}", (P - 1 - exp) as usize, d))
    }
}

pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Int(_) => "int",
        Value::Double(_) => "double",
        Value::Bool(_) => "boolean",
        Value::Null => "null",
        Value::Text(_) => "string",
    }
}

/// pgbench's `makeVariableValue`: `null`, boolean words (prefixes of
/// `true`, `yes`, `false`, `no`, and `on`, `off`, `of`), integers, doubles.
pub(crate) fn typed(name: &str, s: &str) -> Result<Value, EvalError> {
    let l = s.to_ascii_lowercase();
    let prefix_of = |w: &str| !l.is_empty() && w.starts_with(l.as_str());
    if l == "null" {
        return Ok(Value::Null);
    }
    if prefix_of("true") || prefix_of("yes") || l == "on" {
        return Ok(Value::Bool(true));
    }
    if prefix_of("false") || prefix_of("no") || l == "off" || l == "of" {
        return Ok(Value::Bool(false));
    }
    let t = s.trim();
    let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
    if !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit()) {
        if let Ok(i) = t.parse::<i64>() {
            return Ok(Value::Int(i));
        }
    }
    match t.parse::<f64>() {
        Ok(d) if !t.is_empty() && !t.eq_ignore_ascii_case("inf") => Ok(Value::Double(d)),
        _ => err(format!("malformed variable \"{name}\" value: \"{s}\"")),
    }
}

pub(super) fn as_int(v: &Value) -> Result<i64, EvalError> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Double(d) => {
            let r = d.round_ties_even();
            if r.is_nan() || r < i64::MIN as f64 || r >= i64::MAX as f64 {
                err(format!("double to int overflow for {r:.6}"))
            } else {
                Ok(r as i64)
            }
        }
        other => err(format!("cannot coerce {} to int", type_name(other))),
    }
}

pub(super) fn as_double(v: &Value) -> Result<f64, EvalError> {
    match v {
        Value::Int(i) => Ok(*i as f64),
        Value::Double(d) => Ok(*d),
        other => err(format!("cannot coerce {} to double", type_name(other))),
    }
}

/// `coerceToBool`: only a boolean is one.
pub(super) fn as_bool(v: &Value) -> Result<bool, EvalError> {
    match v {
        Value::Bool(b) => Ok(*b),
        other => err(format!("cannot coerce {} to boolean", type_name(other))),
    }
}

/// `valueTruth`: the condition of `CASE WHEN` and `\if`.
pub(crate) fn truth(v: &Value) -> bool {
    match v {
        Value::Bool(b) => *b,
        Value::Int(i) => *i != 0,
        Value::Double(d) => *d != 0.0,
        Value::Null | Value::Text(_) => false,
    }
}

pub(super) fn is_double(v: &Value) -> bool {
    matches!(v, Value::Double(_))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_print_as_c_g15() {
        assert_eq!(format_g15(15.0), "15");
        assert_eq!(format_g15(-0.125), "-0.125");
        assert_eq!(format_g15(-0.00032), "-0.00032");
        assert_eq!(format_g15(8.507059173023462e37), "8.50705917302346e+37");
        assert_eq!(format_g15(1e30), "1e+30");
        assert_eq!(format_g15(-0.5421), "-0.5421");
        assert_eq!(format_g15(f64::INFINITY), "Infinity");
        assert_eq!(format_g15(0.0001), "0.0001");
        assert_eq!(format_g15(0.00001), "1e-05");
    }

    #[test]
    fn variables_take_pgbench_kinds() {
        assert_eq!(typed("f", "of").unwrap(), Value::Bool(false));
        assert_eq!(typed("t", "t").unwrap(), Value::Bool(true));
        assert_eq!(typed("n", "NULL").unwrap(), Value::Null);
        assert_eq!(typed("i", "+3").unwrap(), Value::Int(3));
        assert_eq!(typed("d", "-10.1").unwrap(), Value::Double(-10.1));
        let e = typed("foo", "bla").unwrap_err().0;
        assert_eq!(e, "malformed variable \"foo\" value: \"bla\"");
        assert!(typed("b", "trueXXX").is_err());
    }
}
