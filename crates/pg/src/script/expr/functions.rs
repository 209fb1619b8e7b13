//! The built-in functions (pgbench documentation, "Built-in Functions"):
//! their names and arities, checked when parsing, and their evaluation
//! (pgbench.c `evalStandardFunc`).

use super::eval::{binary, err, Env, EvalError};
use super::value::{as_double, as_int, is_double, type_name};
use super::{Expr, Op, Value};
use crate::script::random::{
    hash_fnv1a, hash_murmur2, permute, MAX_ZIPFIAN_PARAM, MIN_GAUSSIAN_PARAM, MIN_ZIPFIAN_PARAM,
};

/// pgbench's `MAX_FARGS`: more arguments are a run-time error.
const MAX_FARGS: usize = 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Func {
    Abs,
    Debug,
    Double,
    Int,
    Exp,
    Ln,
    Sqrt,
    Pow,
    Pi,
    Greatest,
    Least,
    Mod,
    Random,
    RandomExponential,
    RandomGaussian,
    RandomZipfian,
    HashFnv1a,
    HashMurmur2,
    Permute,
}

/// How many arguments a function takes, and how pgbench says it when not.
pub(super) enum Arity {
    Exactly(usize),
    AtLeastOne,
    Range(usize, usize),
}

impl Func {
    pub(super) fn by_name(name: &str) -> Option<(Func, Arity)> {
        use Arity::*;
        Some(match name {
            "abs" => (Func::Abs, Exactly(1)),
            "debug" => (Func::Debug, Exactly(1)),
            "double" => (Func::Double, Exactly(1)),
            "int" => (Func::Int, Exactly(1)),
            "exp" => (Func::Exp, Exactly(1)),
            "ln" => (Func::Ln, Exactly(1)),
            "sqrt" => (Func::Sqrt, Exactly(1)),
            "pow" | "power" => (Func::Pow, Exactly(2)),
            "pi" => (Func::Pi, Exactly(0)),
            "greatest" => (Func::Greatest, AtLeastOne),
            "least" => (Func::Least, AtLeastOne),
            "mod" => (Func::Mod, Exactly(2)),
            "random" => (Func::Random, Exactly(2)),
            "random_exponential" => (Func::RandomExponential, Exactly(3)),
            "random_gaussian" => (Func::RandomGaussian, Exactly(3)),
            "random_zipfian" => (Func::RandomZipfian, Exactly(3)),
            "hash" | "hash_murmur2" => (Func::HashMurmur2, Range(1, 2)),
            "hash_fnv1a" => (Func::HashFnv1a, Range(1, 2)),
            "permute" => (Func::Permute, Range(2, 3)),
            _ => return None,
        })
    }
}

impl Arity {
    /// pgbench's parse-time message, or `None` when `n` fits.
    pub(super) fn check(&self, n: usize) -> Option<&'static str> {
        match self {
            Arity::AtLeastOne if n == 0 => Some("at least one argument expected"),
            Arity::Exactly(k) if n != *k => Some("unexpected number of arguments"),
            Arity::Range(a, b) if n < *a || n > *b => Some("unexpected number of arguments"),
            _ => None,
        }
    }
}

pub(super) fn call(f: Func, args: &[Expr], env: &mut Env<'_>) -> Result<Value, EvalError> {
    if args.len() > MAX_FARGS {
        return err(format!(
            "too many function arguments, maximum is {MAX_FARGS}"
        ));
    }
    // Up to 4 arguments (every function but greatest/least) in a small
    // array: nothing is allocated per transaction.
    if args.len() <= 4 {
        let mut buf = [Value::Null, Value::Null, Value::Null, Value::Null];
        for (slot, a) in buf.iter_mut().zip(args) {
            *slot = a.eval(env)?;
        }
        return apply(f, &buf[..args.len()], env);
    }
    let v = args
        .iter()
        .map(|a| a.eval(env))
        .collect::<Result<Vec<_>, _>>()?;
    apply(f, &v, env)
}

