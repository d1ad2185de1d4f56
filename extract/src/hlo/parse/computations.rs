//! Computations and the module: headers with parameters, instruction bodies, the `ENTRY` and
//! naming checks, and the stack-frame tables newer XLA versions print.

use std::collections::{BTreeMap, BTreeSet};

use super::infer::Earlier;
use super::inline::Inline;
use super::{is_ident_start, PResult, Parser, NESTED, TABLES};
use crate::hlo::ast::{Computation, Instruction, Module, Pos};
use crate::hlo::HloError;

/// A computation's body as parsed, before its shapes are inferred.
pub(super) struct Body<'a> {
    /// The instructions, nested ones hoisted before their users.
    pub(super) instructions: Vec<Instruction>,
    /// Whether each instruction's result shape is left to infer.
    pub(super) pending: Vec<bool>,
    /// Where each instruction name is defined.
    pub(super) names: BTreeMap<&'a str, Pos>,
    /// The `ROOT` instruction, when one is marked.
    pub(super) root: Option<usize>,
}

impl<'a> Parser<'a> {
    // ---------------------------------------------------------------- computations

    /// A computation, at its first token; returns it with its name and the name's offset.
    /// Result shapes the text leaves out are inferred, from the computations before it in the
    /// module (`computations`, indexed `by_name`) among others. The computations written
    /// inline in its attributes are added to `computations` first.
    pub(super) fn computation(
        &mut self,
        computations: &mut Vec<Computation>,
        by_name: &mut BTreeMap<String, usize>,
    ) -> PResult<(Computation, &'a str, usize)> {
        let start = self.at;
        let pos = self.pos(start);
        let (is_entry, name, name_at) = self.computation_name(start)?;
        self.inline.taken.insert(name.to_string());
        let signature_at = self.at;
        self.signature(name, name_at)?;
        let open = self.at;
        let signature = self.slice(signature_at, open).trim().to_string();
        self.at += 1;
        self.multiline = None;
        self.nested = 0;
        let Body {
            mut instructions,
            pending,
            names,
            root,
        } = self.body(name, pos)?;
        if self.nested > 0 {
            name_nested(&mut instructions, &names);
        }
        for Inline {
            mut computation,
            pending,
        } in std::mem::take(&mut self.inline.parsed)
        {
            let earlier = Earlier {
                computations,
                by_name,
            };
            let c = &mut computation;
            super::infer::infer_shapes(&mut c.instructions, &pending, &earlier, &mut self.budget)?;
            by_name.insert(computation.name.clone(), computations.len());
            computations.push(computation);
        }
        let earlier = Earlier {
            computations,
            by_name,
        };
        super::infer::infer_shapes(&mut instructions, &pending, &earlier, &mut self.budget)?;
        if instructions.is_empty() {
            return Err(self.error(open, format!("computation `%{name}` has no instructions")));
        }
        // `, execution_thread="..."` after the `}`.
        let attributes = self.attributes(None)?;
        let root = root.unwrap_or(instructions.len() - 1);
        let computation = Computation {
            name: name.to_string(),
            is_entry,
            instructions,
            root,
            pos,
            signature,
            attributes,
        };
        Ok((computation, name, name_at))
    }

    /// A computation's `ENTRY` keyword, if any, and its name and the name's offset; an
    /// instruction (`ROOT %x`) at `start` is out of any computation.
    fn computation_name(&mut self, start: usize) -> PResult<(bool, &'a str, usize)> {
        let mut is_entry = false;
        if self.word_at(start) == "ROOT" {
            self.at += 4;
            self.skip_ws()?;
            if matches!(self.peek(), Some(c) if c == b'%' || is_ident_start(c)) {
                let name_at = self.at;
                let name = self.name("an instruction name")?;
                return Err(self.error(
                    name_at,
                    format!(
                        "instruction `%{name}` outside any computation (did an extra `}}` \
                         close the computation early?)"
                    ),
                ));
            }
            self.at = start;
        }
        if self.word_at(start) == "ENTRY" {
            self.at += 5;
            self.skip_ws()?;
            is_entry = true;
        }
        let name_at = self.at;
        let name = self.name("a computation (`%name (params) -> shape {`) or `ENTRY`")?;
        Ok((is_entry, name, name_at))
    }

    /// The parameters and result shape after computation `name`'s name, up to the `{` that
    /// opens its body; an `=` there makes it an instruction out of any computation.
    fn signature(&mut self, name: &str, name_at: usize) -> PResult<()> {
        let mut after = self.at;
        self.skip_ws()?;
        if self.peek() == Some(b'(') {
            self.parameters()?;
            after = self.at;
            self.skip_ws()?;
            if !self.looking_at(b"->") {
                let what = format!("`->` after the parameters of computation `%{name}`");
                return Err(self.expected_after(after, &what));
            }
        }
        if self.looking_at(b"->") {
            self.at += 2;
            self.skip_ws()?;
            self.shape(0)?;
            after = self.at;
            self.skip_ws()?;
        }
        match self.peek() {
            Some(b'{') => Ok(()),
            Some(b'=') => Err(self.error(
                name_at,
                format!(
                    "instruction `%{name}` outside any computation (did an extra `}}` \
                     close the computation early?)"
                ),
            )),
            _ => {
                let what = format!("`{{` to open the body of computation `%{name}`");
                Err(self.expected_after(after, &what))
            }
        }
    }

