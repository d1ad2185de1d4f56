//! The HLO text parser: a byte-level scanner and a recursive-descent parser for the module
//! grammar that XLA's `HloModule::ToString` prints (reference: `xla/hlo/parser/hlo_parser.cc`).
//!
//! ```text
//! module      ::= 'HloModule' name (',' attribute)* END-OF-LINE (computation | table)*
//! computation ::= 'ENTRY'? name ('(' (param (',' param)*)? ')' '->' shape)? '{' instruction+ '}'
//!                 (',' attribute)*
//! param       ::= name ':' shape
//! instruction ::= 'ROOT'? name '=' shape opcode '(' operands ')' (',' attribute)*
//! operands    ::= (shape? name (',' shape? name)*)?     -- raw text for constant, parameter, iota
//! attribute   ::= ident '=' value                       -- value: raw text, brackets balanced
//! shape       ::= '(' (shape (',' shape)*)? ')' | 'token[]' | dtype '[' (dim (',' dim)*)? ']' layout?
//! dim         ::= '<='? u64
//! layout      ::= '{' (u64 (',' u64)*)? (':' balanced-text)? '}'   -- directly after ']'
//! table       ::= ('FileNames' | 'FunctionNames' | 'FileLocations' | 'StackFrames') (u64 value)*
//! name        ::= '%' [A-Za-z0-9_.-]+ | [A-Za-z_] [A-Za-z0-9_.-]*
//! ```
//!
//! Whitespace, newlines, `/* ... */` and `// ...` comments separate tokens anywhere, except
//! that the module header, and an attribute value outside brackets, end at the end of their
//! line. An attribute value extends to the next comma, whitespace, comment or unmatched
//! closing bracket outside brackets and strings; inside brackets, newlines are whitespace.
//!
//! The parser never panics, runs in time linear in the input, bounds its recursion (tuple
//! shapes and brackets nested deeper than [`MAX_DEPTH`] are errors), and checks integers and
//! shape sizes for overflow: every parsed shape's [`Shape::bytes`] and [`Shape::elements`]
//! fit in a `u64`.

use std::collections::BTreeMap;

use crate::hlo::ast::{element_bytes, Attribute, Computation, Instruction, Module, Pos, Shape};
use crate::hlo::HloError;

/// The deepest nesting of tuple shapes, or of brackets in one value, that the parser accepts.
const MAX_DEPTH: usize = 256;

/// Opcodes whose parenthesised text is kept raw as [`Instruction::literal`] instead of being
/// read as operands.
const LITERAL_OPCODES: [&str; 3] = ["constant", "parameter", "iota"];

/// Keywords that open the stack-frame tables newer XLA versions print after the computations.
const TABLES: [&str; 4] = ["FileNames", "FunctionNames", "FileLocations", "StackFrames"];

/// Parses an HLO text module, as XLA's `HloModule::ToString` prints it (the files that
/// `XLA_FLAGS=--xla_dump_to=DIR --xla_dump_hlo_as_text` writes).
///
/// Checks the syntax, that exactly one computation is `ENTRY`, that computation names are
/// unique in the module and instruction names unique in their computation, and that at most
/// one instruction per computation is `ROOT`. Attribute values are kept as source text (see
/// [`Attribute`]). Errors are [`HloError::Syntax`] with the 1-based line and column of the
/// offending token. Linear time; never panics.
pub fn parse(text: &str) -> Result<Module, HloError> {
    Parser::new(text).module()
}

/// Results of the parser.
type PResult<T> = Result<T, HloError>;

/// Whether `c` may appear in a name after its first character.
fn is_name_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-')
}

/// Whether `c` may start a name without `%`, a keyword or an attribute name.
fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

/// Whether `dtype` has the syntax of an element type: `[a-z][a-z0-9]*`.
fn is_dtype(dtype: &str) -> bool {
    let mut bytes = dtype.bytes();
    bytes.next().is_some_and(|c| c.is_ascii_lowercase())
        && bytes.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
}

/// The closing bracket of an opening one.
fn closer(open: u8) -> u8 {
    match open {
        b'{' => b'}',
        b'[' => b']',
        _ => b')',
    }
}

/// `text`, shortened to about `max` characters for a message.
fn abbreviate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}...", text.get(..cut).unwrap_or_default()),
        None => text.to_string(),
    }
}

/// The parser's state: the text and a cursor into it.
struct Parser<'a> {
    /// The whole text.
    src: &'a str,
    /// The same, as bytes.
    bytes: &'a [u8],
    /// The cursor: a byte offset, always on a character boundary.
    at: usize,
    /// The last offset converted to a position, and that position (positions are mostly
    /// asked for in increasing order, so converting them costs linear time in all).
    cache: (usize, Pos),
    /// Where the text starts: after a byte-order mark, if any, which takes no column.
    origin: usize,
    /// The opening bracket of the first attribute value of the current computation that
    /// spans several lines: the likely culprit when the computation is not closed.
    multiline: Option<usize>,
}

impl<'a> Parser<'a> {
    /// A parser at the start of `src` (after a byte-order mark, if any).
    fn new(src: &'a str) -> Self {
        let origin = if src.starts_with('\u{feff}') { 3 } else { 0 };
        Parser {
            src,
            bytes: src.as_bytes(),
            at: origin,
            cache: (origin, Pos { line: 1, column: 1 }),
            origin,
            multiline: None,
        }
    }

    // ---------------------------------------------------------------- positions, errors

    /// The line and column of byte offset `off`.
    fn pos(&mut self, off: usize) -> Pos {
        let off = off.clamp(self.origin, self.bytes.len());
        if off < self.cache.0 {
            self.cache = (self.origin, Pos { line: 1, column: 1 });
        }
        let (from, mut pos) = self.cache;
        for &c in self.bytes.get(from..off).unwrap_or_default() {
            if c == b'\n' {
                pos.line += 1;
                pos.column = 1;
            } else if c & 0xC0 != 0x80 {
                // Count characters, not UTF-8 continuation bytes.
                pos.column += 1;
            }
        }
        self.cache = (off, pos);
        pos
    }

    /// A syntax error at byte offset `off`.
    fn error(&mut self, off: usize, message: impl Into<String>) -> HloError {
        let Pos { line, column } = self.pos(off);
        HloError::Syntax {
            line,
            column,
            message: message.into(),
        }
    }

    /// "expected WHAT, found TOKEN" at `off`.
    fn expected(&mut self, off: usize, what: &str) -> HloError {
        let found = self.found(off);
        self.error(off, format!("expected {what}, found {found}"))
    }

    /// "expected WHAT, found TOKEN" for the token at the cursor, which whitespace skipped
    /// from `after` led to; when that whitespace crossed a line end, the error is placed at
    /// the end of `after`'s line instead (a missing token is more likely there).
    fn expected_after(&mut self, after: usize, what: &str) -> HloError {
        let gap = self.bytes.get(after..self.at).unwrap_or_default();
        let off = match gap.iter().position(|&c| c == b'\n') {
            Some(newline) => after + newline,
            None => self.at,
        };
        self.expected(off, what)
    }

