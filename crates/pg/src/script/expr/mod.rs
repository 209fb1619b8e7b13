//! `\set` expressions: pgbench's expression language (pgbench documentation,
//! "Built-in Operators" and "Built-in Functions"), parsed once into a tree and
//! evaluated per transaction without allocating.
//!
//! Supported: integer and double constants, `true`/`false`/`null`, `:var`,
//! `+ - * / %`, unary `- + ~`, `& | # << >>`, comparisons, `and or not`,
//! parentheses, and the functions `abs`, `double`, `int`, `exp`, `ln`,
//! `sqrt`, `pow`/`power`, `pi`, `greatest`, `least`, `mod`, `random`,
//! `random_exponential`, `random_gaussian`.
//!
//! - `lex`: the text into tokens.
//! - `parse`: tokens into an [`Expr`] tree, by recursive descent.
//! - `value`: a variable's [`Value`] and pgbench's coercions between kinds.
//! - `eval`: evaluating a tree: variables, operators, short-circuits.
//! - `functions`: the built-in functions: names, arities and evaluation.

mod eval;
mod functions;
mod lex;
mod parse;
mod value;

pub(crate) use functions::Func;
pub(crate) use parse::parse;
pub(crate) use value::Value;

use super::vars::VarId;

/// A binary operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
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

/// A parsed expression; a `Call`'s arity was checked when parsing.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Expr {
    Const(Value),
    Var(VarId),
    Neg(Box<Expr>),
    BitNot(Box<Expr>),
    Not(Box<Expr>),
    Bin(Op, Box<Expr>, Box<Expr>),
    Call(Func, Vec<Expr>),
}
