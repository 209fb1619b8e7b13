//! Evaluating an expression tree, once per transaction, with pgbench's
//! rules (`evaluateExpr`, `evalLazyFunc`, `evalStandardFunc`): NULL in,
//! NULL out; `and`/`or`/`case` lazy; integer overflow an error; a double
//! division by zero is an infinity, an integer one an error.

use std::fmt;

use super::functions::call;
use super::value::{as_bool, as_double, as_int, is_double, truth, typed};
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

/// What an evaluation reads: the client's variables and generator, and
/// where it runs (for `debug()`'s `script=N,command=M`).
pub(crate) struct Env<'a> {
    pub vars: &'a [Option<Value>],
    pub names: &'a Vars,
    pub rng: &'a mut Rng,
    /// (script index, 1-based command number).
    pub at: (usize, usize),
}

impl Expr {
    pub(crate) fn eval(&self, env: &mut Env<'_>) -> Result<Value, EvalError> {
        match self {
            Expr::Const(v) => Ok(v.clone()),
            Expr::Var(id) => match env.vars.get(id.0).and_then(|v| v.as_ref()) {
                Some(Value::Text(s)) => typed(env.names.name(*id), s),
                Some(v) => Ok(v.clone()),
                None => err(format!("undefined variable \"{}\"", env.names.name(*id))),
            },
            // pgbench parses `-x` as `0 - x` and `~x` as `-1 # x`.
            Expr::Neg(e) => binary(Op::Sub, &Value::Int(0), &e.eval(env)?),
            Expr::BitNot(e) => binary(Op::BitXor, &Value::Int(-1), &e.eval(env)?),
            Expr::Not(e) => match e.eval(env)? {
                Value::Null => Ok(Value::Null),
                v => Ok(Value::Bool(!as_bool(&v)?)),
            },
            Expr::Is(e, want) => {
                let v = e.eval(env)?;
                Ok(Value::Bool(match (&v, want) {
                    (Value::Null, Value::Null) => true,
                    (Value::Bool(a), Value::Bool(b)) => a == b,
                    _ => false,
                }))
            }
            Expr::Case(arms, otherwise) => {
                for (when, then) in arms {
                    if truth(&when.eval(env)?) {
                        return then.eval(env);
                    }
                }
                match otherwise {
                    Some(e) => e.eval(env),
                    None => Ok(Value::Null),
                }
            }
            Expr::Bin(op @ (Op::And | Op::Or), l, r) => {
                let a = l.eval(env)?;
                let stop = *op == Op::Or;
                let a_null = a == Value::Null;
                if !a_null && as_bool(&a)? == stop {
                    return Ok(Value::Bool(stop));
                }
                match r.eval(env)? {
                    Value::Null => Ok(Value::Null),
                    b => {
                        let b = as_bool(&b)?;
                        Ok(if a_null { Value::Null } else { Value::Bool(b) })
                    }
                }
            }
            Expr::Bin(op, l, r) => {
                let a = l.eval(env)?;
                binary(*op, &a, &r.eval(env)?)
            }
            Expr::Call(f, args) => call(*f, args, env),
        }
    }
}

pub(super) fn binary(op: Op, a: &Value, b: &Value) -> Result<Value, EvalError> {
    if *a == Value::Null || *b == Value::Null {
        return Ok(Value::Null);
    }
    let double = (is_double(a) || is_double(b)) && op != Op::Mod;
    match op {
        Op::Add | Op::Sub | Op::Mul | Op::Div if double => {
            let (x, y) = (as_double(a)?, as_double(b)?);
            Ok(Value::Double(match op {
                Op::Add => x + y,
                Op::Sub => x - y,
                Op::Mul => x * y,
                _ => x / y,
            }))
        }
        Op::Eq | Op::Ne | Op::Lt | Op::Le | Op::Gt | Op::Ge if double => {
            let (x, y) = (as_double(a)?, as_double(b)?);
            Ok(Value::Bool(match op {
                Op::Eq => x == y,
                Op::Ne => x != y,
                Op::Lt => x < y,
                Op::Le => x <= y,
                Op::Gt => x > y,
                _ => x >= y,
            }))
        }
        _ => int_binary(op, as_int(a)?, as_int(b)?),
    }
}

