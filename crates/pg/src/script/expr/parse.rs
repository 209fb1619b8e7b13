//! The parser: tokens into an [`Expr`] tree by recursive descent, one
//! method a precedence level (loosest first: `or`, `and`, `not`,
//! comparisons, bitwise, additive, multiplicative, unary, primary).

use super::lex::{tokenize, Tok};
use super::{Expr, Func, Op, Value};
use crate::script::vars::Vars;

struct Parser<'a> {
    toks: Vec<Tok>,
    pos: usize,
    vars: &'a mut Vars,
}

/// Parses `src` (the text after `\set name`), interning variables in `vars`.
pub(crate) fn parse(src: &str, vars: &mut Vars) -> Result<Expr, String> {
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
}
