//! `\set` expressions: pgbench's expression language (pgbench documentation,
//! "Built-in Operators" and "Built-in Functions"), parsed once into a tree and
//! evaluated per transaction without allocating.
//!
//! Supported: integer and double constants, `true`/`false`/`null`, `:var`,
//! `+ - * / %`, unary `- + ~`, `& | # << >>`, comparisons, `and or not`,
//! `is [not] null|true|false`, `isnull`, `notnull`, `case when`,
//! parentheses, and the functions of pgbench 15 (`functions.rs`).
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

pub(crate) use eval::Env;
pub(crate) use functions::Func;
pub(crate) use parse::{parse, SyntaxError};
pub(crate) use value::{truth, Value};

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
    /// `e IS NULL|TRUE|FALSE`.
    Is(Box<Expr>, Value),
    /// `CASE WHEN c THEN e ... [ELSE e] END`.
    Case(Vec<(Expr, Expr)>, Option<Box<Expr>>),
}
