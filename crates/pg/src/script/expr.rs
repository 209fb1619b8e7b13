//! `\set` expressions: pgbench's expression language (pgbench documentation,
//! "Built-in Operators" and "Built-in Functions"), parsed once into a tree and
//! evaluated per transaction without allocating.
//!
//! Supported: integer and double constants, `true`/`false`/`null`, `:var`,
//! `+ - * / %`, unary `- + ~`, `& | # << >>`, comparisons, `and or not`,
//! parentheses, and the functions `abs`, `double`, `int`, `exp`, `ln`,
//! `sqrt`, `pow`/`power`, `pi`, `greatest`, `least`, `mod`, `random`,
//! `random_exponential`, `random_gaussian`.

use std::fmt;
use std::sync::Arc;

use super::random::{Rng, MIN_GAUSSIAN_PARAM};
use super::vars::{VarId, Vars};

/// A variable's value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Func {
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
    fn by_name(name: &str) -> Option<(Func, std::ops::RangeInclusive<usize>)> {
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

#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Const(Value),
    Var(VarId),
    Neg(Box<Expr>),
    BitNot(Box<Expr>),
    Not(Box<Expr>),
    Bin(Op, Box<Expr>, Box<Expr>),
    Call(Func, Vec<Expr>),
}

// ---------------------------------------------------------------- parsing

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Int(i64),
    Double(f64),
    Ident(String),
    Var(String),
    Sym(&'static str),
}

fn tokenize(src: &str) -> Result<Vec<Tok>, String> {
    const SYMS: [&str; 20] = [
        "<<", ">>", "<=", ">=", "<>", "!=", "+", "-", "*", "/", "%", "(", ")", ",", "&", "|", "#",
        "~", "<", ">",
    ];
    let b = src.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            let start = i;
            let mut double = false;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
                double |= b[i] == b'.';
                i += 1;
            }
            if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
                double = true;
                i += 1;
                if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
                    i += 1;
                }
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            let text = &src[start..i];
            out.push(if double {
                Tok::Double(
                    text.parse()
                        .map_err(|_| format!("invalid number \"{text}\""))?,
                )
            } else {
                Tok::Int(
                    text.parse()
                        .map_err(|_| format!("integer out of range \"{text}\""))?,
                )
            });
        } else if c == b':' {
            let start = i + 1;
            i = start;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] >= 0x80) {
                i += 1;
            }
            if i == start {
                return Err("expected a variable name after \":\"".into());
            }
            out.push(Tok::Var(src[start..i].to_string()));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Ident(src[start..i].to_ascii_lowercase()));
        } else if c == b'=' {
            out.push(Tok::Sym("="));
            i += 1;
        } else if let Some(s) = SYMS.iter().find(|s| src[i..].starts_with(**s)) {
            out.push(Tok::Sym(s));
            i += s.len();
        } else {
            return Err(format!(
                "unexpected character \"{}\"",
                &src[i..].chars().next().unwrap_or('?')
            ));
        }
    }
    Ok(out)
}

struct Parser<'a> {
    toks: Vec<Tok>,
    pos: usize,
    vars: &'a mut Vars,
}