    /// Describes the token at `off` for a message: "`word`", "`c`", "end of line" or
    /// "end of input".
    fn found(&self, off: usize) -> String {
        let rest = self.src.get(off..).unwrap_or_default();
        let Some(c) = rest.chars().next() else {
            return "end of input".into();
        };
        if c == '\n' || c == '\r' {
            return "end of line".into();
        }
        if c == '%' || c == '_' || c.is_ascii_alphanumeric() {
            let len = 1 + rest
                .bytes()
                .skip(1)
                .take_while(|&b| is_name_byte(b))
                .count();
            let word = rest.get(..len).unwrap_or_default();
            return format!("`{}`", abbreviate(word, 40));
        }
        format!("`{c}`")
    }

    // ---------------------------------------------------------------- low-level scanning

    /// The byte at the cursor.
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    /// The byte at `off`.
    fn byte(&self, off: usize) -> Option<u8> {
        self.bytes.get(off).copied()
    }

    /// Whether the text at the cursor starts with `s`.
    fn looking_at(&self, s: &[u8]) -> bool {
        self.bytes
            .get(self.at..)
            .is_some_and(|rest| rest.starts_with(s))
    }

    /// The text between two byte offsets (empty if they are not character boundaries, which
    /// the parser never asks for).
    fn slice(&self, from: usize, to: usize) -> &'a str {
        self.src.get(from..to).unwrap_or_default()
    }

    /// The end of the run of bytes satisfying `pred` that starts at `from`.
    fn run(&self, from: usize, pred: impl Fn(u8) -> bool) -> usize {
        let rest = self.bytes.get(from..).unwrap_or_default();
        from + rest.iter().take_while(|&&c| pred(c)).count()
    }

    /// The keyword-like word at `off` (`[A-Za-z_][A-Za-z0-9_.-]*`), or `""`.
    fn word_at(&self, off: usize) -> &'a str {
        if !self.byte(off).is_some_and(is_ident_start) {
            return "";
        }
        self.slice(off, self.run(off, is_name_byte))
    }

    /// Skips whitespace, newlines included, and comments.
    fn skip_ws(&mut self) -> PResult<()> {
        self.skip(true)
    }

    /// Skips whitespace and comments up to the end of the line (a block comment may span
    /// lines).
    fn skip_inline(&mut self) -> PResult<()> {
        self.skip(false)
    }

    /// Skips whitespace (newlines when `newlines`) and comments.
    fn skip(&mut self, newlines: bool) -> PResult<()> {
        loop {
            match self.peek() {
                Some(b' ' | b'\t' | b'\r' | b'\x0b' | b'\x0c') => self.at += 1,
                Some(b'\n') if newlines => self.at += 1,
                Some(b'/') => match self.byte(self.at + 1) {
                    Some(b'*') => self.at = self.comment_end(self.at)?,
                    Some(b'/') => self.at = self.line_end(self.at),
                    _ => return Ok(()),
                },
                _ => return Ok(()),
            }
        }
    }

    /// The offset after the block comment that starts at `start` (at `/*`).
    fn comment_end(&mut self, start: usize) -> PResult<usize> {
        let body = self.src.get(start + 2..).unwrap_or_default();
        match body.find("*/") {
            Some(end) => Ok(start + 2 + end + 2),
            None => Err(self.error(start, "unterminated comment: `/*` without `*/`")),
        }
    }

    /// The offset of the end of the line that `from` is on (its `\n`, or the end of input).
    fn line_end(&self, from: usize) -> usize {
        self.run(from, |c| c != b'\n')
    }

    /// The offset after the string literal that starts at `start` (at `"`); backslashes
    /// escape the next character.
    fn string_end(&mut self, start: usize) -> PResult<usize> {
        let mut i = start + 1;
        while let Some(c) = self.byte(i) {
            match c {
                b'\\' => i += 2,
                b'"' => return Ok(i + 1),
                _ => i += 1,
            }
        }
        Err(self.error(start, "unterminated string: `\"` without a closing quote"))
    }

    /// Scans balanced text from the cursor (without moving it), skipping strings and
    /// comments and checking that brackets match.
    ///
    /// With `close = Some((c, open))`, the text is inside the bracket at offset `open`, and
    /// the scan stops at its closing `c` and returns that offset. With `None` the text is an
    /// attribute value, and the scan stops at its end: the first comma, whitespace, comment
    /// or unmatched closing bracket outside brackets and strings, or the end of input.
    fn balanced(&mut self, close: Option<(u8, usize)>) -> PResult<usize> {
        let value = close.is_none();
        let mut stack: Vec<(u8, usize)> = Vec::new();
        let mut spans_lines = false;
        let mut i = self.at;
        while let Some(c) = self.byte(i) {
            match c {
                b'"' => i = self.string_end(i)?,
                b'/' if matches!(self.byte(i + 1), Some(b'*' | b'/')) => {
                    if value && stack.is_empty() {
                        break;
                    }
                    i = if self.byte(i + 1) == Some(b'*') {
                        self.comment_end(i)?
                    } else {
                        self.line_end(i)
                    };
                }
                b'{' | b'[' | b'(' => {
                    if stack.len() >= MAX_DEPTH {
                        return Err(self
                            .error(i, format!("brackets nested deeper than {MAX_DEPTH} levels")));
                    }
                    stack.push((closer(c), i));
                    i += 1;
                }
                b'}' | b']' | b')' => {
                    let open = stack.last().copied().or(close);
                    match open {
                        Some((want, _)) if want == c && !stack.is_empty() => {
                            stack.pop();
                            i += 1;
                        }
                        Some((want, _)) if want == c => return Ok(i),
                        Some((want, open)) => {
                            let p = self.pos(open);
                            let opener = self.byte(open).map_or('?', char::from);
                            return Err(self.error(
                                i,
                                format!(
                                    "mismatched `{}`: expected `{}` to close the `{opener}` at \
                                     line {}, column {}",
                                    char::from(c),
                                    char::from(want),
                                    p.line,
                                    p.column
                                ),
                            ));
                        }
                        // An unmatched closing bracket ends a value.
                        None => break,
                    }
                }
                b',' | b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c'
                    if value && stack.is_empty() =>
                {
                    break
                }
                b'\n' => {
                    spans_lines = true;
                    i += 1;
                }
                _ => i += 1,
            }
        }
        if let Some(&(want, open)) = stack.last().or(close.as_ref()) {
            if i >= self.bytes.len() {
                let opener = self.byte(open).map_or('?', char::from);
                return Err(self.error(
                    open,
                    format!(
                        "unbalanced `{opener}`: no matching `{}` before the end of input",
                        char::from(want)
                    ),
                ));
            }
        }
        if value && spans_lines && self.multiline.is_none() {
            // The outermost bracket of the value: the first one after the cursor.
            let first = self.run(self.at, |c| !matches!(c, b'{' | b'[' | b'('));
            self.multiline = Some(first);
        }
        Ok(i)
    }

    // ---------------------------------------------------------------- tokens

    /// A name, `%name` or `name`, returned without `%`. `what` describes it in errors.
    fn name(&mut self, what: &str) -> PResult<&'a str> {
        let start = self.at;
        let (from, ok) = if self.peek() == Some(b'%') {
            (start + 1, self.byte(start + 1).is_some_and(is_name_byte))
        } else {
            (start, self.peek().is_some_and(is_ident_start))
        };
        if !ok {
            return Err(self.expected(start, what));
        }
        self.at = self.run(from, is_name_byte);
        Ok(self.slice(from, self.at))
    }

    /// An unsigned decimal integer; `what` describes it in errors.
    fn uint(&mut self, what: &str) -> PResult<u64> {
        let start = self.at;
        let end = self.run(start, |c| c.is_ascii_digit());
        if end == start {
            return Err(self.expected(start, what));
        }
        let mut value: u64 = 0;
        for &c in self.bytes.get(start..end).unwrap_or_default() {
            match value
                .checked_mul(10)
                .and_then(|v| v.checked_add(u64::from(c - b'0')))
            {
                Some(v) => value = v,
                None => {
                    let digits = abbreviate(self.slice(start, end), 24);
                    return Err(
                        self.error(start, format!("{what} `{digits}` does not fit in 64 bits"))
                    );
                }
            }
        }
        self.at = end;
        Ok(value)
    }

    /// Whether a shape such as `f32[` (an element type directly followed by `[`) starts at
    /// `off`.
    fn array_shape_at(&self, off: usize) -> bool {
        let end = self.run(off, |c| c.is_ascii_alphanumeric() || c == b'_');
        end > off && self.byte(off).is_some_and(is_ident_start) && self.byte(end) == Some(b'[')
    }

    // ---------------------------------------------------------------- shapes

    /// A shape, with its size in bytes. `depth` counts the enclosing tuples.
    fn shape(&mut self, depth: usize) -> PResult<(Shape, u64)> {
        let start = self.at;
        if self.peek() == Some(b'(') {
            return self.tuple_shape(depth);
        }
        let end = self.run(start, |c| c.is_ascii_alphanumeric() || c == b'_');
        if !self.array_shape_at(start) {
            return Err(self.expected(
                start,
                "a shape such as `f32[2,3]{1,0}` or `(s32[], pred[])`",
            ));
        }
        let dtype = self.slice(start, end);
        self.at = end + 1; // past `[`
        self.skip_ws()?;
        if dtype == "token" {
            if self.peek() != Some(b']') {
                return Err(self.expected(self.at, "`]`: `token[]` has no dimensions"));
            }
            self.at += 1;
            return Ok((Shape::Token, 0));
        }
        if !is_dtype(dtype) {
            return Err(self.error(
                start,
                format!(
                    "unknown element type `{}` in shape: expected a lower-case name such as \
                     `f32`, `bf16`, `s32` or `pred`",
                    abbreviate(dtype, 40)
                ),
            ));
        }
        let mut dims = Vec::new();
        if self.peek() == Some(b']') {
            self.at += 1;
        } else {
            loop {
                self.skip_ws()?;
                if self.looking_at(b"<=") {
                    self.at += 2;
                    self.skip_ws()?;
                }
                match self.peek() {
                    Some(b'?') => {
                        return Err(self.error(
                            self.at,
                            "unbounded dynamic dimension `?` is not supported: a dimension \
                             needs a size or a `<=` bound",
                        ))
                    }
                    Some(c) if c.is_ascii_digit() => dims.push(self.uint("dimension size")?),
                    _ => {
                        let what = format!("a dimension size in shape `{dtype}[...]`");
                        return Err(self.expected(self.at, &what));
                    }
                }
                self.skip_ws()?;
                match self.peek() {
                    Some(b',') => self.at += 1,
                    Some(b']') => {
                        self.at += 1;
                        break;
                    }
                    _ => return Err(self.expected(self.at, "`,` or `]` after a dimension size")),
                }
            }
        }
        let layout = if self.peek() == Some(b'{') && self.layout_at(self.at) {
            Some(self.layout()?)
        } else {
            None
        };
        let bytes = dims
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d))
            .and_then(|n| n.checked_mul(element_bytes(dtype)));
        let Some(bytes) = bytes else {
            return Err(self.error(
                start,
                "shape is too large: its size in bytes does not fit in 64 bits",
            ));
        };
        let shape = Shape::Array {
            dtype: dtype.to_string(),
            dims,
            layout,
        };
        Ok((shape, bytes))
    }

    /// A tuple shape, at its `(`.
    fn tuple_shape(&mut self, depth: usize) -> PResult<(Shape, u64)> {
        let start = self.at;
        if depth >= MAX_DEPTH {
            return Err(self.error(
                start,
                format!("tuple shapes nested deeper than {MAX_DEPTH} levels"),
            ));
        }
        self.at += 1;
        self.skip_ws()?;
        let mut elements = Vec::new();
        let mut total: u64 = 0;
        if self.peek() == Some(b')') {
            self.at += 1;
            return Ok((Shape::Tuple(elements), 0));
        }
        loop {
            let (shape, bytes) = self.shape(depth + 1)?;
            let Some(sum) = total.checked_add(bytes) else {
                return Err(self.error(
                    start,
                    "tuple shape is too large: its size in bytes does not fit in 64 bits",
                ));
            };
            total = sum;
            elements.push(shape);
            self.skip_ws()?;
            match self.peek() {
                Some(b',') => {
                    self.at += 1;
                    self.skip_ws()?;
                }
                Some(b')') => {
                    self.at += 1;
                    return Ok((Shape::Tuple(elements), total));
                }
                _ => return Err(self.expected(self.at, "`,` or `)` in a tuple shape")),
            }
        }
    }

    /// Whether the `{` at `off`, right after a shape's `]`, opens a layout rather than a
    /// computation body: a layout's first token is a number, `:` or `}`.
    fn layout_at(&self, off: usize) -> bool {
        let next = self.run(off + 1, |c| c.is_ascii_whitespace());
        self.byte(next)
            .is_some_and(|c| c.is_ascii_digit() || c == b':' || c == b'}')
    }

    /// A layout `{2,1,0}` or `{1,0:T(8,128)(2,1)S(1)}`, at its `{`: the minor-to-major list,
    /// with what follows `:` (tiling, memory space, ...) checked for balance and dropped.
    fn layout(&mut self) -> PResult<Vec<u64>> {
        let open = self.at;
        self.at += 1;
        let mut layout = Vec::new();
        loop {
            self.skip_ws()?;
            match self.peek() {
                Some(b'}') => {
                    self.at += 1;
                    return Ok(layout);
                }
                Some(b':') => {
                    self.at += 1;
                    let close = self.balanced(Some((b'}', open)))?;
                    self.at = close + 1;
                    return Ok(layout);
                }
                Some(c) if c.is_ascii_digit() => {
                    layout.push(self.uint("layout dimension")?);
                    self.skip_ws()?;
                    match self.peek() {
                        Some(b',') => self.at += 1,
                        Some(b'}' | b':') => {}
                        _ => return Err(self.expected(self.at, "`,`, `:` or `}` in a layout")),
                    }
                }
                _ => {
                    return Err(self.expected(self.at, "a dimension number, `:` or `}` in a layout"))
                }
            }
        }
    }

    // ---------------------------------------------------------------- attributes

    /// `name=value` after a `,` (skipping whitespace up to the end of the line only when
    /// `inline`).
    fn attribute(&mut self, inline: bool) -> PResult<Attribute> {
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
        let to = self.balanced(None)?;
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
    fn attributes(&mut self) -> PResult<Vec<Attribute>> {
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
    fn instruction(&mut self) -> PResult<(Instruction, &'a str, usize)> {
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
        let (shape, _) = self.shape(0)?;
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
    fn operands(&mut self) -> PResult<Vec<String>> {
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

    // ---------------------------------------------------------------- computations

    /// A computation, at its first token; returns it with its name and the name's offset.
    fn computation(&mut self) -> PResult<(Computation, &'a str, usize)> {
        let start = self.at;
        let pos = self.pos(start);
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
            Some(b'{') => {}
            Some(b'=') => {
                return Err(self.error(
                    name_at,
                    format!(
                        "instruction `%{name}` outside any computation (did an extra `}}` \
                         close the computation early?)"
                    ),
                ))
            }
            _ => {
                let what = format!("`{{` to open the body of computation `%{name}`");
                return Err(self.expected_after(after, &what));
            }
        }
        let open = self.at;
        self.at += 1;
        self.multiline = None;
        let mut instructions: Vec<Instruction> = Vec::new();
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
            let (instruction, iname, iname_at) = match self.instruction() {
                Ok(parsed) => parsed,
                Err(e) => return Err(self.with_hint(e)),
            };
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
        }
        if instructions.is_empty() {
            return Err(self.error(open, format!("computation `%{name}` has no instructions")));
        }
        // `, execution_thread="..."` after the `}`: checked, not kept.
        self.attributes()?;
        let root = root.unwrap_or(instructions.len() - 1);
        let computation = Computation {
            name: name.to_string(),
            is_entry,
            instructions,
            root,
            pos,
        };
        Ok((computation, name, name_at))
    }

    /// The error for a computation that the end of input leaves open.
    fn unclosed(&mut self, name: &str, pos: Pos) -> HloError {
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
    fn with_hint(&mut self, e: HloError) -> HloError {
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
    fn parameters(&mut self) -> PResult<()> {
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
            if self.peek() != Some(b':') {
                let what = format!("`:` after parameter `{name}`");
                return Err(self.expected(self.at, &what));
            }
            self.at += 1;
            self.skip_ws()?;
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
    /// cursor; returns whether one did.
    fn table(&mut self) -> PResult<bool> {
        let word = self.word_at(self.at);
        if !TABLES.contains(&word) {
            return Ok(false);
        }
        let save = self.at;
        self.at += word.len();
        self.skip_ws()?;
        let next = self.word_at(self.at);
        if !(self.peek().is_none_or(|c| c.is_ascii_digit()) || TABLES.contains(&next)) {
            // A computation with that name.
            self.at = save;
            return Ok(false);
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
        Ok(true)
    }

    // ---------------------------------------------------------------- the module

    /// The whole module.
    fn module(mut self) -> PResult<Module> {
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
        let mut attributes = Vec::new();
        loop {
            self.skip_inline()?;
            if self.peek() != Some(b',') {
                break;
            }
            self.at += 1;
            attributes.push(self.attribute(true)?);
        }
        if !matches!(self.peek(), None | Some(b'\n')) {
            return Err(self.expected(
                self.at,
                "`,` or the end of the line after the module header",
            ));
        }

        let mut computations: Vec<Computation> = Vec::new();
        let mut names: BTreeMap<&'a str, Pos> = BTreeMap::new();
        let mut entry: Option<usize> = None;
        loop {
            self.skip_ws()?;
            if self.at >= self.bytes.len() {
                break;
            }
            if self.table()? {
                continue;
            }
            let start = self.at;
            if self.word_at(start) == "HloModule" {
                return Err(self.error(
                    start,
                    "a second `HloModule` header: a text holds one module",
                ));
            }
            let (computation, cname, cname_at) = self.computation()?;
            if let Some(first) = names.get(cname) {
                let message = format!(
                    "duplicate computation `%{cname}` (first at line {})",
                    first.line
                );
                return Err(self.error(cname_at, message));
            }
            names.insert(cname, computation.pos);
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
        let Some(entry) = entry else {
            let end = self.bytes.len();
            return Err(self.error(
                end,
                "no ENTRY computation: one computation must be marked `ENTRY`",
            ));
        };
        Ok(Module {
            name,
            attributes,
            computations,
            entry,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hlo::ReplicaGroups;

    /// Parses `text`, panicking with the error on failure.
    fn ok(text: &str) -> Module {
        match parse(text) {
            Ok(m) => m,
            Err(e) => panic!("{e}\n--- input:\n{text}"),
        }
    }

    /// Parses `text`, which must fail; returns the error's line, column and message.
    fn err(text: &str) -> (usize, usize, String) {
        match parse(text) {
            Ok(m) => panic!("parsed, expected an error: {m:?}"),
            Err(HloError::Syntax {
                line,
                column,
                message,
            }) => (line, column, message),
            Err(e) => panic!("not a syntax error: {e}"),
        }
    }

    /// Asserts that `text` fails at `line`:`column` with a message containing `fragment`.
    #[track_caller]
    fn fails(text: &str, line: usize, column: usize, fragment: &str) {
        let (l, c, m) = err(text);
        assert!(
            (l, c) == (line, column) && m.contains(fragment),
            "got line {l}, column {c}: {m}\nexpected line {line}, column {column}: ..{fragment}.."
        );
    }

    fn array(dtype: &str, dims: &[u64], layout: Option<&[u64]>) -> Shape {
        Shape::Array {
            dtype: dtype.into(),
            dims: dims.to_vec(),
            layout: layout.map(<[u64]>::to_vec),
        }
    }

    const SAMPLE: &str = r#"HloModule jit_step, is_scheduled=true, input_output_alias={ {0}: (0, {}, may-alias), {1}: (1, {}, may-alias) }, entry_computation_layout={(f32[2]{0}, bf16[2,8]{1,0})->(f32[2]{0}, bf16[16]{0})}

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %sum = f32[] add(%x, %y)
}

%fused {
  %p0 = f32[2]{0} parameter(0)
  ROOT %neg = f32[2]{0} negate(f32[2]{0} %p0)
}

ENTRY %main.1_spmd (a: f32[2], b: bf16[2,8]) -> (f32[2], bf16[16]) {
  %a = f32[2]{0} parameter(0), sharding={replicated}
  %b = bf16[2,8]{1,0} parameter(1)
  %ar = f32[2]{0} all-reduce(%a), channel_id=1, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=%add
  %f = f32[2]{0} fusion(%ar), kind=kLoop, calls=%fused, metadata={op_name="jit(step)/neg" source_file="/x/y.py" source_line=3}
  %ags = (bf16[2]{0}, bf16[16]{0}) all-gather-start(%b), channel_id=2, replica_groups=[2,4]<=[4,2]T(1,0), dimensions={0}
  %agd = bf16[16]{0} all-gather-done(%ags)
  ROOT %t = (f32[2]{0}, bf16[16]{0}) tuple(%f, /*index=1*/%agd)
}
"#;

    #[test]
    fn parses_a_module() {
        let m = ok(SAMPLE);
        assert_eq!(m.name, "jit_step");
        let names: Vec<&str> = m.attributes.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "is_scheduled",
                "input_output_alias",
                "entry_computation_layout"
            ]
        );
        assert_eq!(
            m.attributes[1].value,
            "{ {0}: (0, {}, may-alias), {1}: (1, {}, may-alias) }"
        );
        assert_eq!(
            m.attributes[2].value,
            "{(f32[2]{0}, bf16[2,8]{1,0})->(f32[2]{0}, bf16[16]{0})}"
        );
        assert_eq!(
            m.attributes[0].pos,
            Pos {
                line: 1,
                column: 34
            }
        );
        assert_eq!(m.computations.len(), 3);
        assert_eq!(m.entry, 2);
        assert_eq!(m.entry().name, "main.1_spmd");
        assert!(m.entry().is_entry && !m.computations[0].is_entry);
        assert_eq!(
            m.entry().pos,
            Pos {
                line: 14,
                column: 1
            }
        );

        let add = m.computation("add").unwrap();
        assert_eq!(add.root, 2);
        assert_eq!(add.instructions[0].literal.as_deref(), Some("0"));
        assert_eq!(add.instructions[2].operands, ["x", "y"]);
        assert!(add.instructions[2].is_root);

        let fused = m.computation("fused").unwrap();
        assert_eq!(
            fused.instructions[1].operands,
            ["p0"],
            "shape prefix dropped"
        );
        assert_eq!(fused.root, 1);

        let e = m.entry();
        assert_eq!(e.instructions.len(), 7);
        assert_eq!(e.root, 6);
        let ar = &e.instructions[2];
        assert_eq!(ar.opcode, "all-reduce");
        assert_eq!(
            ar.pos,
            Pos {
                line: 17,
                column: 3
            }
        );
        let rg = ar.attribute("replica_groups").unwrap();
        assert_eq!(rg.value, "{{0,1},{2,3}}");
        assert_eq!(
            rg.replica_groups().unwrap(),
            ReplicaGroups::Explicit(vec![vec![0, 1], vec![2, 3]])
        );
        assert_eq!(
            ar.attribute("to_apply").unwrap().computation().unwrap(),
            "add"
        );
        assert_eq!(ar.attribute("channel_id").unwrap().integer().unwrap(), 1);
        let f = &e.instructions[3];
        assert_eq!(f.attribute("kind").unwrap().value, "kLoop");
        assert_eq!(
            f.attribute("calls").unwrap().computation().unwrap(),
            "fused"
        );
        assert_eq!(
            f.attribute("metadata").unwrap().value,
            r#"{op_name="jit(step)/neg" source_file="/x/y.py" source_line=3}"#
        );
        let ags = &e.instructions[4];
        assert_eq!(
            ags.shape,
            Shape::Tuple(vec![
                array("bf16", &[2], Some(&[0])),
                array("bf16", &[16], Some(&[0]))
            ])
        );
        assert_eq!(
            ags.attribute("replica_groups")
                .unwrap()
                .replica_groups()
                .unwrap()
                .expand(),
            vec![vec![0, 2, 4, 6], vec![1, 3, 5, 7]]
        );
        assert_eq!(
            ags.attribute("dimensions").unwrap().dims().unwrap(),
            vec![0]
        );
        let agd = &e.instructions[5];
        assert_eq!(
            (agd.opcode.as_str(), agd.operands.as_slice()),
            ("all-gather-done", &["ags".to_string()][..])
        );
        assert_eq!(e.instructions[6].operands, ["f", "agd"]);
        assert_eq!(
            e.instructions[0].attribute("sharding").unwrap().value,
            "{replicated}"
        );
    }

    #[test]
    fn async_pair_and_iota_replica_groups() {
        let m = ok("HloModule m\nENTRY %e (p: bf16[2]) -> bf16[16] {\n  %p = bf16[2]{0} parameter(0)\n  %ags = (bf16[2]{0}, bf16[16]{0}) all-gather-start(%p), channel_id=1, replica_groups=[1,8]<=[8], dimensions={0}\n  ROOT %agd = bf16[16]{0} all-gather-done(%ags)\n}\n");
        let e = m.entry();
        let ags = &e.instructions[1];
        assert_eq!(ags.opcode, "all-gather-start");
        let rg = ags.attribute("replica_groups").unwrap();
        assert_eq!(rg.value, "[1,8]<=[8]");
        assert_eq!(
            rg.pos,
            Pos {
                line: 4,
                column: 87
            }
        );
        assert_eq!(
            rg.replica_groups().unwrap(),
            ReplicaGroups::Iota {
                groups: 1,
                size: 8,
                reshape: vec![8],
                transpose: None
            }
        );
        assert_eq!(e.instructions[2].operands, ["ags"]);
        assert_eq!(e.root, 2);
    }

    #[test]
    fn while_fusion_custom_call_and_constants() {
        let text = r#"HloModule m
%c (s: s32[]) -> pred[] {
  %s = s32[] parameter(0)
  %k = s32[] constant(4)
  ROOT %lt = pred[] compare(%s, %k), direction=LT
}
%b (s: s32[]) -> s32[] {
  %s = s32[] parameter(0)
  %one = s32[] constant(1)
  ROOT %n = s32[] add(s32[] %s, s32[] %one)
}
%fused (p: f32[2,2]) -> f32[2,2] {
  ROOT %p = f32[2,2]{1,0} parameter(0)
}
ENTRY %main {
  %z = s32[] constant(0)
  %w = s32[] while(%z), condition=%c, body=%b, backend_config={"known_trip_count":{"n":"4"}}
  %v = f32[2,2]{1,0} constant({ { 1, 2 }, { 3, 4 } })
  %inf = f32[] constant(-inf)
  %dots = f32[8]{0} constant({...})
  %io = s32[8]{0} iota(), iota_dimension=0
  %fu = f32[2,2]{1,0} fusion(%v), kind=kLoop, calls=%fused
  %cc = (f32[2,2]{1,0}, u8[48]{0}) custom-call(%fu, %v), custom_call_target="te_fused_attn_forward_ffi", api_version=API_VERSION_TYPED_FFI, backend_config="{\"scale\":\"0.5\",\"name\":\"a, b\"}"
  %conv = f32[1,8,8,4]{3,2,1,0} convolution(%x, %y), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  %sl = f32[1,4]{1,0} slice(%v), slice={[0:1], [0:4:2]}
  ROOT %t = () tuple()
}
"#;
        let m = ok(text);
        let e = m.entry();
        assert_eq!(e.name, "main");
        let w = &e.instructions[1];
        assert_eq!(
            w.attribute("condition").unwrap().computation().unwrap(),
            "c"
        );
        assert_eq!(w.attribute("body").unwrap().computation().unwrap(), "b");
        assert_eq!(
            w.attribute("backend_config").unwrap().value,
            r#"{"known_trip_count":{"n":"4"}}"#
        );
        assert_eq!(e.instructions[0].literal.as_deref(), Some("0"));
        assert_eq!(
            e.instructions[2].literal.as_deref(),
            Some("{ { 1, 2 }, { 3, 4 } }")
        );
        assert_eq!(e.instructions[3].literal.as_deref(), Some("-inf"));
        assert_eq!(e.instructions[4].literal.as_deref(), Some("{...}"));
        let io = &e.instructions[5];
        assert_eq!((io.literal.as_deref(), io.operands.len()), (Some(""), 0));
        assert_eq!(
            io.attribute("iota_dimension").unwrap().integer().unwrap(),
            0
        );
        let cc = &e.instructions[7];
        assert_eq!(cc.operands, ["fu", "v"]);
        assert_eq!(
            cc.attribute("custom_call_target")
                .unwrap()
                .string()
                .unwrap(),
            "te_fused_attn_forward_ffi"
        );
        assert_eq!(
            cc.attribute("backend_config").unwrap().string().unwrap(),
            r#"{"scale":"0.5","name":"a, b"}"#
        );
        let conv = &e.instructions[8];
        assert_eq!(
            conv.attribute("window").unwrap().value,
            "{size=3x3 pad=1_1x1_1}"
        );
        assert_eq!(
            conv.attribute("dim_labels").unwrap().value,
            "b01f_01io->b01f"
        );
        assert_eq!(
            e.instructions[9].attribute("slice").unwrap().value,
            "{[0:1], [0:4:2]}"
        );
        let t = &e.instructions[10];
        assert_eq!((&t.shape, t.operands.len()), (&Shape::Tuple(vec![]), 0));
        let b = m.computation("b").unwrap();
        assert_eq!(b.instructions[2].operands, ["s", "one"]);
        assert_eq!(m.computation("fused").unwrap().root, 0);
    }

    #[test]
    fn shapes() {
        let text = "HloModule m\nENTRY %e {\n  %a = (f32[2], (s32[], pred[]), ()) parameter(0)\n  %b = bf16[2,8192,4096]{2,1,0} parameter(1)\n  %c = f32[8,128]{1,0:T(8,128)(2,1)S(1)} parameter(2)\n  %d = f32[<=10,3] parameter(3)\n  %t = token[] after-all()\n  %e = f8e4m3fn[4]{0} parameter(4)\n  %f = s4[3]{0:E(4)} parameter(5)\n  %g = c128[] parameter(6)\n  ROOT %h = f32[ 2 , 3 ]{ 1 , 0 } parameter(7)\n}\n";
        let m = ok(text);
        let s: Vec<&Shape> = m.entry().instructions.iter().map(|i| &i.shape).collect();
        assert_eq!(
            *s[0],
            Shape::Tuple(vec![
                array("f32", &[2], None),
                Shape::Tuple(vec![array("s32", &[], None), array("pred", &[], None)]),
                Shape::Tuple(vec![]),
            ])
        );
        assert_eq!(*s[1], array("bf16", &[2, 8192, 4096], Some(&[2, 1, 0])));
        assert_eq!(*s[2], array("f32", &[8, 128], Some(&[1, 0])));
        assert_eq!(*s[3], array("f32", &[10, 3], None));
        assert_eq!(*s[4], Shape::Token);
        assert_eq!(*s[5], array("f8e4m3fn", &[4], Some(&[0])));
        assert_eq!(*s[6], array("s4", &[3], Some(&[0])));
        assert_eq!(*s[7], array("c128", &[], None));
        assert_eq!(*s[8], array("f32", &[2, 3], Some(&[1, 0])));
        assert_eq!(s[1].bytes(), 2 * 8192 * 4096 * 2);
    }

    #[test]
    fn header_shapes_and_layout_versus_body() {
        // A return shape without a layout, followed by the body's `{`.
        let m = ok("HloModule m\n\nENTRY %e (p: f32[2]{0}, q: (s32[], f32[2])) -> f32[2] {\n  ROOT %p = f32[2] parameter(0)\n}\n");
        assert_eq!(m.entry().instructions[0].shape, array("f32", &[2], None));
        let m = ok("HloModule m\nENTRY e () -> f32[2]{0} {\nROOT p = f32[2]{0} parameter(0)}");
        assert_eq!(m.entry().name, "e");
        assert_eq!(m.entry().instructions[0].name, "p");
        let m = ok("HloModule m\nENTRY %e () -> f32[] {ROOT %p = f32[] parameter(0)}");
        assert_eq!(m.entry().instructions[0].shape, array("f32", &[], None));
    }

    #[test]
    fn comments_whitespace_and_odd_layout() {
        let text = "// leading comment\r\nHloModule m /* c */, a=1 // trailing\r\n/* block\n comment */\r\nENTRY %e {\r\n  ROOT %t = (f32[], /*index=1*/ s32[]) tuple(/*index=0*/ %x,\n      /*index=1*/ %y), frontend_attributes={a=\"b\"} // done\r\n}, execution_thread=\"main\"\r\n";
        let m = ok(text);
        assert_eq!(m.attributes[0].value, "1");
        let t = &m.entry().instructions[0];
        assert_eq!(t.operands, ["x", "y"]);
        assert_eq!(t.attributes.len(), 1);
        assert_eq!(
            t.attribute("frontend_attributes").unwrap().value,
            "{a=\"b\"}"
        );
        assert_eq!(t.pos, Pos { line: 6, column: 3 });
    }

    #[test]
    fn bare_names_multiline_values_and_tables() {
        let text = "HloModule m\nENTRY main {\n  x = f32[] parameter(0)\n  ROOT y = f32[] negate(x), backend_config={\n    \"a\": [1,\n 2]}\n}\n\nFileNames\n1 \"a.py\"\nFunctionNames\n1 \"f\"\nFileLocations\n1 {file_name_id=1 function_name_id=1 line=2}\nStackFrames\n1 {file_location_id=1 parent_frame_id=0}\n";
        let m = ok(text);
        let y = &m.entry().instructions[1];
        assert_eq!(y.operands, ["x"]);
        assert_eq!(
            y.attribute("backend_config").unwrap().value,
            "{\n    \"a\": [1,\n 2]}"
        );
        // A computation may be called like a table keyword.
        let m = ok("HloModule m\nFileNames {\n ROOT a = f32[] constant(0)\n}\nENTRY e {\n ROOT b = f32[] call(), to_apply=FileNames\n}\n");
        assert_eq!(m.computations[0].name, "FileNames");
        // An instruction may be called `ROOT`.
        let m = ok("HloModule m\nENTRY e {\n ROOT = f32[] constant(0)\n}\n");
        assert!(!m.entry().instructions[0].is_root);
        assert_eq!(m.entry().instructions[0].name, "ROOT");
    }

    #[test]
    fn unicode_columns() {
        let (line, column, message) = err(
            "HloModule m\nENTRY e {\n  %a = f32[] custom-call(), metadata={op_name=\"é→ü\"} ?\n}",
        );
        assert_eq!((line, column), (3, 54), "{message}");
        let m = ok("\u{feff}HloModule m, k=\"ä\", j=2\nENTRY e {\n ROOT a = f32[] constant(0)\n}");
        assert_eq!(
            m.attributes[1].pos,
            Pos {
                line: 1,
                column: 23
            }
        );
    }

    // ----------------------------------------------------------------- malformed input

    #[test]
    fn empty_input() {
        fails("", 1, 1, "empty input");
        fails("  \n /* c */ \n", 3, 1, "empty input");
        fails(
            "HloModul m",
            1,
            1,
            "expected `HloModule` at the start of the module, found `HloModul`",
        );
    }

    #[test]
    fn unterminated_string() {
        fails(
            "HloModule m\nENTRY %e {\n  ROOT %c = f32[] custom-call(), custom_call_target=\"abc\n}\n",
            3,
            53,
            "unterminated string",
        );
        fails("HloModule m, a=\"x\\\"", 1, 16, "unterminated string");
    }

    #[test]
    fn missing_equals() {
        fails(
            "HloModule m\nENTRY %e {\n  %x f32[] parameter(0)\n}\n",
            3,
            6,
            "expected `=` after instruction name `%x`, found `f32`",
        );
        fails(
            "HloModule m\nENTRY %e {\n  %x (f32[] parameter(0)\n}\n",
            3,
            6,
            "expected `=` after instruction name `%x`, found `(`",
        );
        fails(
            "HloModule m\nENTRY %e {\n  ROOT %x = f32[] parameter(0), dimensions\n}\n",
            3,
            43,
            "expected `=` after attribute name `dimensions`, found end of line",
        );
        fails(
            "HloModule m\nENTRY %e {\n  ROOT %x = f32[] parameter(0), k=\n}\n",
            3,
            35,
            "expected a value for attribute `k`, found end of line",
        );
    }

    #[test]
    fn unbalanced_brackets() {
        fails(
            "HloModule m\nENTRY %e {\n  ROOT %x = f32[2]{0} reverse(%p), dimensions={0\n}",
            3,
            47,
            "unbalanced `{`",
        );
        fails(
            "HloModule m\nENTRY %e {\n  ROOT %x = f32[2]{0} reverse(%p), dimensions={0)\n}",
            3,
            49,
            "mismatched `)`: expected `}` to close the `{` at line 3, column 47",
        );
        // An unclosed `{` in the middle swallows the computation's `}`.
        fails(
            "HloModule m\nENTRY %e {\n  %x = f32[2]{0} reverse(%p), dimensions={0\n  ROOT %y = f32[2]{0} negate(%x)\n}\n",
            3,
            42,
            "unbalanced `{`: this value runs on over several lines",
        );
        let (line, _, message) = err("HloModule m\n%c {\n  %x = f32[2]{0} reverse(%p), dimensions={0\n  ROOT %y = f32[2]{0} negate(%x)\n}\nENTRY %e {\n  ROOT %z = f32[] constant(0)\n}\n");
        assert_eq!(line, 6, "{message}");
        assert!(
            message.contains("is a bracket unbalanced there?"),
            "{message}"
        );
        fails(
            "HloModule m\nENTRY %e {\n  ROOT %c = f32[] constant({1, 2)\n}",
            3,
            33,
            "mismatched `)`",
        );
        fails(
            "HloModule m\nENTRY %e {\n  ROOT %c = f32[] constant(1",
            3,
            27,
            "unbalanced `(`",
        );
        fails("HloModule m, a={\"}\"", 1, 16, "unbalanced `{`");
    }

    #[test]
    fn bad_shapes() {
        fails(
            "HloModule m\nENTRY %e {\n  ROOT %x = f32[2,x] parameter(0)\n}\n",
            3,
            19,
            "expected a dimension size in shape `f32[...]`, found `x`",
        );
        fails(
            "HloModule m\nENTRY %e {\n  ROOT %x = F32[2] parameter(0)\n}\n",
            3,
            13,
            "unknown element type `F32` in shape",
        );
        fails(
            "HloModule m\nENTRY %e {\n  ROOT %x = f_32[2] parameter(0)\n}\n",
            3,
            13,
            "unknown element type `f_32`",
        );
        fails(
            "HloModule m\nENTRY %e {\n  ROOT %x = parameter(0)\n}\n",
            3,
            13,
            "expected a shape such as",
        );
        fails(
            "HloModule m\nENTRY %e {\n  ROOT %x = f32[?] parameter(0)\n}\n",
            3,
            17,
            "unbounded dynamic dimension",
        );
        fails(
            "HloModule m\nENTRY %e {\n  ROOT %x = f32[2]{0,x} parameter(0)\n}\n",
            3,
            22,
            "expected a dimension number, `:` or `}` in a layout, found `x`",
        );
        fails(
            "HloModule m\nENTRY %e {\n  ROOT %x = f32[2]{0 1} parameter(0)\n}\n",
            3,
            22,
            "expected `,`, `:` or `}` in a layout, found `1`",
        );
        fails(
            "HloModule m\nENTRY %e {\n  ROOT %x = (f32[2] s32[]) parameter(0)\n}\n",
            3,
            21,
            "expected `,` or `)` in a tuple shape, found `s32`",
        );
        fails(
            "HloModule m\nENTRY %e {\n  ROOT %x = token[1] after-all()\n}\n",
            3,
            19,
            "`token[]` has no dimensions",
        );
    }

    #[test]
    fn integer_overflow() {
        fails(
            "HloModule m\nENTRY %e {\n  ROOT %x = f32[2,18446744073709551616] parameter(0)\n}\n",
            3,
            19,
            "dimension size `18446744073709551616` does not fit in 64 bits",
        );
        // u64::MAX parses, but the size in bytes overflows.
        fails(
            "HloModule m\nENTRY %e {\n  ROOT %x = f32[18446744073709551615] parameter(0)\n}\n",
            3,
            13,
            "shape is too large",
        );
        fails(
            "HloModule m\nENTRY %e {\n  ROOT %x = (u8[4294967296,4294967295], u8[4294967296,4294967295]) parameter(0)\n}\n",
            3,
            13,
            "tuple shape is too large",
        );
        fails(
            "HloModule m\nENTRY %e {\n  ROOT %x = f32[2]{99999999999999999999} parameter(0)\n}\n",
            3,
            20,
            "layout dimension",
        );
    }

    #[test]
    fn entry_checks() {
        fails(
            "HloModule m\n%c {\n  ROOT %x = f32[] parameter(0)\n}\n",
            5,
            1,
            "no ENTRY computation",
        );
        fails("HloModule m", 1, 12, "no ENTRY computation");
        fails(
            "HloModule m\n\n\nENTRY %a {\n  ROOT %x = f32[] parameter(0)\n}\n\n\nENTRY %b {\n  ROOT %x = f32[] parameter(0)\n}\n",
            9,
            1,
            "two ENTRY computations (line 4 and line 9)",
        );
        fails(
            "HloModule m\n%a {\n ROOT %x = f32[] parameter(0)\n}\nENTRY %a {\n ROOT %x = f32[] parameter(0)\n}\n",
            5,
            7,
            "duplicate computation `%a` (first at line 2)",
        );
    }

    #[test]
    fn instruction_checks() {
        fails(
            "HloModule m\nENTRY %e {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n  ROOT %a = f32[] add(%a, %b)\n}\n",
            5,
            8,
            "duplicate instruction `%a` (first at line 3)",
        );
        fails(
            "HloModule m\nENTRY %e {\n  ROOT %a = f32[] parameter(0)\n  ROOT %b = f32[] parameter(1)\n}\n",
            4,
            8,
            "two ROOT instructions in computation `%e` (line 3 and line 4)",
        );
        fails(
            "HloModule m\nENTRY %e {\n}\n",
            2,
            10,
            "computation `%e` has no instructions",
        );
        fails(
            "HloModule m\nENTRY %e {\n  ROOT %a = f32[] parameter(0)\n",
            4,
            1,
            "computation `%e` (line 2) is not closed",
        );
        fails(
            "HloModule m\nENTRY %e {\n  %a = f32[] parameter(0)}\n  ROOT %b = f32[] negate(%a)\n}\n",
            4,
            8,
            "instruction `%b` outside any computation",
        );
        fails(
            "HloModule m\nENTRY %e {\n  ROOT %a = f32[] 1parameter(0)\n}\n",
            3,
            19,
            "expected an opcode after the shape of `%a`, found `1parameter`",
        );
    }

    #[test]
    fn garbage_after_header() {
        fails(
            "HloModule m foo\nENTRY %e {\n  ROOT %a = f32[] parameter(0)\n}\n",
            1,
            13,
            "expected `,` or the end of the line after the module header, found `foo`",
        );
        fails(
            "HloModule m, \nENTRY %e {\n}",
            1,
            14,
            "expected an attribute name after `,`, found end of line",
        );
        fails(
            "HloModule\nENTRY",
            1,
            10,
            "expected a module name after `HloModule`, found end of line",
        );
        fails(
            "HloModule m\nENTRY %e (p: f32[]) f32[] {\n  ROOT %a = f32[] parameter(0)\n}\n",
            2,
            21,
            "expected `->` after the parameters of computation `%e`, found `f32`",
        );
        fails(
            "HloModule m\nENTRY %e (p f32[]) -> f32[] {\n  ROOT %a = f32[] parameter(0)\n}\n",
            2,
            13,
            "expected `:` after parameter `p`",
        );
        fails("HloModule m\n$ {\n}\n", 2, 1, "expected a computation");
        fails(
            "HloModule m\nHloModule n\n",
            2,
            1,
            "a second `HloModule` header",
        );
    }

    #[test]
    fn missing_parenthesis() {
        fails(
            "HloModule m\nENTRY %e {\n  %a = f32[] parameter(0)\n  %b = f32[] add(%a, %a\n  ROOT %c = f32[] negate(%b)\n}\n",
            4,
            24,
            "expected `,` or `)` after operand `%a`, found end of line",
        );
        fails(
            "HloModule m\nENTRY %e {\n  ROOT %b = f32[] add %a\n}\n",
            3,
            23,
            "expected `(` after opcode `add`, found `%a`",
        );
        fails(
            "HloModule m\nENTRY %e {\n  ROOT %b = f32[] add(%a,)\n}\n",
            3,
            26,
            "expected an operand name, found `)`",
        );
    }

    #[test]
    fn deep_nesting() {
        let deep = format!(
            "HloModule m\nENTRY %e {{\n  ROOT %x = {}f32[]{} parameter(0)\n}}\n",
            "(".repeat(300),
            ")".repeat(300)
        );
        fails(
            &deep,
            3,
            13 + MAX_DEPTH,
            "tuple shapes nested deeper than 256",
        );
        let ok_depth = format!(
            "HloModule m\nENTRY %e {{\n  ROOT %x = {}f32[]{} parameter(0)\n}}\n",
            "(".repeat(MAX_DEPTH),
            ")".repeat(MAX_DEPTH)
        );
        ok(&ok_depth);
        let brackets = format!(
            "HloModule m, a={}{}\n",
            "{".repeat(100_000),
            "}".repeat(100_000)
        );
        fails(
            &brackets,
            1,
            16 + MAX_DEPTH,
            "brackets nested deeper than 256",
        );
    }

    #[test]
    fn unterminated_comment() {
        fails(
            "HloModule m\nENTRY %e { /* never\n closed",
            2,
            12,
            "unterminated comment",
        );
    }

    #[test]
    fn never_panics_on_truncations() {
        // Every prefix of a valid module either parses or fails with a syntax error.
        for (cut, _) in SAMPLE.char_indices() {
            match parse(&SAMPLE[..cut]) {
                Ok(_) | Err(HloError::Syntax { .. }) => {}
                Err(e) => panic!("{e}"),
            }
        }
    }

    /// Parses the real Llama 3.1 8B module when `CONCERTO_SHARED` (default `../shared` from
    /// the workspace) has it. Run with
    /// `cargo test --release -p concerto-extract -- --ignored --nocapture real_module`.
    #[test]
    #[ignore = "reads the shared 3 MB module; run in release with --ignored --nocapture"]
    fn real_module() {
        let dir = std::env::var("CONCERTO_SHARED")
            .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared").into());
        let path = std::path::Path::new(&dir).join("hlo/llama31_8b_bf16_1x8.hlo");
        let Ok(text) = std::fs::read_to_string(&path) else {
            eprintln!("skipped: {} is missing", path.display());
            return;
        };
        let start = std::time::Instant::now();
        let module = parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let elapsed = start.elapsed();
        let instructions: usize = module
            .computations
            .iter()
            .map(|c| c.instructions.len())
            .sum();
        eprintln!(
            "parsed {} ({} bytes): {} computations, {} instructions ({} in the entry) in {:.1} ms",
            path.display(),
            text.len(),
            module.computations.len(),
            instructions,
            module.entry().instructions.len(),
            elapsed.as_secs_f64() * 1e3
        );
        assert_eq!(module.name, "jit_train_step");
        assert!(module.entry().instructions.len() > 10_000);
    }
}
