//! The parser: tokens into an [`Expr`] tree by recursive descent, one
//! method a precedence level (loosest first: `or`, `and`, `not`,
//! comparisons, bitwise, additive, multiplicative, unary, primary).

use super::lex::{tokenize, Tok};
use super::{Expr, Func, Op, Value};
use crate::script::vars::Vars;

/// Most tokens in one expression. The tree is as deep as its tokens at
/// worst (`1 + 1 + ...`), and evaluating and dropping it recurse that
/// deep, on a worker thread's stack: a bound keeps that far from its end.
/// pgbench's expressions are a few dozen tokens.
const MAX_TOKENS: usize = 4096;

/// Deepest nesting of parentheses, function calls and unary operators
/// (each level is several frames of this recursive-descent parser).
const MAX_NESTING: usize = 256;

struct Parser<'a> {
    toks: Vec<Tok>,
    pos: usize,
    vars: &'a mut Vars,
    /// Current nesting, up to [`MAX_NESTING`].
    depth: usize,
}

/// Parses `src` (the text after `\set name`), interning variables in `vars`.
pub(crate) fn parse(src: &str, vars: &mut Vars) -> Result<Expr, String> {
    let toks = tokenize(src)?;
    if toks.is_empty() {
        return Err("missing expression".into());
    }
    if toks.len() > MAX_TOKENS {
        return Err(format!(
            "expression too long ({} tokens; at most {MAX_TOKENS})",
            toks.len()
        ));
    }
    let mut p = Parser {
        toks,
        pos: 0,
        vars,
        depth: 0,
    };
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
    /// Runs `f` one nesting level deeper, refusing past [`MAX_NESTING`].
    fn nested(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<Expr, String>,
    ) -> Result<Expr, String> {
        if self.depth >= MAX_NESTING {
            return Err(format!(
                "expression nested too deeply (at most {MAX_NESTING} levels)"
            ));
        }
        self.depth += 1;
        let e = f(self);
        self.depth -= 1;
        e
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
            return Ok(Expr::Not(Box::new(self.nested(Self::not)?)));
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
            return Ok(match self.nested(Self::unary)? {
                Expr::Const(Value::Int(i)) => Expr::Const(Value::Int(i.wrapping_neg())),
                Expr::Const(Value::Double(d)) => Expr::Const(Value::Double(-d)),
                e => Expr::Neg(Box::new(e)),
            });
        }
        if self.eat_sym("+") {
            return self.nested(Self::unary);
        }
        if self.eat_sym("~") {
            return Ok(Expr::BitNot(Box::new(self.nested(Self::unary)?)));
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
                let e = self.nested(Self::or)?;
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
                        args.push(self.nested(Self::or)?);
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

#[cfg(test)]
mod tests {
    use super::*;

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

    /// Regression: the recursive-descent parser had no depth limit, so a
    /// `\set` of 2,000 `(` (20,000 `-`, `~` or `not`) overflowed a 2 MiB
    /// stack and aborted tare; a `1 + 1 + ...` chain of 100,000 terms
    /// parsed, then did the same when its tree was evaluated. Both are
    /// syntax errors now, and what is accepted evaluates on a thread
    /// with the default 2 MiB stack.
    #[test]
    fn deep_nesting_and_long_chains_are_errors_not_a_stack_overflow() {
        let mut v = Vars::default();
        let n = 2000;
        let parens = format!("{}1{}", "(".repeat(n), ")".repeat(n));
        let e = parse(&parens, &mut v).unwrap_err();
        assert!(e.contains("nested too deeply"), "{e}");
        for prefix in ["-", "~", "+", "not ", "abs("] {
            let e = parse(&format!("{}1", prefix.repeat(n)), &mut v).unwrap_err();
            assert!(e.contains("nested too deeply"), "{prefix}: {e}");
        }
        let chain = vec!["1"; 100_000].join(" + ");
        let e = parse(&chain, &mut v).unwrap_err();
        assert!(e.contains("too long"), "{e}");

        // The limits themselves, on a spawned thread's default stack.
        std::thread::spawn(|| {
            let mut v = Vars::default();
            let deep = MAX_NESTING - 1;
            let e = parse(
                &format!("{}1{}", "(".repeat(deep), ")".repeat(deep)),
                &mut v,
            );
            assert!(e.is_ok());
            let long = vec!["1"; MAX_TOKENS / 2].join(" + ");
            let e = parse(&long, &mut v).unwrap();
            let mut rng = crate::script::random::Rng::new(1);
            let total = e.eval(&[], &v, &mut rng).unwrap();
            assert_eq!(total, Value::Int((MAX_TOKENS / 2) as i64));
        })
        .join()
        .unwrap();
    }
}
