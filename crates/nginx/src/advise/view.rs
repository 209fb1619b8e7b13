//! The configuration as nginx sees it: one tree with every `include` replaced by
//! the statements of the files it names, comments dropped. Each node remembers
//! the file it came from, so advice can point at `file:line` and a
//! [`super::Anchor`] can find the statement again in the payload.

use crate::payload::{Payload, Statement};

use super::change::Anchor;

/// Blocks and includes nested deeper than this are left out (a file including
/// itself would otherwise never end; real configs nest fewer than 10 levels).
const MAX_DEPTH: usize = 64;

/// One directive with its file and (for blocks) its children.
#[derive(Debug)]
pub struct Node<'a> {
    pub file: &'a str,
    pub stmt: &'a Statement,
    pub children: Vec<Node<'a>>,
}

impl<'a> Node<'a> {
    pub fn name(&self) -> &'a str {
        &self.stmt.directive
    }

    pub fn args(&self) -> &'a [String] {
        &self.stmt.args
    }

    /// The first argument, or "".
    pub(crate) fn arg0(&self) -> &'a str {
        self.stmt.args.first().map(String::as_str).unwrap_or("")
    }

    pub(crate) fn is_block(&self) -> bool {
        self.stmt.block.is_some()
    }

    /// Where this statement is, to change it later.
    pub fn anchor(&self) -> Anchor {
        Anchor {
            file: self.file.to_string(),
            line: self.stmt.line,
            directive: self.stmt.directive.clone(),
            args: self.stmt.args.clone(),
        }
    }

    /// `file:line`, for people.
    pub fn location(&self) -> String {
        format!("{}:{}", self.file, self.stmt.line)
    }

    /// The first child directive with this name.
    pub fn child(&self, name: &str) -> Option<&Node<'a>> {
        find(&self.children, name)
    }

    /// All child directives with this name.
    pub(crate) fn children_named<'s>(
        &'s self,
        name: &'s str,
    ) -> impl Iterator<Item = &'s Node<'a>> + 's {
        self.children.iter().filter(move |n| n.name() == name)
    }
}

/// The first node with this name in a list.
pub fn find<'n, 'a>(nodes: &'n [Node<'a>], name: &str) -> Option<&'n Node<'a>> {
    nodes.iter().find(|n| n.name() == name)
}

/// The main context, includes resolved.
pub fn resolve(payload: &Payload) -> Vec<Node<'_>> {
    match payload.config.first() {
        Some(main) => expand(payload, &main.file, &main.parsed, 0),
        None => Vec::new(),
    }
}

fn expand<'a>(
    payload: &'a Payload,
    file: &'a str,
    stmts: &'a [Statement],
    depth: usize,
) -> Vec<Node<'a>> {
    let mut out = Vec::new();
    if depth > MAX_DEPTH {
        return out;
    }
    for stmt in stmts {
        if stmt.is_comment() {
            continue;
        }
        if let Some(includes) = &stmt.includes {
            for &i in includes {
                if let Some(config) = payload.config.get(i) {
                    out.extend(expand(payload, &config.file, &config.parsed, depth + 1));
                }
            }
            continue;
        }
        let children = match &stmt.block {
            Some(block) => expand(payload, file, block, depth + 1),
            None => Vec::new(),
        };
        out.push(Node {
            file,
            stmt,
            children,
        });
    }
    out
}

/// Every block reachable under `nodes` whose directive is `name`, depth first,
/// with the chain of blocks above it (outermost first, `nodes`' owner excluded).
pub(crate) fn walk_blocks<'n, 'a>(
    nodes: &'n [Node<'a>],
    name: &str,
) -> Vec<(Vec<&'n Node<'a>>, &'n Node<'a>)> {
    fn go<'n, 'a>(
        nodes: &'n [Node<'a>],
        name: &str,
        chain: &mut Vec<&'n Node<'a>>,
        out: &mut Vec<(Vec<&'n Node<'a>>, &'n Node<'a>)>,
    ) {
        for n in nodes.iter().filter(|n| n.is_block()) {
            if n.name() == name {
                out.push((chain.clone(), n));
            }
            chain.push(n);
            go(&n.children, name, chain, out);
            chain.pop();
        }
    }
    let mut out = Vec::new();
    go(nodes, name, &mut Vec::new(), &mut out);
    out
}

/// Every statement named `name` anywhere under `nodes`.
pub(crate) fn all_named<'n, 'a>(nodes: &'n [Node<'a>], name: &str) -> Vec<&'n Node<'a>> {
    let mut out = Vec::new();
    for n in nodes {
        if n.name() == name {
            out.push(n);
        }
        out.extend(all_named(&n.children, name));
    }
    out
}