    /// The instructions of computation `name`'s body, after its `{`, up to and past its `}`;
    /// names must be unique and one instruction at most the `ROOT`.
    pub(super) fn body(&mut self, name: &str, pos: Pos) -> PResult<Body<'a>> {
        let mut instructions: Vec<Instruction> = Vec::new();
        let mut pending: Vec<bool> = Vec::new();
        let mut names: BTreeMap<&'a str, Pos> = BTreeMap::new();
        let mut root: Option<usize> = None;
        loop {
            self.skip_ws()?;
            match self.peek() {
                Some(b'}') => {
                    self.at += 1;
                    break;
                }
                None => return Err(self.unclosed(name, pos)),
                Some(_) => {}
            }
            self.hoisted.clear();
            let (instruction, iname, iname_at, infer) = match self.instruction() {
                Ok(parsed) => parsed,
                Err(e) => return Err(self.with_hint(e)),
            };
            for (nested, infer) in self.hoisted.drain(..) {
                instructions.push(nested);
                pending.push(infer);
            }
            if let Some(first) = names.get(iname) {
                let message = format!(
                    "duplicate instruction `%{iname}` (first at line {})",
                    first.line
                );
                return Err(self.error(iname_at, message));
            }
            names.insert(iname, instruction.pos);
            if instruction.is_root {
                if let Some(r) = root {
                    let message = format!(
                        "two ROOT instructions in computation `%{name}` (line {} and line {})",
                        instructions[r].pos.line, instruction.pos.line
                    );
                    return Err(self.error(iname_at, message));
                }
                root = Some(instructions.len());
            }
            instructions.push(instruction);
            pending.push(infer);
        }
        Ok(Body {
            instructions,
            pending,
            names,
            root,
        })
    }

    /// The error for a computation that the end of input leaves open.
    pub(super) fn unclosed(&mut self, name: &str, pos: Pos) -> HloError {
        if let Some(open) = self.multiline {
            let opener = self.byte(open).map_or('?', char::from);
            return self.error(
                open,
                format!(
                    "unbalanced `{opener}`: this value runs on over several lines, and \
                     computation `%{name}` (line {}) is never closed",
                    pos.line
                ),
            );
        }
        let end = self.bytes.len();
        self.error(
            end,
            format!(
                "computation `%{name}` (line {}) is not closed: expected `}}`, found end of input",
                pos.line
            ),
        )
    }

    /// `e`, with a hint when an attribute value of the current computation spans lines (an
    /// unbalanced bracket there swallows the following lines).
    pub(super) fn with_hint(&mut self, e: HloError) -> HloError {
        let Some(open) = self.multiline else {
            return e;
        };
        let p = self.pos(open);
        match e {
            HloError::Syntax {
                line,
                column,
                message,
            } if line > p.line => HloError::Syntax {
                line,
                column,
                message: format!(
                    "{message} (after a value that spans lines from line {}, column {}: is a \
                     bracket unbalanced there?)",
                    p.line, p.column
                ),
            },
            other => other,
        }
    }

    /// A computation's parameter list `(p: f32[2], q: (s32[], pred[]))`, at its `(`; the
    /// names and shapes are checked, not kept.
    pub(super) fn parameters(&mut self) -> PResult<()> {
        self.at += 1;
        self.skip_ws()?;
        if self.peek() == Some(b')') {
            self.at += 1;
            return Ok(());
        }
        loop {
            self.skip_ws()?;
            let name = self.name("a parameter name")?;
            self.skip_ws()?;
            // XLA takes `(p f32[2])` as well as `(p: f32[2])`.
            if self.peek() == Some(b':') {
                self.at += 1;
                self.skip_ws()?;
            } else if !self.shape_at(self.at) {
                let what = format!("`:` after parameter `{name}`");
                return Err(self.expected(self.at, &what));
            }
            self.shape(0)?;
            self.skip_ws()?;
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b')') => {
                    self.at += 1;
                    return Ok(());
                }
                _ => return Err(self.expected(self.at, "`,` or `)` in a parameter list")),
            }
        }
    }

    /// Skips a stack-frame table (`FileNames` followed by lines `1 "file.py"`, `StackFrames`
    /// followed by `1 {file_location_id=1 parent_frame_id=0}`, ...) if one starts at the
    /// cursor; returns its source text if one did.
    pub(super) fn table(&mut self) -> PResult<Option<String>> {
        let word = self.word_at(self.at);
        if !TABLES.contains(&word) {
            return Ok(None);
        }
        let save = self.at;
        self.at += word.len();
        self.skip_ws()?;
        let next = self.word_at(self.at);
        if !(self.peek().is_none_or(|c| c.is_ascii_digit()) || TABLES.contains(&next)) {
            // A computation with that name.
            self.at = save;
            return Ok(None);
        }
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.uint("a table index")?;
            self.skip_inline()?;
            let from = self.at;
            let to = self.balanced(None)?;
            if self.slice(from, to).trim().is_empty() {
                return Err(self.expected(from, "a table entry after its index"));
            }
            self.at = to;
            self.skip_ws()?;
        }
        Ok(Some(self.slice(save, self.at).trim_end().to_string()))
    }

    // ---------------------------------------------------------------- the module

    /// The whole module.
    pub(super) fn module(mut self) -> PResult<Module> {
        self.skip_ws()?;
        if self.at >= self.bytes.len() {
            return Err(self.error(self.at, "empty input: expected `HloModule name`"));
        }
        if self.word_at(self.at) != "HloModule" {
            return Err(self.expected(self.at, "`HloModule` at the start of the module"));
        }
        self.at += "HloModule".len();
        self.skip_inline()?;
        let name = self.name("a module name after `HloModule`")?.to_string();
        // XLA's lexer reads `HloModule m:` as the name `m`.
        if self.peek() == Some(b':') {
            self.at += 1;
        }
        // Attributes, each after a comma: the list may go on over the next lines
        // (`HloModule m,` then `entry_computation_layout=...`), and may be followed by a
        // computation on the same line.
        let mut attributes = Vec::new();
        loop {
            self.skip_inline()?;
            if self.peek() != Some(b',') {
                break;
            }
            self.at += 1;
            attributes.push(self.attribute(false, None)?);
        }
        if !matches!(self.peek(), None | Some(b'\n' | b'\r'))
            && !self
                .word_at(self.at)
                .starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && self.peek() != Some(b'%')
        {
            return Err(self.expected(
                self.at,
                "`,` or the end of the line after the module header",
            ));
        }

        let mut computations: Vec<Computation> = Vec::new();
        let mut names: BTreeMap<&'a str, Pos> = BTreeMap::new();
        let mut entry: Option<usize> = None;
        let mut tables = Vec::new();
        let mut by_name: BTreeMap<String, usize> = BTreeMap::new();
        loop {
            self.skip_ws()?;
            if self.at >= self.bytes.len() {
                break;
            }
            if let Some(table) = self.table()? {
                tables.push(table);
                continue;
            }
            let start = self.at;
            if self.word_at(start) == "HloModule" {
                return Err(self.error(
                    start,
                    "a second `HloModule` header: a text holds one module",
                ));
            }
            let (computation, cname, cname_at) =
                self.computation(&mut computations, &mut by_name)?;
            if let Some(first) = names.get(cname) {
                let message = format!(
                    "duplicate computation `%{cname}` (first at line {})",
                    first.line
                );
                return Err(self.error(cname_at, message));
            }
            if let Some(inline) = self.inline.names.get(cname) {
                let message = format!(
                    "computation `%{cname}` has the name given to the computation written \
                     inline at line {}, column {}: rename it",
                    inline.line, inline.column
                );
                return Err(self.error(cname_at, message));
            }
            names.insert(cname, computation.pos);
            by_name.insert(cname.to_string(), computations.len());
            if computation.is_entry {
                if let Some(e) = entry {
                    let message = format!(
                        "two ENTRY computations (line {} and line {})",
                        computations[e].pos.line, computation.pos.line
                    );
                    return Err(self.error(start, message));
                }
                entry = Some(computations.len());
            }
            computations.push(computation);
        }
        // Without `ENTRY`, the last computation is the entry, as in XLA.
        let entry = match entry {
            Some(entry) => entry,
            None => {
                let Some(last) = computations.last_mut() else {
                    let end = self.bytes.len();
                    return Err(
                        self.error(end, "no computation: a module needs an `ENTRY` computation")
                    );
                };
                last.is_entry = true;
                computations.len() - 1
            }
        };
        Ok(Module {
            name,
            attributes,
            computations,
            entry,
            tables,
        })
    }
}

/// Gives the instructions nested in others' operands (provisional names starting with
/// [`NESTED`]) their names, `opcode.anon`, `opcode.anon.1`, ..., as XLA names them: unique
/// in the computation (`taken` holds the names the text gives), with every operand that
/// refers to them renamed too.
pub(super) fn name_nested(instructions: &mut [Instruction], taken: &BTreeMap<&str, Pos>) {
    let mut used: BTreeSet<String> = taken.keys().map(|k| k.to_string()).collect();
    let mut renamed: BTreeMap<String, String> = BTreeMap::new();
    for i in instructions.iter_mut() {
        if !i.name.starts_with(NESTED) {
            continue;
        }
        let base = format!("{}.anon", i.opcode);
        let mut name = base.clone();
        let mut k = 1;
        while used.contains(&name) {
            name = format!("{base}.{k}");
            k += 1;
        }
        used.insert(name.clone());
        renamed.insert(std::mem::replace(&mut i.name, name.clone()), name);
    }
    for i in instructions.iter_mut() {
        for o in &mut i.operands {
            if let Some(new) = renamed.get(o.as_str()) {
                o.clone_from(new);
            }
        }
    }
}
