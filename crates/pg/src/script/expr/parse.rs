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
    toks: Vec<(Tok, usize)>,
    pos: usize,
    /// Length of the source: the offset of "end of expression".
    len: usize,
    vars: &'a mut Vars,
    /// Current nesting, up to [`MAX_NESTING`].
    depth: usize,
}

/// A syntax error: pgbench's message and the byte offset it points at.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SyntaxError {
    pub message: String,
    pub at: usize,
}

type Parsed = Result<Expr, SyntaxError>;

/// Parses `src` (the text after `\set name`), interning variables in `vars`.
pub(crate) fn parse(src: &str, vars: &mut Vars) -> Parsed {
    let toks = tokenize(src).map_err(|(message, at)| SyntaxError { message, at })?;
    let syntax = |at| SyntaxError {
        message: "syntax error".into(),
        at,
    };
    if toks.is_empty() {
        return Err(syntax(src.len()));
    }
    if toks.len() > MAX_TOKENS {
        return Err(SyntaxError {
            message: format!(
                "expression too long ({} tokens; at most {MAX_TOKENS})",
                toks.len()
            ),
            at: 0,
        });
    }
    let mut p = Parser {
        toks,
        pos: 0,
        len: src.len(),
        vars,
        depth: 0,
    };
    let e = p.or()?;
    if p.pos < p.toks.len() {
        return Err(syntax(p.here()));
    }
    Ok(e)
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|(t, _)| t)
    }
    /// The offset of the next token (or the end).
    fn here(&self) -> usize {
        self.toks.get(self.pos).map_or(self.len, |(_, at)| *at)
    }
    fn fail<T>(&self, message: &str) -> Result<T, SyntaxError> {
        Err(SyntaxError {
            message: message.into(),
            at: self.here(),
        })
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
    fn expect_word(&mut self, w: &str) -> Result<(), SyntaxError> {
        if self.eat_word(w) {
            Ok(())
        } else {
            self.fail("syntax error")
        }
    }
    /// Runs `f` one nesting level deeper, refusing past [`MAX_NESTING`].
    fn nested(&mut self, f: impl FnOnce(&mut Self) -> Parsed) -> Parsed {
        if self.depth >= MAX_NESTING {
            return self.fail(&format!(
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
    fn or(&mut self) -> Parsed {
        let mut l = self.and()?;
        while self.eat_word("or") {
            l = Self::bin(Op::Or, l, self.and()?);
        }
        Ok(l)
    }
    fn and(&mut self) -> Parsed {
        let mut l = self.not()?;
        while self.eat_word("and") {
            l = Self::bin(Op::And, l, self.not()?);
        }
        Ok(l)
    }
    fn not(&mut self) -> Parsed {
        if self.eat_word("not") {
            return Ok(Expr::Not(Box::new(self.nested(Self::not)?)));
        }
        self.is()
    }
    /// `IS [NOT] NULL|TRUE|FALSE`, `ISNULL`, `NOTNULL` (pgbench's `PGBENCH_IS`).
    fn is(&mut self) -> Parsed {
        let l = self.comparison()?;
        let is = |e: Expr, v: Value, negate: bool| {
            let t = Expr::Is(Box::new(e), v);
            if negate {
                Expr::Not(Box::new(t))
            } else {
                t
            }
        };
        if self.eat_word("isnull") {
            return Ok(is(l, Value::Null, false));
        }
        if self.eat_word("notnull") {
            return Ok(is(l, Value::Null, true));
        }
        if !self.eat_word("is") {
            return Ok(l);
        }
        let negate = self.eat_word("not");
        let v = if self.eat_word("null") {
            Value::Null
        } else if self.eat_word("true") {
            Value::Bool(true)
        } else if self.eat_word("false") {
            Value::Bool(false)
        } else {
            return self.fail("syntax error");
        };
        Ok(is(l, v, negate))
    }
    fn comparison(&mut self) -> Parsed {
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
    fn bitwise(&mut self) -> Parsed {
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
    fn additive(&mut self) -> Parsed {
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
    fn multiplicative(&mut self) -> Parsed {
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
    fn unary(&mut self) -> Parsed {
        if self.eat_sym("-") {
            if matches!(self.peek(), Some(Tok::MaxPlusOne)) {
                self.pos += 1;
                return Ok(Expr::Const(Value::Int(i64::MIN)));
            }
            // Fold constants; `0 - x` otherwise, as pgbench parses it.
            return Ok(match self.nested(Self::unary)? {
                Expr::Const(Value::Int(i)) if i != i64::MIN => Expr::Const(Value::Int(-i)),
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
    fn case(&mut self) -> Parsed {
        let mut arms = Vec::new();
        while self.eat_word("when") {
            let when = self.nested(Self::or)?;
            self.expect_word("then")?;
            arms.push((when, self.nested(Self::or)?));
        }
        if arms.is_empty() {
            return self.fail("syntax error");
        }
        let otherwise = if self.eat_word("else") {
            Some(Box::new(self.nested(Self::or)?))
        } else {
            None
        };
        self.expect_word("end")?;
        Ok(Expr::Case(arms, otherwise))
    }
    fn primary(&mut self) -> Parsed {
        let Some(tok) = self.peek().cloned() else {
            return self.fail("syntax error");
        };
        let at = self.here();
        self.pos += 1;
        match tok {
            Tok::Int(i) => Ok(Expr::Const(Value::Int(i))),
            Tok::Double(d) => Ok(Expr::Const(Value::Double(d))),
            Tok::MaxPlusOne => {
                self.pos -= 1;
                self.fail("bigint constant overflow")
            }
            Tok::Var(name) => Ok(Expr::Var(self.vars.intern(&name))),
            Tok::Sym("(") => {
                let e = self.nested(Self::or)?;
                if !self.eat_sym(")") {
                    return self.fail("syntax error");
                }
                Ok(e)
            }
            Tok::Ident(w) if w == "true" => Ok(Expr::Const(Value::Bool(true))),
            Tok::Ident(w) if w == "false" => Ok(Expr::Const(Value::Bool(false))),
            Tok::Ident(w) if w == "null" => Ok(Expr::Const(Value::Null)),
            Tok::Ident(w) if w == "case" => self.nested(Self::case),
            Tok::Ident(name) => self.call(name, at),
            Tok::Sym(_) => {
                self.pos -= 1;
                self.fail("syntax error")
            }
        }
    }
    fn call(&mut self, name: String, at: usize) -> Parsed {
        if !self.eat_sym("(") {
            return self.fail("syntax error");
        }
        let Some((func, arity)) = Func::by_name(&name) else {
            return Err(SyntaxError {
                message: "unexpected function name".into(),
                at,
            });
        };
        let mut args = Vec::new();
        if !self.eat_sym(")") {
            loop {
                args.push(self.nested(Self::or)?);
                if self.eat_sym(")") {
                    break;
                }
                if !self.eat_sym(",") {
                    return self.fail("syntax error");
                }
            }
        }
        if let Some(msg) = arity.check(args.len()) {
            return Err(SyntaxError {
                message: format!("{msg} ({name})"),
                at,
            });
        }
        // pgbench supplies `:default_seed` to the hash functions and
        // `permute` when the seed is left out.
        let seeded = match func {
            Func::HashFnv1a | Func::HashMurmur2 => 2,
            Func::Permute => 3,
            _ => 0,
        };
        if args.len() + 1 == seeded {
            args.push(Expr::Var(self.vars.intern("default_seed")));
        }
        Ok(Expr::Call(func, args))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_errors_say_what_is_wrong() {
        let mut v = Vars::default();
        assert_eq!(parse("1 +", &mut v).unwrap_err().at, 3);
        let e = parse("foo(1)", &mut v).unwrap_err();
        assert_eq!(e.message, "unexpected function name");
        let e = parse("random(1)", &mut v).unwrap_err();
        assert_eq!(e.message, "unexpected number of arguments (random)");
        let e = parse("greatest()", &mut v).unwrap_err();
        assert_eq!(e.message, "at least one argument expected (greatest)");
        for (src, want) in [
            ("1.0E309", "double constant overflow"),
            (".1E310", "double constant overflow"),
            ("100000000000000000000", "bigint constant overflow"),
            ("9223372036854775808", "bigint constant overflow"),
            ("CASE TRUE THEN 1 ELSE 0 END", "syntax error"),
        ] {
            assert_eq!(parse(src, &mut v).unwrap_err().message, want, "{src}");
        }
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
        assert!(e.message.contains("nested too deeply"), "{e:?}");
        for prefix in ["-", "~", "+", "not ", "abs("] {
            let e = parse(&format!("{}1", prefix.repeat(n)), &mut v).unwrap_err();
            assert!(e.message.contains("nested too deeply"), "{prefix}: {e:?}");
        }
        let chain = vec!["1"; 100_000].join(" + ");
        let e = parse(&chain, &mut v).unwrap_err();
        assert!(e.message.contains("too long"), "{e:?}");

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
            let mut env = crate::script::expr::Env {
                vars: &[],
                names: &v,
                rng: &mut rng,
                at: (0, 1),
            };
            let total = e.eval(&mut env).unwrap();
            assert_eq!(total, Value::Int((MAX_TOKENS / 2) as i64));
        })
        .join()
        .unwrap();
    }
}
