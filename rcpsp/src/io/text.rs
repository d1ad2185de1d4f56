//! A token cursor over text that remembers lines and columns, for the text formats.

use super::ReadError;

/// A whitespace-separated token with its 1-based position.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Token<'a> {
    pub(crate) text: &'a str,
    pub(crate) line: usize,
    pub(crate) column: usize,
}

/// Tokens of a text, in order, with positions.
pub(crate) struct Tokens<'a> {
    file: &'a str,
    tokens: Vec<Token<'a>>,
    next: usize,
    /// Line and column just after the last character, and how to call that place.
    end: (usize, usize, &'static str),
}

impl<'a> Tokens<'a> {
    /// Tokens of `lines` (1-based numbers given with each line).
    pub(crate) fn new(file: &'a str, lines: impl Iterator<Item = (usize, &'a str)>) -> Self {
        let mut tokens = Vec::new();
        let mut end = (1, 1, "end of input");
        let mut count = 0;
        for (number, line) in lines {
            count += 1;
            end = (number, line.chars().count() + 1, "end of input");
            let mut rest = line;
            let mut offset = 0;
            while let Some(start) = rest.find(|c: char| !c.is_whitespace()) {
                let len = rest[start..]
                    .find(char::is_whitespace)
                    .unwrap_or(rest.len() - start);
                tokens.push(Token {
                    text: &rest[start..start + len],
                    line: number,
                    column: line[..offset + start].chars().count() + 1,
                });
                offset += start + len;
                rest = &rest[start + len..];
            }
        }
        if count == 1 {
            end.2 = "end of line";
        }
        Self {
            file,
            tokens,
            next: 0,
            end,
        }
    }

    /// The next token, or a syntax error naming `expected`.
    pub(crate) fn next(&mut self, expected: &str) -> Result<Token<'a>, ReadError> {
        match self.tokens.get(self.next) {
            Some(&t) => {
                self.next += 1;
                Ok(t)
            }
            None => Err(ReadError::Syntax {
                file: self.file.to_owned(),
                line: self.end.0,
                column: self.end.1,
                expected: expected.to_owned(),
                found: self.end.2.to_owned(),
            }),
        }
    }

    /// The next token parsed as `T`.
    pub(crate) fn number<T: std::str::FromStr>(
        &mut self,
        expected: &str,
    ) -> Result<(T, Token<'a>), ReadError> {
        let t = self.next(expected)?;
        t.text
            .parse::<T>()
            .map(|v| (v, t))
            .map_err(|_| self.error_at(t, expected))
    }

    /// The next token without consuming it.
    pub(crate) fn peek(&self) -> Option<Token<'a>> {
        self.tokens.get(self.next).copied()
    }

    /// A syntax error at `t`.
    pub(crate) fn error_at(&self, t: Token<'_>, expected: &str) -> ReadError {
        ReadError::Syntax {
            file: self.file.to_owned(),
            line: t.line,
            column: t.column,
            expected: expected.to_owned(),
            found: format!("`{}`", t.text),
        }
    }
}
