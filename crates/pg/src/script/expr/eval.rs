//! Evaluating an expression tree, once per transaction: variables, unary
//! and binary operators (`and`/`or` short-circuit, as SQL's do), with
//! integer overflow an error as in pgbench.

use std::fmt;

use super::functions::call;
use super::value::{as_bool, as_double, as_int, is_double};
use super::{Expr, Op, Value};
use crate::script::random::Rng;
use crate::script::vars::Vars;

/// A run-time failure of an expression (aborts the client, as in pgbench).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EvalError(pub String);

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

pub(super) fn err<T>(msg: impl Into<String>) -> Result<T, EvalError> {
    Err(EvalError(msg.into()))
}

impl Expr {
    pub(crate) fn eval(
        &self,
        vars: &[Option<Value>],
        names: &Vars,
        rng: &mut Rng,
    ) -> Result<Value, EvalError> {
        match self {
            Expr::Const(v) => Ok(v.clone()),
            Expr::Var(id) => match vars.get(id.0).and_then(|v| v.as_ref()) {
                Some(v) => Ok(v.clone()),
                None => err(format!("undefined variable \"{}\"", names.name(*id))),
            },
            Expr::Neg(e) => match e.eval(vars, names, rng)? {
                v if is_double(&v) => Ok(Value::Double(-as_double(&v)?)),
                v => as_int(&v)?
                    .checked_neg()
                    .map(Value::Int)
                    .ok_or_else(|| EvalError("bigint out of range".into())),
            },
            Expr::BitNot(e) => Ok(Value::Int(!as_int(&e.eval(vars, names, rng)?)?)),
            Expr::Not(e) => Ok(Value::Bool(!as_bool(&e.eval(vars, names, rng)?)?)),
            Expr::Bin(op, l, r) => {
                let a = l.eval(vars, names, rng)?;
                // and/or short-circuit, as SQL's do.
                match op {
                    Op::And if !as_bool(&a)? => return Ok(Value::Bool(false)),
                    Op::Or if as_bool(&a)? => return Ok(Value::Bool(true)),
                    Op::And | Op::Or => {
                        return Ok(Value::Bool(as_bool(&r.eval(vars, names, rng)?)?))
                    }
                    _ => {}
                }
                binary(*op, &a, &r.eval(vars, names, rng)?)
            }
            Expr::Call(f, args) => call(*f, args, vars, names, rng),
        }
    }
}

