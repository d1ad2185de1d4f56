//! Shapes: arrays with their dimensions and layouts, tuples, tokens; sizes checked for
//! overflow.

use super::{abbreviate, is_dtype, PResult, Parser, MAX_DEPTH};
use crate::hlo::ast::{element_bytes, Shape};

impl<'a> Parser<'a> {
    // ---------------------------------------------------------------- shapes

    /// A shape, with its size in bytes. `depth` counts the enclosing tuples.
    pub(super) fn shape(&mut self, depth: usize) -> PResult<(Shape, u64)> {
        let start = self.at;
        if self.peek() == Some(b'(') {
            return self.tuple_shape(depth);
        }
        if let Some(open) = self.buffer_at(start) {
            // A buffer `b(shape)`: costed as the shape it holds.
            if depth >= MAX_DEPTH {
                return Err(self.error(
                    start,
                    format!("shapes nested deeper than {MAX_DEPTH} levels"),
                ));
            }
            self.at = open + 1;
            self.skip_ws()?;
            let inner = self.shape(depth + 1)?;
            self.skip_ws()?;
            if self.peek() != Some(b')') {
                return Err(self.expected(self.at, "`)` to close a buffer shape `b(...)`"));
            }
            self.at += 1;
            return Ok(inner);
        }
        let end = self.run(start, |c| c.is_ascii_alphanumeric() || c == b'_');
        let Some(bracket) = self.array_bracket(start) else {
            return Err(self.expected(
                start,
                "a shape such as `f32[2,3]{1,0}` or `(s32[], pred[])`",
            ));
        };
        let dtype = self.slice(start, end);
        self.at = bracket + 1; // past `[`
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
                    Some(b'?') => match self.unbounded {
                        Some(size) => {
                            self.at += 1;
                            dims.push(size);
                        }
                        None => {
                            return Err(self.error(
                                self.at,
                                "unbounded dynamic dimension `?`: a dimension needs a size \
                                 to be costed; give one with `--unbounded-dim-size N` \
                                 (ImportOptions::unbounded_dim_size)",
                            ))
                        }
                    },
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
    pub(super) fn tuple_shape(&mut self, depth: usize) -> PResult<(Shape, u64)> {
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
    pub(super) fn layout_at(&self, off: usize) -> bool {
        let next = self.run(off + 1, |c| c.is_ascii_whitespace());
        self.byte(next)
            .is_some_and(|c| c.is_ascii_digit() || c == b':' || c == b'}')
    }

    /// A layout `{2,1,0}` or `{1,0:T(8,128)(2,1)S(1)}`, at its `{`: the minor-to-major list,
    /// with what follows `:` (tiling, memory space, ...) checked for balance and dropped.
    pub(super) fn layout(&mut self) -> PResult<Vec<u64>> {
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
}
