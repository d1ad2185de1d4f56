//! Computations written inline in an instruction's attribute, `to_apply={ ... }`, as XLA's
//! parser takes them (`ParseHloComputation`: a `{` where a computation name would be opens an
//! instruction list). Each becomes a computation of the module, named after its caller and
//! the attribute (`call-start.0.to_apply`), placed before the computation that holds the
//! caller; the attribute's value becomes `%` and that name. Cost: linear in the text, like
//! the rest of the parser.

use std::collections::{BTreeMap, BTreeSet};

use super::computations::{name_nested, Body};
use super::{PResult, Parser};
use crate::hlo::ast::{Computation, Pos};

/// Attributes whose value names one computation, or a list of them, and that XLA's parser
/// also takes written inline (its `kHloComputation` and `kBracedHloComputationList`
/// attributes).
const COMPUTATION_ATTRIBUTES: [&str; 8] = [
    "to_apply",
    "calls",
    "body",
    "condition",
    "true_computation",
    "false_computation",
    "branch_computations",
    "called_computations",
];

/// Inline computations nested in one another deeper than this are an error (XLA's parser
/// bounds its recursion too).
const MAX_INLINE_DEPTH: usize = 32;

/// A computation written inline, parsed, with whether each instruction's shape is left to
/// infer.
pub(super) struct Inline {
    pub(super) computation: Computation,
    pub(super) pending: Vec<bool>,
}

/// The inline computations of a module: those parsed and not yet placed in the module, the
/// names given so far (with where each was written), the names of the computations written
/// out so far, and how deep the current one is nested.
#[derive(Default)]
pub(super) struct InlineState {
    pub(super) parsed: Vec<Inline>,
    pub(super) names: BTreeMap<String, Pos>,
    pub(super) taken: BTreeSet<String>,
    depth: usize,
}

impl<'a> Parser<'a> {
    /// If attribute `attr` of instruction `owner` names computations and its value at the
    /// cursor holds one written inline: parses each one written inline (into
    /// `self.inline.parsed`) and returns the value with names in their place (`%name`, or
    /// `{%a, %b}` for a list). `None`, with the cursor unmoved, for any other value.
    pub(super) fn inline_computations(
        &mut self,
        owner: &str,
        attr: &str,
    ) -> PResult<Option<String>> {
        if !COMPUTATION_ATTRIBUTES.contains(&attr) || self.peek() != Some(b'{') {
            return Ok(None);
        }
        let open = self.at;
        if self.body_at(open + 1) {
            let name = self.inline_computation(owner, attr)?;
            return Ok(Some(format!("%{name}")));
        }
        // A list: `{%a, { ... }}`.
        self.at = open + 1;
        let mut items = Vec::new();
        let mut any_inline = false;
        loop {
            self.skip_ws()?;
            match self.peek() {
                Some(b'}') if items.is_empty() => break,
                Some(b'{') if self.body_at(self.at + 1) => {
                    let k = items.len();
                    let name = self.inline_computation(owner, &format!("{attr}.{k}"))?;
                    items.push(format!("%{name}"));
                    any_inline = true;
                }
                Some(b'%') | Some(b'A'..=b'Z' | b'a'..=b'z' | b'_') => {
                    let name = self.name("a computation name")?;
                    items.push(format!("%{name}"));
                }
                _ => break,
            }
            self.skip_ws()?;
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return Ok(Some(format!("{{{}}}", items.join(", "))));
                }
                _ => break,
            }
        }
        if any_inline {
            return Err(self.expected(self.at, "`,` or `}` in a list of computations"));
        }
        self.at = open;
        Ok(None)
    }

    /// Whether an instruction list starts at `off` (after whitespace and comments): `ROOT`,
    /// or a name followed by `=`.
    fn body_at(&mut self, off: usize) -> bool {
        let save = self.at;
        self.at = off;
        let found = self.skip_ws().is_ok()
            && (self.word_at(self.at) == "ROOT"
                || (self.name("a name").is_ok()
                    && self.skip_ws().is_ok()
                    && self.peek() == Some(b'=')));
        self.at = save;
        found
    }

    /// The computation written inline at the cursor (`{`), through its `}`; returns the name
    /// it is given: `owner.attr`, with `.1`, `.2`, ... when a computation before it has that
    /// name.
    fn inline_computation(&mut self, owner: &str, attr: &str) -> PResult<String> {
        let open = self.at;
        let pos = self.pos(open);
        if self.inline.depth >= MAX_INLINE_DEPTH {
            return Err(self.error(
                open,
                format!("computations written inline nested deeper than {MAX_INLINE_DEPTH}"),
            ));
        }
        let base = format!("{owner}.{attr}");
        let mut name = base.clone();
        let mut k = 1;
        while self.inline.taken.contains(&name) || self.inline.names.contains_key(&name) {
            name = format!("{base}.{k}");
            k += 1;
        }
        self.inline.names.insert(name.clone(), pos);
        // The caller's state while its attributes are parsed.
        let hoisted = std::mem::take(&mut self.hoisted);
        let nested = std::mem::replace(&mut self.nested, 0);
        let multiline = self.multiline.take();
        self.at = open + 1;
        self.inline.depth += 1;
        let body = self.body(&name, pos);
        self.inline.depth -= 1;
        let inner_nested = std::mem::replace(&mut self.nested, nested);
        self.hoisted = hoisted;
        self.multiline = multiline;
        let Body {
            mut instructions,
            pending,
            names,
            root,
        } = body?;
        if inner_nested > 0 {
            name_nested(&mut instructions, &names);
        }
        if instructions.is_empty() {
            return Err(self.error(
                open,
                format!("the computation written inline here (`%{name}`) has no instructions"),
            ));
        }
        let root = root.unwrap_or(instructions.len() - 1);
        self.inline.parsed.push(Inline {
            computation: Computation {
                name: name.clone(),
                is_entry: false,
                instructions,
                root,
                pos,
                signature: String::new(),
                attributes: Vec::new(),
            },
            pending,
        });
        Ok(name)
    }
}
