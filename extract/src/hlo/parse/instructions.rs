//! Instructions: name, shape, opcode, operands (or raw literal text) and attributes.

use super::{is_ident_start, is_name_byte, PResult, Parser, LITERAL_OPCODES};
use crate::hlo::ast::{Attribute, Instruction};

impl<'a> Parser<'a> {
    // ---------------------------------------------------------------- attributes

    /// `name=value` after a `,` (skipping whitespace up to the end of the line only when
    /// `inline`).
    pub(super) fn attribute(&mut self, inline: bool) -> PResult<Attribute> {
        self.skip(!inline)?;
        let start = self.at;
        if !self.peek().is_some_and(is_ident_start) {
            return Err(self.expected(start, "an attribute name after `,`"));
        }
        self.at = self.run(start, is_name_byte);
        let name = self.slice(start, self.at);
        self.skip_inline()?;
        if self.peek() != Some(b'=') {
            let what = format!("`=` after attribute name `{name}`");
            return Err(self.expected(self.at, &what));
        }
        self.at += 1;
        self.skip_inline()?;
        let from = self.at;
        let to = match self.mesh_value_end()? {
            Some(end) => end,
            None => self.balanced(None)?,
        };
        let value = self.slice(from, to).trim_end();
        if value.is_empty() {
            let what = format!("a value for attribute `{name}`");
            return Err(self.expected(from, &what));
        }
        self.at = to;
        let pos = self.pos(from);
        Ok(Attribute {
            name: name.to_string(),
            value: value.to_string(),
            pos,
        })
    }

    /// Attributes `, name=value` after an instruction or a computation, up to the first
    /// token that is not a comma.
    pub(super) fn attributes(&mut self) -> PResult<Vec<Attribute>> {
        let mut attributes = Vec::new();
        loop {
            let save = self.at;
            self.skip_ws()?;
            if self.peek() != Some(b',') {
                self.at = save;
                return Ok(attributes);
            }
            self.at += 1;
            attributes.push(self.attribute(false)?);
        }
    }

    // ---------------------------------------------------------------- instructions

    /// An instruction, at its first token; returns it with its name.
    pub(super) fn instruction(&mut self) -> PResult<(Instruction, &'a str, usize)> {
        let start = self.at;
        let pos = self.pos(start);
        let mut is_root = false;
        if self.word_at(start) == "ROOT" {
            self.at += 4;
            self.skip_ws()?;
            if self.peek() == Some(b'=') {
                // An instruction called `ROOT`.
                self.at = start;
            } else {
                is_root = true;
            }
        }
        let name_at = self.at;
        let name = self.name("an instruction (`%name = shape opcode(operands)`) or `}`")?;
        let after = self.at;
        self.skip_ws()?;
        if self.peek() != Some(b'=') {
            let what = format!("`=` after instruction name `%{name}`");
            return Err(self.expected_after(after, &what));
        }
        self.at += 1;
        self.skip_ws()?;
        let shape_at = self.at;
        let (shape, _) = self.shape(0)?;
        let shape_text = self.slice(shape_at, self.at).trim_end().to_string();
        self.skip_ws()?;
        let op_start = self.at;
        if !self.peek().is_some_and(is_ident_start) {
            let what = format!("an opcode after the shape of `%{name}`");
            return Err(self.expected(op_start, &what));
        }
        self.at = self.run(op_start, is_name_byte);
        let opcode = self.slice(op_start, self.at);
        let after = self.at;
        self.skip_ws()?;
        if self.peek() != Some(b'(') {
            let what = format!("`(` after opcode `{opcode}`");
            return Err(self.expected_after(after, &what));
        }
        let open = self.at;
        self.at += 1;
        let (operands, literal) = if LITERAL_OPCODES.contains(&opcode) {
            let close = self.balanced(Some((b')', open)))?;
            let literal = self.slice(self.at, close).trim().to_string();
            self.at = close + 1;
            (Vec::new(), Some(literal))
        } else {
            (self.operands()?, None)
        };
        let attributes = self.attributes()?;
        let instruction = Instruction {
            name: name.to_string(),
            shape,
            shape_text,
            opcode: opcode.to_string(),
            operands,
            literal,
            attributes,
            is_root,
            pos,
        };
        Ok((instruction, name, name_at))
    }

    /// Operands `%a, f32[2]{0} %b, c)` after the `(`, through the `)`.
    pub(super) fn operands(&mut self) -> PResult<Vec<String>> {
        let mut operands = Vec::new();
        self.skip_ws()?;
        if self.peek() == Some(b')') {
            self.at += 1;
            return Ok(operands);
        }
        loop {
            self.skip_ws()?;
            if self.peek() == Some(b'(') || self.array_shape_at(self.at) {
                self.shape(0)?;
                self.skip_ws()?;
            }
            let name = self.name("an operand name")?;
            operands.push(name.to_string());
            let after = self.at;
            self.skip_ws()?;
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b')') => {
                    self.at += 1;
                    return Ok(operands);
                }
                _ => {
                    let what = format!("`,` or `)` after operand `%{name}`");
                    return Err(self.expected_after(after, &what));
                }
            }
        }
    }
}
