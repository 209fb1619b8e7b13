//! The built-in functions (pgbench documentation, "Built-in Functions"):
//! their names and arities, checked when parsing, and their evaluation.

use super::eval::{binary, err, EvalError};
use super::value::{as_double, as_int, is_double};
use super::{Expr, Op, Value};
use crate::script::random::{Rng, MIN_GAUSSIAN_PARAM};
use crate::script::vars::Vars;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Func {
    Abs,
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
}

impl Func {
    pub(super) fn by_name(name: &str) -> Option<(Func, std::ops::RangeInclusive<usize>)> {
        Some(match name {
            "abs" => (Func::Abs, 1..=1),
            "double" => (Func::Double, 1..=1),
            "int" => (Func::Int, 1..=1),
            "exp" => (Func::Exp, 1..=1),
            "ln" => (Func::Ln, 1..=1),
            "sqrt" => (Func::Sqrt, 1..=1),
            "pow" | "power" => (Func::Pow, 2..=2),
            "pi" => (Func::Pi, 0..=0),
            "greatest" => (Func::Greatest, 1..=usize::MAX),
            "least" => (Func::Least, 1..=usize::MAX),
            "mod" => (Func::Mod, 2..=2),
            "random" => (Func::Random, 2..=2),
            "random_exponential" => (Func::RandomExponential, 3..=3),
            "random_gaussian" => (Func::RandomGaussian, 3..=3),
            _ => return None,
        })
    }
}

pub(super) fn call(
    f: Func,
    args: &[Expr],
    vars: &[Option<Value>],
    names: &Vars,
    rng: &mut Rng,
) -> Result<Value, EvalError> {
    let arg = |i: usize, rng: &mut Rng| args[i].eval(vars, names, rng);
    match f {
        Func::Pi => Ok(Value::Double(std::f64::consts::PI)),
        Func::Abs => match arg(0, rng)? {
            v if is_double(&v) => Ok(Value::Double(as_double(&v)?.abs())),
            v => as_int(&v)?
                .checked_abs()
                .map(Value::Int)
                .ok_or_else(|| EvalError("bigint out of range".into())),
        },
        Func::Double => Ok(Value::Double(as_double(&arg(0, rng)?)?)),
        Func::Int => Ok(Value::Int(as_int(&arg(0, rng)?)?)),
        Func::Exp => Ok(Value::Double(as_double(&arg(0, rng)?)?.exp())),
        Func::Ln => Ok(Value::Double(as_double(&arg(0, rng)?)?.ln())),
        Func::Sqrt => Ok(Value::Double(as_double(&arg(0, rng)?)?.sqrt())),
        Func::Pow => {
            let (x, y) = (as_double(&arg(0, rng)?)?, as_double(&arg(1, rng)?)?);
            Ok(Value::Double(x.powf(y)))
        }
        Func::Mod => binary(Op::Mod, &arg(0, rng)?, &arg(1, rng)?),
        Func::Greatest | Func::Least => {
            let mut best = arg(0, rng)?;
            for i in 1..args.len() {
                let v = arg(i, rng)?;
                let better = binary(if f == Func::Greatest { Op::Gt } else { Op::Lt }, &v, &best)?;
                let promote = is_double(&v) || is_double(&best);
                if better == Value::Bool(true) {
                    best = v;
                }
                if promote {
                    best = Value::Double(as_double(&best)?);
                }
            }
            Ok(best)
        }
        Func::Random | Func::RandomExponential | Func::RandomGaussian => {
            let lb = as_int(&arg(0, rng)?)?;
            let ub = as_int(&arg(1, rng)?)?;
            if lb > ub {
                return err(format!("empty range given to random: [{lb}, {ub}]"));
            }
            if (ub as i128 - lb as i128) >= i64::MAX as i128 {
                return err("random range is too large");
            }
            match f {
                Func::Random => Ok(Value::Int(rng.uniform(lb, ub))),
                Func::RandomExponential => {
                    let p = as_double(&arg(2, rng)?)?;
                    if p <= 0.0 {
                        return err(format!(
                            "exponential parameter must be greater than zero (got {p})"
                        ));
                    }
                    Ok(Value::Int(rng.exponential(lb, ub, p)))
                }
                _ => {
                    let p = as_double(&arg(2, rng)?)?;
                    if p < MIN_GAUSSIAN_PARAM {
                        return err(format!(
                            "gaussian parameter must be at least {MIN_GAUSSIAN_PARAM} (got {p})"
                        ));
                    }
                    Ok(Value::Int(rng.gaussian(lb, ub, p)))
                }
            }
        }
    }
}
