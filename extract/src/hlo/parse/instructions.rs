//! Instructions: name, shape, opcode, operands (or raw literal text) and attributes.

use super::infer::can_infer;
use super::{is_ident_start, is_name_byte, PResult, Parser, LITERAL_OPCODES, MAX_DEPTH, NESTED};
use crate::hlo::ast::{Attribute, Instruction, Pos, Shape};

impl<'a> Parser<'a> {
    // ---------------------------------------------------------------- attributes

    /// `name=value` after a `,` (skipping whitespace up to the end of the line only when
    /// `inline`); `owner` is the instruction it belongs to, whose called computations may be
    /// written inline in it.
    pub(super) fn attribute(&mut self, inline: bool, owner: Option<&str>) -> PResult<Attribute> {
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
        let equals_end = self.at;
        // An instruction's attribute value may start on the next line (`condition=` at the
        // end of one).
        self.skip(!inline)?;
        let from = self.at;
        if let Some(owner) = owner {
            if let Some(value) = self.inline_computations(owner, name)? {
                let pos = self.pos(from);
                return Ok(Attribute {
                    name: name.to_string(),
                    value,
                    pos,
                });
            }
        }
        let to = if name == "literal" && self.array_shape_at(from) {
            // A custom-call's literal: a shape and a value, `literal=s32[2]{0} {1, 2}`.
            self.shape(0)?;
            self.skip_inline()?;
            self.balanced(None)?
        } else {
            match self.mesh_value_end()? {
                Some(end) => end,
                None => self.balanced(None)?,
            }
        };
        let value = self.slice(from, to).trim_end();
        if value.is_empty() {
            let what = format!("a value for attribute `{name}`");
            self.at = from;
            return Err(self.expected_after(equals_end, &what));
        }
        self.at = to;
        let pos = self.pos(from);
        Ok(Attribute {
            name: name.to_string(),
            value: value.to_string(),
            pos,
        })
    }

    /// Attributes `, name=value` after an instruction (`owner`) or a computation, up to the
    /// first token that is not a comma.
    pub(super) fn attributes(&mut self, owner: Option<&str>) -> PResult<Vec<Attribute>> {
        let mut attributes = Vec::new();
        loop {
            let save = self.at;
            self.skip_ws()?;
            if self.peek() != Some(b',') {
                self.at = save;
                return Ok(attributes);
            }
            self.at += 1;
            attributes.push(self.attribute(false, owner)?);
        }
    }

    // ---------------------------------------------------------------- instructions

    /// An instruction, at its first token; returns it with its name, the name's offset and
    /// whether its shape is left to infer. Instructions nested in its operands are left in
    /// `self.hoisted`, in the order they must run.
    pub(super) fn instruction(&mut self) -> PResult<(Instruction, &'a str, usize, bool)> {
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
        let (mut instruction, infer) = self.rhs(name, pos, 0)?;
        instruction.is_root = is_root;
        Ok((instruction, name, name_at, infer))
    }

