//! The scanner: positions and errors, whitespace and comments, strings, balanced brackets,
//! names and integers.

use super::{abbreviate, closer, is_ident_start, is_name_byte, PResult, Parser, MAX_DEPTH};
use crate::hlo::ast::Pos;
use crate::hlo::HloError;

impl<'a> Parser<'a> {
    // ---------------------------------------------------------------- positions, errors

    /// The line and column of byte offset `off`.
    pub(super) fn pos(&mut self, off: usize) -> Pos {
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
    pub(super) fn error(&mut self, off: usize, message: impl Into<String>) -> HloError {
        let Pos { line, column } = self.pos(off);
        HloError::Syntax {
            line,
            column,
            message: message.into(),
        }
    }

    /// "expected WHAT, found TOKEN" at `off`.
    pub(super) fn expected(&mut self, off: usize, what: &str) -> HloError {
        let found = self.found(off);
        self.error(off, format!("expected {what}, found {found}"))
    }

    /// "expected WHAT, found TOKEN" for the token at the cursor, which whitespace skipped
    /// from `after` led to; when that whitespace crossed a line end, the error is placed at
    /// the end of `after`'s line instead (a missing token is more likely there).
    pub(super) fn expected_after(&mut self, after: usize, what: &str) -> HloError {
        let gap = self.bytes.get(after..self.at).unwrap_or_default();
        let off = match gap.iter().position(|&c| c == b'\n') {
            Some(newline) => after + newline,
            None => self.at,
        };
        self.expected(off, what)
    }

    /// Describes the token at `off` for a message: "`word`", "`c`", "end of line" or
    /// "end of input".
    pub(super) fn found(&self, off: usize) -> String {
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
    pub(super) fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    /// The byte at `off`.
    pub(super) fn byte(&self, off: usize) -> Option<u8> {
        self.bytes.get(off).copied()
    }

    /// Whether the text at the cursor starts with `s`.
    pub(super) fn looking_at(&self, s: &[u8]) -> bool {
        self.bytes
            .get(self.at..)
            .is_some_and(|rest| rest.starts_with(s))
    }

    /// The text between two byte offsets (empty if they are not character boundaries, which
    /// the parser never asks for).
    pub(super) fn slice(&self, from: usize, to: usize) -> &'a str {
        self.src.get(from..to).unwrap_or_default()
    }

    /// The end of the run of bytes satisfying `pred` that starts at `from`.
    pub(super) fn run(&self, from: usize, pred: impl Fn(u8) -> bool) -> usize {
        let rest = self.bytes.get(from..).unwrap_or_default();
        from + rest.iter().take_while(|&&c| pred(c)).count()
    }

    /// The keyword-like word at `off` (`[A-Za-z_][A-Za-z0-9_.-]*`), or `""`.
    pub(super) fn word_at(&self, off: usize) -> &'a str {
        if !self.byte(off).is_some_and(is_ident_start) {
            return "";
        }
        self.slice(off, self.run(off, is_name_byte))
    }

    /// Skips whitespace, newlines included, and comments.
    pub(super) fn skip_ws(&mut self) -> PResult<()> {
        self.skip(true)
    }

    /// Skips whitespace and comments up to the end of the line (a block comment may span
    /// lines).
    pub(super) fn skip_inline(&mut self) -> PResult<()> {
        self.skip(false)
    }