fn apply(f: Func, v: &[Value], env: &mut Env<'_>) -> Result<Value, EvalError> {
    if f == Func::Debug {
        debug(env.at, &v[0]);
        return Ok(v[0].clone());
    }
    if v.contains(&Value::Null) {
        return Ok(Value::Null);
    }
    match f {
        Func::Pi => Ok(Value::Double(std::f64::consts::PI)),
        Func::Abs if is_double(&v[0]) => Ok(Value::Double(as_double(&v[0])?.abs())),
        Func::Abs => as_int(&v[0])?
            .checked_abs()
            .map(Value::Int)
            .ok_or_else(|| EvalError("bigint out of range".into())),
        Func::Double => Ok(Value::Double(as_double(&v[0])?)),
        Func::Int => Ok(Value::Int(as_int(&v[0])?)),
        Func::Exp => Ok(Value::Double(as_double(&v[0])?.exp())),
        Func::Ln => Ok(Value::Double(as_double(&v[0])?.ln())),
        Func::Sqrt => Ok(Value::Double(as_double(&v[0])?.sqrt())),
        Func::Pow => Ok(Value::Double(as_double(&v[0])?.powf(as_double(&v[1])?))),
        Func::Mod => binary(Op::Mod, &v[0], &v[1]),
        Func::Greatest | Func::Least => extremum(f == Func::Greatest, v),
        // The parser supplied `:default_seed` for a missing seed.
        Func::HashFnv1a => Ok(Value::Int(hash_fnv1a(as_int(&v[0])?, as_int(&v[1])?))),
        Func::HashMurmur2 => Ok(Value::Int(hash_murmur2(as_int(&v[0])?, as_int(&v[1])?))),
        Func::Permute => {
            let (val, size) = (as_int(&v[0])?, as_int(&v[1])?);
            let s = as_int(&v[2])?;
            if size <= 0 {
                return err("permute size parameter must be greater than zero");
            }
            Ok(Value::Int(permute(val, size, s)))
        }
        Func::Debug => unreachable!("handled above"),
        Func::Random | Func::RandomExponential | Func::RandomGaussian | Func::RandomZipfian => {
            random(f, v, env)
        }
    }
}

fn debug(at: (usize, usize), v: &Value) {
    let shown = match v {
        Value::Null => "null".to_string(),
        Value::Text(s) => format!("string {s}"),
        other => format!("{} {other}", type_name(other)),
    };
    eprintln!("debug(script={},command={}): {shown}", at.0, at.1);
}

fn extremum(greatest: bool, v: &[Value]) -> Result<Value, EvalError> {
    if v.iter().any(is_double) {
        let mut best = as_double(&v[0])?;
        for x in &v[1..] {
            let x = as_double(x)?;
            best = if greatest { best.max(x) } else { best.min(x) };
        }
        return Ok(Value::Double(best));
    }
    let mut best = as_int(&v[0])?;
    for x in &v[1..] {
        let x = as_int(x)?;
        best = if greatest { best.max(x) } else { best.min(x) };
    }
    Ok(Value::Int(best))
}

fn random(f: Func, v: &[Value], env: &mut Env<'_>) -> Result<Value, EvalError> {
    let (lb, ub) = (as_int(&v[0])?, as_int(&v[1])?);
    if lb > ub {
        return err(format!("empty range given to random: [{lb}, {ub}]"));
    }
    if ub.checked_sub(lb).and_then(|d| d.checked_add(1)).is_none() {
        return err("random range is too large");
    }
    let rng = &mut *env.rng;
    Ok(Value::Int(match f {
        Func::Random => rng.uniform(lb, ub),
        Func::RandomExponential => {
            let p = as_double(&v[2])?;
            if p <= 0.0 {
                return err(format!(
                    "exponential parameter must be greater than zero (not {p:.6})"
                ));
            }
            rng.exponential(lb, ub, p)
        }
        Func::RandomGaussian => {
            let p = as_double(&v[2])?;
            if p < MIN_GAUSSIAN_PARAM {
                return err(format!(
                    "gaussian parameter must be at least {MIN_GAUSSIAN_PARAM:.6} (not {p:.6})"
                ));
            }
            rng.gaussian(lb, ub, p)
        }
        _ => {
            let p = as_double(&v[2])?;
            if !(MIN_ZIPFIAN_PARAM..=MAX_ZIPFIAN_PARAM).contains(&p) {
                return err(format!(
                    "zipfian parameter must be in range [{MIN_ZIPFIAN_PARAM:.3}, {MAX_ZIPFIAN_PARAM:.0}] (not {p:.6})"
                ));
            }
            rng.zipfian(lb, ub, p)
        }
    }))
}