    /// What follows `name =`: `shape? opcode(operands), attributes` (no attributes for an
    /// instruction nested `depth > 0` levels in another's operands, as in XLA). Returns the
    /// instruction and whether its shape is left to infer (the text gives none).
    fn rhs(&mut self, name: &str, pos: Pos, depth: usize) -> PResult<(Instruction, bool)> {
        let shape_at = self.at;
        let infer = !self.shape_at(shape_at);
        let (shape, shape_text) = if infer {
            (Shape::Tuple(Vec::new()), String::new())
        } else {
            let (mut shape, _) = self.shape(0)?;
            // A layout after a space: `f32[51,16] {0,1}`.
            if let Shape::Array {
                layout: layout @ None,
                ..
            } = &mut shape
            {
                let next = self.run(self.at, |c| c == b' ' || c == b'\t');
                if next > self.at && self.byte(next) == Some(b'{') && self.layout_at(next) {
                    self.at = next;
                    *layout = Some(self.layout()?);
                }
            }
            let text = self.slice(shape_at, self.at).trim_end().to_string();
            (shape, text)
        };
        self.skip_ws()?;
        let op_start = self.at;
        if !self.peek().is_some_and(is_ident_start) {
            let what = format!("an opcode after the shape of `%{name}`");
            return Err(self.expected(op_start, &what));
        }
        self.at = self.run(op_start, is_name_byte);
        let opcode = self.slice(op_start, self.at);
        if infer && !can_infer(opcode) {
            let what = if depth == 0 {
                format!("a shape such as `f32[2,3]{{1,0}}` or `(s32[], pred[])` after `%{name} =`")
            } else {
                "a shape such as `f32[2,3]{1,0}` before a nested instruction's opcode".to_string()
            };
            let found = self.found(op_start);
            return Err(self.error(
                op_start,
                format!(
                    "expected {what}, found {found} (XLA infers no result shape for this opcode)"
                ),
            ));
        }
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
            (self.operands(depth)?, None)
        };
        let attributes = if depth == 0 {
            self.attributes(Some(name))?
        } else {
            Vec::new()
        };
        let instruction = Instruction {
            name: name.to_string(),
            shape,
            shape_text,
            opcode: opcode.to_string(),
            operands,
            literal,
            attributes,
            is_root: false,
            pos,
        };
        Ok((instruction, infer))
    }

    /// `#k` after the operand `%name` (at `self.at`), newer XLA's shorthand for element `k`
    /// of a tuple-shaped operand (`fusion(%custom-call.18#0)`): hoisted, like a nested
    /// instruction, as `get-tuple-element(%name), index=k` with its shape inferred; returns
    /// the provisional name that stands for it.
    fn tuple_element(&mut self, name: String, item_at: usize) -> PResult<String> {
        let digits_at = self.at + 1;
        let end = self.run(digits_at, |c| c.is_ascii_digit());
        if end == digits_at {
            let what = format!("a tuple index after `%{name}#`");
            return Err(self.expected(digits_at, &what));
        }
        let pos = self.pos(item_at);
        let index = Attribute {
            name: "index".to_string(),
            value: self.slice(digits_at, end).to_string(),
            pos: self.pos(digits_at),
        };
        self.at = end;
        let provisional = format!("{NESTED}{}", self.nested);
        self.nested += 1;
        let element = Instruction {
            name: provisional.clone(),
            shape: Shape::Tuple(Vec::new()),
            shape_text: String::new(),
            opcode: "get-tuple-element".to_string(),
            operands: vec![name],
            literal: None,
            attributes: vec![index],
            is_root: false,
            pos,
        };
        self.hoisted.push((element, true));
        Ok(provisional)
    }

    /// Operands `%a, f32[2]{0} %b, c)` after the `(`, through the `)`. An operand may be an
    /// instruction itself, `add(f32[] constant(1), maximum(x, y))`: it is parsed into
    /// `self.hoisted` under a provisional name (see [`Parser::hoisted`]).
    pub(super) fn operands(&mut self, depth: usize) -> PResult<Vec<String>> {
        let mut operands = Vec::new();
        self.skip_ws()?;
        if self.peek() == Some(b')') {
            self.at += 1;
            return Ok(operands);
        }
        loop {
            self.skip_ws()?;
            let item_at = self.at;
            if self.shape_at(self.at) {
                self.shape(0)?;
                self.skip_ws()?;
                // A shape with no name: XLA's parser records an error and goes on without
                // that operand (`add(%a, f32[], %b)` is `add(%a, %b)` to it), so here too.
                match self.peek() {
                    Some(b',') => {
                        self.at += 1;
                        continue;
                    }
                    Some(b')') => {
                        self.at += 1;
                        return Ok(operands);
                    }
                    _ => {}
                }
            }
            let mut name = self.name("an operand name")?.to_string();
            let mut after = self.at;
            if self.peek() == Some(b'#') {
                name = self.tuple_element(name, item_at)?;
                after = self.at;
            }
            self.skip_ws()?;
            if self.peek() == Some(b'(') {
                // A nested instruction: what looked like a name is its opcode.
                if depth + 1 >= MAX_DEPTH {
                    return Err(self.error(
                        item_at,
                        format!("instructions nested deeper than {MAX_DEPTH} levels"),
                    ));
                }
                self.at = item_at;
                let provisional = format!("{NESTED}{}", self.nested);
                self.nested += 1;
                let pos = self.pos(item_at);
                let nested = self.rhs(&provisional, pos, depth + 1)?;
                self.hoisted.push(nested);
                name = provisional;
                after = self.at;
                self.skip_ws()?;
            }
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b')') => {
                    self.at += 1;
                    operands.push(name);
                    return Ok(operands);
                }
                _ => {
                    let what = if name.starts_with(NESTED) {
                        "`,` or `)` after a nested instruction (which takes no attributes)"
                            .to_string()
                    } else {
                        format!("`,` or `)` after operand `%{name}`")
                    };
                    return Err(self.expected_after(after, &what));
                }
            }
            operands.push(name);
        }
    }
}