    /// Skips whitespace (newlines when `newlines`) and comments.
    pub(super) fn skip(&mut self, newlines: bool) -> PResult<()> {
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
    pub(super) fn comment_end(&mut self, start: usize) -> PResult<usize> {
        let body = self.src.get(start + 2..).unwrap_or_default();
        match body.find("*/") {
            Some(end) => Ok(start + 2 + end + 2),
            None => Err(self.error(start, "unterminated comment: `/*` without `*/`")),
        }
    }

    /// The offset of the end of the line that `from` is on (its `\n`, or the end of input).
    pub(super) fn line_end(&self, from: usize) -> usize {
        self.run(from, |c| c != b'\n')
    }

    /// The offset after the string literal that starts at `start` (at `"`); backslashes
    /// escape the next character.
    pub(super) fn string_end(&mut self, start: usize) -> PResult<usize> {
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
    pub(super) fn balanced(&mut self, close: Option<(u8, usize)>) -> PResult<usize> {
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

    /// The end of the mesh form of replica groups when one starts at the cursor
    /// (`mesh['x'=2,'y'=4] {'y'}`, `mesh['a'=4], device_ids=(3,1,0,2) {'a':(1)2}`,
    /// `maximal_mesh[device_id=0] {}`), without moving the cursor; `None` when the text there
    /// is not `mesh[` or `maximal_mesh[`. It is the one attribute value with whitespace and a
    /// comma outside brackets: the value runs through the `{...}` axis list that follows the
    /// mesh (after optional whitespace, newlines included, as XLA's lexer skips them), or
    /// ends after the mesh when no `{` follows (the accessor then reports it). Quotes `'` and
    /// `"` delimit names inside.
    pub(super) fn mesh_value_end(&mut self) -> PResult<Option<usize>> {
        let word = self.word_at(self.at);
        let open = self.at + word.len();
        if !matches!(word, "mesh" | "maximal_mesh") || self.byte(open) != Some(b'[') {
            return Ok(None);
        }
        let is_space = |c: u8| matches!(c, b' ' | b'\t' | b'\n' | b'\r');
        let mut end = self.quoted_bracket_end(open)?;
        // `, device_ids=(...)`, detected by lookahead as XLA's `ParseMesh` does.
        let comma = self.run(end, is_space);
        if word == "mesh" && self.byte(comma) == Some(b',') {
            let key = self.run(comma + 1, is_space);
            if self.word_at(key) == "device_ids" {
                let eq = self.run(key + "device_ids".len(), is_space);
                let paren = self.run(eq + 1, is_space);
                if self.byte(eq) == Some(b'=') && self.byte(paren) == Some(b'(') {
                    end = self.quoted_bracket_end(paren)?;
                }
            }
        }
        let brace = self.run(end, is_space);
        if self.byte(brace) == Some(b'{') {
            end = self.quoted_bracket_end(brace)?;
        }
        Ok(Some(end))
    }

    /// The offset after the bracket that closes the one at `open`, with `'...'` and `"..."`
    /// quotes skipped (a backslash escapes the next character). A bracket closed on a later
    /// line becomes the computation's multiline hint, as in [`Parser::balanced`].
    fn quoted_bracket_end(&mut self, open: usize) -> PResult<usize> {
        let mut stack: Vec<(u8, usize)> = Vec::new();
        let mut i = open;
        while let Some(c) = self.byte(i) {
            match c {
                b'\'' | b'"' => {
                    let mut j = i + 1;
                    loop {
                        match self.byte(j) {
                            Some(b'\\') => j += 2,
                            Some(q) if q == c => break,
                            Some(_) => j += 1,
                            None => {
                                let q = char::from(c);
                                return Err(self.error(
                                    i,
                                    format!("unterminated name: `{q}` without a closing `{q}`"),
                                ));
                            }
                        }
                    }
                    i = j + 1;
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
                    let Some((want, at)) = stack.pop() else {
                        break;
                    };
                    if want != c {
                        let p = self.pos(at);
                        let opener = self.byte(at).map_or('?', char::from);
                        return Err(self.error(
                            i,
                            format!(
                                "mismatched `{}`: expected `{}` to close the `{opener}` at line \
                                 {}, column {}",
                                char::from(c),
                                char::from(want),
                                p.line,
                                p.column
                            ),
                        ));
                    }
                    i += 1;
                    if stack.is_empty() {
                        let spans_lines = self.slice(open, i).contains('\n');
                        if spans_lines && self.multiline.is_none() {
                            // The likely culprit if the computation is not closed.
                            self.multiline = Some(open);
                        }
                        return Ok(i);
                    }
                }
                _ => i += 1,
            }
        }
        let opener = self.byte(open).map_or('?', char::from);
        Err(self.error(
            open,
            format!(
                "unbalanced `{opener}`: no matching `{}` before the end of input",
                char::from(closer(self.byte(open).unwrap_or(b'(')))
            ),
        ))
    }

    // ---------------------------------------------------------------- tokens

    /// A name, `%name` or `name`, returned without `%`. `what` describes it in errors.
    pub(super) fn name(&mut self, what: &str) -> PResult<&'a str> {
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
    pub(super) fn uint(&mut self, what: &str) -> PResult<u64> {
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

    /// Whether a shape such as `f32[` (an element type followed by `[`, spaces between
    /// allowed as XLA's lexer allows them: `s32 [4]`) starts at `off`.
    pub(super) fn array_shape_at(&self, off: usize) -> bool {
        self.array_bracket(off).is_some()
    }

    /// The offset of the `[` of a shape such as `f32[` or `s32 [` that starts at `off`.
    pub(super) fn array_bracket(&self, off: usize) -> Option<usize> {
        let end = self.run(off, |c| c.is_ascii_alphanumeric() || c == b'_');
        let bracket = self.run(end, |c| c == b' ' || c == b'\t');
        (end > off
            && self.byte(off).is_some_and(is_ident_start)
            && self.byte(bracket) == Some(b'['))
        .then_some(bracket)
    }

    /// Whether a shape starts at `off`: an array (`f32[`), a tuple (`(`) or a buffer
    /// (`b(f32[2])`).
    pub(super) fn shape_at(&self, off: usize) -> bool {
        self.byte(off) == Some(b'(') || self.array_shape_at(off) || self.buffer_at(off).is_some()
    }

    /// The offset of the `(` of a buffer shape `b(f32[2])` that starts at `off`.
    pub(super) fn buffer_at(&self, off: usize) -> Option<usize> {
        if self.word_at(off) != "b" {
            return None;
        }
        let open = self.run(off + 1, |c| c == b' ' || c == b'\t');
        (self.byte(open) == Some(b'(')).then_some(open)
    }
}