fn int_binary(op: Op, x: i64, y: i64) -> Result<Value, EvalError> {
    let out = |what: &str| EvalError(format!("bigint {what} out of range"));
    Ok(Value::Int(match op {
        Op::Add => x.checked_add(y).ok_or_else(|| out("add"))?,
        Op::Sub => x.checked_sub(y).ok_or_else(|| out("sub"))?,
        Op::Mul => x.checked_mul(y).ok_or_else(|| out("mul"))?,
        Op::Div | Op::Mod if y == 0 => return err("division by zero"),
        Op::Div => x.checked_div(y).ok_or_else(|| out("div"))?,
        Op::Mod => x.checked_rem(y).unwrap_or(0),
        Op::BitAnd => x & y,
        Op::BitOr => x | y,
        Op::BitXor => x ^ y,
        Op::Shl => x.wrapping_shl(y as u32),
        Op::Shr => x.wrapping_shr(y as u32),
        Op::Eq => return Ok(Value::Bool(x == y)),
        Op::Ne => return Ok(Value::Bool(x != y)),
        Op::Lt => return Ok(Value::Bool(x < y)),
        Op::Le => return Ok(Value::Bool(x <= y)),
        Op::Gt => return Ok(Value::Bool(x > y)),
        Op::Ge => return Ok(Value::Bool(x >= y)),
        Op::And | Op::Or => unreachable!("evaluated lazily in eval"),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::expr::parse;

    pub(crate) fn eval_with(src: &str, set: &[(&str, Value)]) -> Result<Value, EvalError> {
        let mut vars = Vars::default();
        let e = parse(src, &mut vars).map_err(|e| EvalError(e.message))?;
        let mut vals = vec![None; vars.len()];
        for (name, v) in set {
            if let Some(id) = vars.lookup(name) {
                vals[id.0] = Some(v.clone());
            }
        }
        let mut rng = Rng::new(7);
        e.eval(&mut Env {
            vars: &vals,
            names: &vars,
            rng: &mut rng,
            at: (0, 1),
        })
    }

    fn ev(src: &str) -> Value {
        eval_with(src, &[]).unwrap()
    }

    fn fails(src: &str) -> String {
        eval_with(src, &[]).unwrap_err().0
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
    fn pgbench_semantics() {
        assert_eq!(ev("1.0 / 0"), Value::Double(f64::INFINITY));
        assert_eq!(ev("NULL + 1"), Value::Null);
        assert_eq!(ev("NULL + NULL * exp(NULL)"), Value::Null);
        assert_eq!(ev("-9223372036854775808"), Value::Int(i64::MIN));
        assert_eq!(ev("null is null and not (1 is null)"), Value::Bool(true));
        assert_eq!(ev("case when 0 < 1 then 32 else 0 end"), Value::Int(32));
        assert_eq!(ev("case when false then 1 end"), Value::Null);
        assert_eq!(ev("int(7.3)"), Value::Int(7));
        assert_eq!(ev("3 % -1"), Value::Int(0));
        let f = [("f", Value::Text("of".into()))];
        assert_eq!(eval_with("NOT :f", &f).unwrap(), Value::Bool(true));
        assert_eq!(fails("TRUE + 2"), "cannot coerce boolean to int");
        assert_eq!(fails("ln(TRUE)"), "cannot coerce boolean to double");
        assert_eq!(fails("random(FALSE, TRUE)"), "cannot coerce boolean to int");
        assert_eq!(fails("NOT 0.0"), "cannot coerce double to boolean");
        assert!(fails("(1<<62) + (1<<62)").contains("int add out"));
        assert!(fails("int(1E32)").contains("double to int overflow for 100"));
        let m = [("m", Value::Text("-9223372036854775808".into()))];
        assert!(eval_with(":m / -1", &m)
            .unwrap_err()
            .0
            .contains("bigint div out of range"));
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
        assert!(eval_with("random_zipfian(1, 5, 1)", &[]).is_err());
        assert!(eval_with("permute(0, 0)", &[]).is_err());
        assert!(eval_with(":missing + 1", &[])
            .unwrap_err()
            .0
            .contains("missing"));
        assert!(eval_with("9223372036854775807 + 1", &[]).is_err());
    }
}