pub(super) fn binary(op: Op, a: &Value, b: &Value) -> Result<Value, EvalError> {
    let overflow = || EvalError("bigint out of range".into());
    let double = is_double(a) || is_double(b);
    match op {
        Op::Add | Op::Sub | Op::Mul | Op::Div | Op::Mod if double && op != Op::Mod => {
            let (x, y) = (as_double(a)?, as_double(b)?);
            Ok(Value::Double(match op {
                Op::Add => x + y,
                Op::Sub => x - y,
                Op::Mul => x * y,
                _ if y == 0.0 => return err("division by zero"),
                _ => x / y,
            }))
        }
        Op::Add | Op::Sub | Op::Mul | Op::Div | Op::Mod => {
            let (x, y) = (as_int(a)?, as_int(b)?);
            let v = match op {
                Op::Add => x.checked_add(y),
                Op::Sub => x.checked_sub(y),
                Op::Mul => x.checked_mul(y),
                _ if y == 0 => return err("division by zero"),
                // i64::MIN / -1 overflows; pgbench special-cases it the same way.
                Op::Div => x.checked_div(y),
                _ => Some(x.checked_rem(y).unwrap_or(0)),
            };
            v.map(Value::Int).ok_or_else(overflow)
        }
        Op::BitAnd => Ok(Value::Int(as_int(a)? & as_int(b)?)),
        Op::BitOr => Ok(Value::Int(as_int(a)? | as_int(b)?)),
        Op::BitXor => Ok(Value::Int(as_int(a)? ^ as_int(b)?)),
        Op::Shl => Ok(Value::Int(as_int(a)?.wrapping_shl(as_int(b)? as u32))),
        Op::Shr => Ok(Value::Int(as_int(a)?.wrapping_shr(as_int(b)? as u32))),
        Op::Eq | Op::Ne | Op::Lt | Op::Le | Op::Gt | Op::Ge => {
            let ord = if double {
                as_double(a)?.partial_cmp(&as_double(b)?)
            } else {
                Some(as_int(a)?.cmp(&as_int(b)?))
            };
            use std::cmp::Ordering::*;
            Ok(Value::Bool(match (op, ord) {
                (_, None) => false,
                (Op::Eq, Some(o)) => o == Equal,
                (Op::Ne, Some(o)) => o != Equal,
                (Op::Lt, Some(o)) => o == Less,
                (Op::Le, Some(o)) => o != Greater,
                (Op::Gt, Some(o)) => o == Greater,
                (_, Some(o)) => o != Less,
            }))
        }
        Op::And | Op::Or => unreachable!("handled with short-circuit in eval"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::expr::parse;

    fn eval_with(src: &str, set: &[(&str, Value)]) -> Result<Value, EvalError> {
        let mut vars = Vars::default();
        let e = parse(src, &mut vars).map_err(EvalError)?;
        let mut vals = vec![None; vars.len()];
        for (name, v) in set {
            if let Some(id) = vars.lookup(name) {
                vals[id.0] = Some(v.clone());
            }
        }
        e.eval(&vals, &vars, &mut Rng::new(7))
    }

    fn ev(src: &str) -> Value {
        eval_with(src, &[]).unwrap()
    }

    #[test]
    fn arithmetic_follows_precedence_and_integer_division() {
        assert_eq!(ev("1 + 2 * 3"), Value::Int(7));
        assert_eq!(ev("(1 + 2) * 3"), Value::Int(9));
        assert_eq!(ev("7 / 2"), Value::Int(3));
        assert_eq!(ev("-7 % 3"), Value::Int(-1));
        assert_eq!(ev("7.0 / 2"), Value::Double(3.5));
        assert_eq!(ev("1 << 4 | 1"), Value::Int(17));
        assert_eq!(ev("-(2 - 5)"), Value::Int(3));
    }

    #[test]
    fn variables_and_functions() {
        let v = eval_with("100000 * :scale", &[("scale", Value::Int(3))]).unwrap();
        assert_eq!(v, Value::Int(300000));
        let v = eval_with(":n + 1", &[("n", Value::Text("41".into()))]).unwrap();
        assert_eq!(v, Value::Int(42));
        assert_eq!(ev("greatest(1, 5, 3)"), Value::Int(5));
        assert_eq!(ev("least(4, 2.5)"), Value::Double(2.5));
        assert_eq!(ev("abs(-4)"), Value::Int(4));
        assert_eq!(ev("int(sqrt(16))"), Value::Int(4));
        assert_eq!(ev("pow(2, 10)"), Value::Double(1024.0));
        assert_eq!(ev("3 > 2 and not false"), Value::Bool(true));
        match ev("random(1, 10)") {
            Value::Int(i) => assert!((1..=10).contains(&i)),
            v => panic!("{v:?}"),
        }
        match ev("random_gaussian(1, 10, 2.5) + random_exponential(1, 10, 1.0)") {
            Value::Int(i) => assert!((2..=20).contains(&i)),
            v => panic!("{v:?}"),
        }
    }

    #[test]
    fn runtime_errors_are_errors() {
        assert!(eval_with("1 / 0", &[]).is_err());
        assert!(eval_with("random(5, 1)", &[]).is_err());
        assert!(eval_with("random_gaussian(1, 5, 1.0)", &[]).is_err());
        assert!(eval_with("random_exponential(1, 5, 0)", &[]).is_err());
        assert!(eval_with(":missing + 1", &[])
            .unwrap_err()
            .0
            .contains("missing"));
        assert!(eval_with("9223372036854775807 + 1", &[]).is_err());
    }
}
