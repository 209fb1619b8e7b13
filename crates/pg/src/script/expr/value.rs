//! A variable's value, and the coercions between kinds that pgbench applies
//! when an operator or function needs a number or a boolean.

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
    /// From `-D name=value`: text, read as a number when arithmetic needs one.
    Text(Arc<str>),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(i) => write!(f, "{i}"),
            Value::Double(d) => write!(f, "{d}"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Null => Ok(()),
            Value::Text(s) => f.write_str(s),
        }
    }
}

pub(super) fn as_int(v: &Value) -> Result<i64, EvalError> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Double(d) if d.is_finite() && *d >= i64::MIN as f64 && *d < i64::MAX as f64 => {
            Ok(*d as i64)
        }
        Value::Double(d) => err(format!("double to int overflow for {d}")),
        Value::Bool(b) => Ok(*b as i64),
        Value::Null => err("cannot coerce NULL to int"),
        Value::Text(s) => s.trim().parse().or_else(|_| {
            err(format!(
                "malformed variable value \"{s}\", expected an integer"
            ))
        }),
    }
}

pub(super) fn as_double(v: &Value) -> Result<f64, EvalError> {
    match v {
        Value::Int(i) => Ok(*i as f64),
        Value::Double(d) => Ok(*d),
        Value::Bool(b) => Ok(*b as i64 as f64),
        Value::Null => err("cannot coerce NULL to double"),
        Value::Text(s) => s.trim().parse().or_else(|_| {
            err(format!(
                "malformed variable value \"{s}\", expected a number"
            ))
        }),
    }
}

pub(super) fn as_bool(v: &Value) -> Result<bool, EvalError> {
    match v {
        Value::Bool(b) => Ok(*b),
        Value::Int(i) => Ok(*i != 0),
        Value::Double(d) => Ok(*d != 0.0),
        Value::Null => Ok(false),
        Value::Text(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "t" | "on" | "yes" | "1" => Ok(true),
            "false" | "f" | "off" | "no" | "0" => Ok(false),
            _ => err(format!(
                "malformed variable value \"{s}\", expected a boolean"
            )),
        },
    }
}

/// Text with a decimal point or exponent is a double (pgbench's `makeVariableValue`).
pub(super) fn is_double(v: &Value) -> bool {
    match v {
        Value::Double(_) => true,
        Value::Text(s) => s.contains(['.', 'e', 'E']),
        _ => false,
    }
}