/// Parses `src` (the text after `\set name`), interning variables in `vars`.
pub fn parse(src: &str, vars: &mut Vars) -> Result<Expr, String> {
    let toks = tokenize(src)?;
    if toks.is_empty() {
        return Err("missing expression".into());
    }
    let mut p = Parser { toks, pos: 0, vars };
    let e = p.or()?;
    if p.pos < p.toks.len() {
        return Err(format!("unexpected {} after the expression", p.describe()));
    }
    Ok(e)
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }
    fn describe(&self) -> String {
        match self.peek() {
            None => "end of expression".into(),
            Some(Tok::Int(i)) => format!("\"{i}\""),
            Some(Tok::Double(d)) => format!("\"{d}\""),
            Some(Tok::Ident(s)) => format!("\"{s}\""),
            Some(Tok::Var(s)) => format!("\":{s}\""),
            Some(Tok::Sym(s)) => format!("\"{s}\""),
        }
    }
    fn eat_sym(&mut self, s: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Sym(x)) if *x == s) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn eat_word(&mut self, w: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Ident(x)) if x == w) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn bin(op: Op, l: Expr, r: Expr) -> Expr {
        Expr::Bin(op, Box::new(l), Box::new(r))
    }
    fn or(&mut self) -> Result<Expr, String> {
        let mut l = self.and()?;
        while self.eat_word("or") {
            l = Self::bin(Op::Or, l, self.and()?);
        }
        Ok(l)
    }
    fn and(&mut self) -> Result<Expr, String> {
        let mut l = self.not()?;
        while self.eat_word("and") {
            l = Self::bin(Op::And, l, self.not()?);
        }
        Ok(l)
    }
    fn not(&mut self) -> Result<Expr, String> {
        if self.eat_word("not") {
            return Ok(Expr::Not(Box::new(self.not()?)));
        }
        self.comparison()
    }
    fn comparison(&mut self) -> Result<Expr, String> {
        let l = self.bitwise()?;
        let op = match self.peek() {
            Some(Tok::Sym("=")) => Op::Eq,
            Some(Tok::Sym("<>")) | Some(Tok::Sym("!=")) => Op::Ne,
            Some(Tok::Sym("<")) => Op::Lt,
            Some(Tok::Sym("<=")) => Op::Le,
            Some(Tok::Sym(">")) => Op::Gt,
            Some(Tok::Sym(">=")) => Op::Ge,
            _ => return Ok(l),
        };
        self.pos += 1;
        Ok(Self::bin(op, l, self.bitwise()?))
    }
    fn bitwise(&mut self) -> Result<Expr, String> {
        let mut l = self.additive()?;
        loop {
            let op = match self.peek() {
                Some(Tok::Sym("&")) => Op::BitAnd,
                Some(Tok::Sym("|")) => Op::BitOr,
                Some(Tok::Sym("#")) => Op::BitXor,
                Some(Tok::Sym("<<")) => Op::Shl,
                Some(Tok::Sym(">>")) => Op::Shr,
                _ => return Ok(l),
            };
            self.pos += 1;
            l = Self::bin(op, l, self.additive()?);
        }
    }
    fn additive(&mut self) -> Result<Expr, String> {
        let mut l = self.multiplicative()?;
        loop {
            let op = if self.eat_sym("+") {
                Op::Add
            } else if self.eat_sym("-") {
                Op::Sub
            } else {
                return Ok(l);
            };
            l = Self::bin(op, l, self.multiplicative()?);
        }
    }
    fn multiplicative(&mut self) -> Result<Expr, String> {
        let mut l = self.unary()?;
        loop {
            let op = if self.eat_sym("*") {
                Op::Mul
            } else if self.eat_sym("/") {
                Op::Div
            } else if self.eat_sym("%") {
                Op::Mod
            } else {
                return Ok(l);
            };
            l = Self::bin(op, l, self.unary()?);
        }
    }
    fn unary(&mut self) -> Result<Expr, String> {
        if self.eat_sym("-") {
            // Fold negative constants so `-9223372036854775808`-style edge
            // cases and plain `-5` stay constants.
            return Ok(match self.unary()? {
                Expr::Const(Value::Int(i)) => Expr::Const(Value::Int(i.wrapping_neg())),
                Expr::Const(Value::Double(d)) => Expr::Const(Value::Double(-d)),
                e => Expr::Neg(Box::new(e)),
            });
        }
        if self.eat_sym("+") {
            return self.unary();
        }
        if self.eat_sym("~") {
            return Ok(Expr::BitNot(Box::new(self.unary()?)));
        }
        self.primary()
    }
    fn primary(&mut self) -> Result<Expr, String> {
        let tok = self.peek().cloned().ok_or("unexpected end of expression")?;
        self.pos += 1;
        match tok {
            Tok::Int(i) => Ok(Expr::Const(Value::Int(i))),
            Tok::Double(d) => Ok(Expr::Const(Value::Double(d))),
            Tok::Var(name) => Ok(Expr::Var(self.vars.intern(&name))),
            Tok::Sym("(") => {
                let e = self.or()?;
                if !self.eat_sym(")") {
                    return Err(format!("expected \")\", found {}", self.describe()));
                }
                Ok(e)
            }
            Tok::Ident(w) if w == "true" => Ok(Expr::Const(Value::Bool(true))),
            Tok::Ident(w) if w == "false" => Ok(Expr::Const(Value::Bool(false))),
            Tok::Ident(w) if w == "null" => Ok(Expr::Const(Value::Null)),
            Tok::Ident(name) => {
                let (func, arity) = Func::by_name(&name)
                    .ok_or_else(|| format!("unexpected function name \"{name}\""))?;
                if !self.eat_sym("(") {
                    return Err(format!("expected \"(\" after function \"{name}\""));
                }
                let mut args = Vec::new();
                if !self.eat_sym(")") {
                    loop {
                        args.push(self.or()?);
                        if self.eat_sym(")") {
                            break;
                        }
                        if !self.eat_sym(",") {
                            return Err(format!(
                                "expected \",\" or \")\", found {}",
                                self.describe()
                            ));
                        }
                    }
                }
                if !arity.contains(&args.len()) {
                    return Err(format!("wrong number of arguments to function \"{name}\""));
                }
                Ok(Expr::Call(func, args))
            }
            Tok::Sym(s) => Err(format!("syntax error at \"{s}\"")),
        }
    }
}

// ---------------------------------------------------------------- evaluation

/// A run-time failure of an expression (aborts the client, as in pgbench).
#[derive(Debug, Clone, PartialEq)]
pub struct EvalError(pub String);

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn err<T>(msg: impl Into<String>) -> Result<T, EvalError> {
    Err(EvalError(msg.into()))
}

fn as_int(v: &Value) -> Result<i64, EvalError> {
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

fn as_double(v: &Value) -> Result<f64, EvalError> {
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

fn as_bool(v: &Value) -> Result<bool, EvalError> {
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
fn is_double(v: &Value) -> bool {
    match v {
        Value::Double(_) => true,
        Value::Text(s) => s.contains(['.', 'e', 'E']),
        _ => false,
    }
}

impl Expr {
    pub fn eval(
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

fn binary(op: Op, a: &Value, b: &Value) -> Result<Value, EvalError> {
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

fn call(
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

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn syntax_errors_say_what_is_wrong() {
        let mut v = Vars::default();
        assert!(parse("1 +", &mut v)
            .unwrap_err()
            .contains("end of expression"));
        assert!(parse("foo(1)", &mut v).unwrap_err().contains("foo"));
        assert!(parse("random(1)", &mut v)
            .unwrap_err()
            .contains("number of arguments"));
        assert!(parse("(1", &mut v).is_err());
        assert!(parse("1 2", &mut v).is_err());
        assert!(parse("", &mut v).is_err());
        assert!(parse("1 $ 2", &mut v).is_err());
    }
}
