//! Replica groups ([`ReplicaGroups`]): the three forms XLA prints, read from an attribute
//! ([`Attribute::replica_groups`], the mesh form by a small cursor) and expanded to device
//! ids ([`ReplicaGroups::expand`]) as XLA does.

use super::Attribute;
use crate::hlo::HloError;

/// Replica groups, in any of the three forms XLA prints and parses
/// (`ParseCollectiveDeviceListBase` in XLA's `xla/hlo/parser/hlo_parser.cc`).
///
/// The ids are what the list form's ids would be: replica, partition or global device ids,
/// depending on the instruction's `channel_id` and `use_global_device_ids`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReplicaGroups {
    /// `{{0,1},{2,3}}` (`{}`: no list, which XLA reads as one group of every device).
    Explicit(Vec<Vec<u64>>),
    /// `[G,S]<=[d0,d1,...]` optionally followed by `T(p0,p1,...)`: G groups of S devices, the
    /// devices being iota over the reshape dims, transposed by the permutation, then
    /// flattened.
    Iota {
        /// Number of groups.
        groups: u64,
        /// Devices per group.
        size: u64,
        /// The reshape dimensions of the iota.
        reshape: Vec<u64>,
        /// The permutation applied after the reshape (identity when absent).
        transpose: Option<Vec<usize>>,
    },
    /// The mesh form (XLA's `MeshAxesReplicaGroupList`, which JAX 0.10 writes):
    /// `mesh['axis_0'=8,'axis_1'=1] {'axis_0'}`,
    /// `mesh['a'=2,'b'=4], device_ids=([2,4]T(1,0)) {'a','b':(1)2}`,
    /// `maximal_mesh[device_id=3] {}`.
    ///
    /// The devices form an array over the mesh axes, row-major (the first axis most major).
    /// A group fixes the position on every axis it does not list and spans the listed
    /// (sub-)axes, the first listed being the most major inside the group; the groups come in
    /// row-major order of the positions on the unlisted axes. See [`ReplicaGroups::expand`].
    Mesh {
        /// The mesh axes, major to minor: name and size. None for `maximal_mesh[...]` and
        /// `mesh[]`.
        axes: Vec<(String, u64)>,
        /// The device at each position of the mesh, row-major over `axes`: `None` for
        /// `0..N` (no `device_ids=`); otherwise the `device_ids=(d0,d1,...)` list, or its iota
        /// form `[r0,r1,...]T(p...)` expanded; `[N]` for `maximal_mesh[device_id=N]`.
        devices: Option<Vec<u64>>,
        /// The (sub-)axes each group spans, in the order listed.
        over: Vec<MeshAxis>,
    },
}

/// One entry of a mesh form's axis list: a whole axis `'x'` or a sub-axis `'x':(pre)size`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MeshAxis {
    /// The index of the axis in the mesh.
    pub axis: usize,
    /// For a sub-axis `'x':(pre)size`, `(pre, size)`: the axis, of size n, is viewed as the
    /// dimensions `[pre, size, n / (pre * size)]` (major to minor), and the groups span the
    /// middle one.
    pub sub: Option<(u64, u64)>,
}

/// The most devices a replica-group form may describe (16 M), so that expanding one stays
/// cheap.
const MAX_DEVICES: u64 = 1 << 24;

/// The linear (row-major) index into an array of dimensions `dims` of each element of its
/// transpose by `perm`, in the transpose's row-major order: `iota(prod dims).reshape(dims)
/// .transpose(perm)` flattened. Empty when `perm` is not a permutation of the dimensions.
/// O(product of dims * dims).
fn transposed(dims: &[u64], perm: &[usize]) -> Vec<u64> {
    let n = dims.len();
    let mut sorted = perm.to_vec();
    sorted.sort_unstable();
    if sorted != (0..n).collect::<Vec<_>>() {
        return Vec::new();
    }
    let total: u64 = dims.iter().product();
    // Row-major strides of `dims`, then walk the permuted dims.
    let mut stride = vec![1u64; n];
    for i in (0..n.saturating_sub(1)).rev() {
        stride[i] = stride[i + 1] * dims[i + 1];
    }
    let pdims: Vec<u64> = perm.iter().map(|&p| dims[p]).collect();
    let mut out = Vec::with_capacity(total as usize);
    let mut idx = vec![0u64; n];
    for _ in 0..total {
        out.push((0..n).map(|k| idx[k] * stride[perm[k]]).sum());
        for k in (0..n).rev() {
            idx[k] += 1;
            if idx[k] < pdims[k] {
                break;
            }
            idx[k] = 0;
        }
    }
    out
}

impl ReplicaGroups {
    /// The device ids of each group. O(devices * mesh axes).
    ///
    /// The mesh form follows XLA's `MeshAxesReplicaGroupList::flattened_replica_groups`
    /// (`xla/hlo/ir/replica_group.cc`): each mesh axis is reshaped so that every listed
    /// sub-axis is a dimension of its own (`'a':(pre)size` on an axis of size n gives
    /// `[pre, size, n / (pre * size)]`; several sub-axes of one axis are sorted by `pre`,
    /// with padding dimensions between them), the device array is transposed so that the
    /// unlisted dimensions come first (in mesh order) and the listed ones last (in the order
    /// listed), and the result is cut into groups of the listed dimensions' product. A mesh
    /// form that [`Attribute::replica_groups`] did not check may expand to no group.
    pub fn expand(&self) -> Vec<Vec<u64>> {
        match self {
            ReplicaGroups::Explicit(g) => g.clone(),
            ReplicaGroups::Iota {
                groups,
                size,
                reshape,
                transpose,
            } => {
                let ids: Vec<u64> = match transpose {
                    None => (0..reshape.iter().product()).collect(),
                    Some(perm) => transposed(reshape, perm),
                };
                ids.chunks(*size.max(&1) as usize)
                    .take(*groups as usize)
                    .map(<[u64]>::to_vec)
                    .collect()
            }
            ReplicaGroups::Mesh {
                axes,
                devices,
                over,
            } => mesh_groups(axes, devices.as_deref(), over).unwrap_or_default(),
        }
    }
}

/// The groups of a mesh form (see [`ReplicaGroups::expand`]); `None` when the form is
/// inconsistent (sizes that do not divide, a device list of the wrong length).
fn mesh_groups(
    axes: &[(String, u64)],
    devices: Option<&[u64]>,
    over: &[MeshAxis],
) -> Option<Vec<Vec<u64>>> {
    if axes.is_empty() {
        // `maximal_mesh[device_id=N] {}`: one group of its device; `mesh[] {}`: no device.
        return match devices {
            Some(d) if over.is_empty() && d.len() == 1 => Some(vec![d.to_vec()]),
            Some(_) => None,
            None => Some(Vec::new()),
        };
    }
    // The reshaped dimensions, and the dimension of each listed (sub-)axis.
    let mut dims: Vec<u64> = Vec::new();
    let mut grouped: Vec<Option<usize>> = vec![None; over.len()];
    for (a, &(_, n)) in axes.iter().enumerate() {
        let refs: Vec<usize> = (0..over.len()).filter(|&k| over[k].axis == a).collect();
        match refs.as_slice() {
            [] => dims.push(n),
            [k] => match over[*k].sub {
                None => {
                    grouped[*k] = Some(dims.len());
                    dims.push(n);
                }
                Some((pre, size)) => {
                    let inner = pre.checked_mul(size).filter(|&p| p > 0 && n % p == 0)?;
                    grouped[*k] = Some(dims.len() + 1);
                    dims.extend([pre, size, n / inner]);
                }
            },
            _ => {
                let mut sorted = refs.clone();
                sorted.sort_by_key(|&k| over[k].sub.map_or(0, |s| s.0));
                let mut prefix = 1u64;
                for k in sorted {
                    let (pre, size) = over[k].sub?;
                    if pre != prefix {
                        if prefix == 0 || pre % prefix != 0 {
                            return None;
                        }
                        dims.push(pre / prefix);
                        prefix = pre;
                    }
                    grouped[k] = Some(dims.len());
                    dims.push(size);
                    prefix = prefix.checked_mul(size)?;
                }
                if prefix == 0 || n % prefix != 0 {
                    return None;
                }
                if prefix != n {
                    dims.push(n / prefix);
                }
            }
        }
    }
    let grouped: Vec<usize> = grouped.into_iter().collect::<Option<_>>()?;
    let total = dims
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .filter(|&t| t <= MAX_DEVICES)?;
    let n: u64 = axes.iter().map(|a| a.1).product();
    if total != n || devices.is_some_and(|d| d.len() as u64 != n) {
        return None;
    }
    let per_group: u64 = grouped.iter().map(|&g| dims[g]).product();
    let mut perm: Vec<usize> = (0..dims.len()).filter(|d| !grouped.contains(d)).collect();
    perm.extend(&grouped);
    let positions = transposed(&dims, &perm);
    if positions.len() as u64 != total || per_group == 0 {
        return None;
    }
    let ids: Vec<u64> = match devices {
        None => positions,
        Some(d) => positions.iter().map(|&p| d[p as usize]).collect(),
    };
    Some(
        ids.chunks(per_group as usize)
            .map(<[u64]>::to_vec)
            .collect(),
    )
}

impl Attribute {
    /// Replica groups in any of the three forms (see [`ReplicaGroups`]), checked as XLA's
    /// parser and `Mesh`/`AxisRef` validation check them: counts that match, permutations,
    /// known axes, sub-axes that divide their axis and do not overlap.
    pub fn replica_groups(&self) -> Result<ReplicaGroups, HloError> {
        let trimmed = self.value.trim_start();
        if trimmed.starts_with("mesh") || trimmed.starts_with("maximal_mesh") {
            return MeshText {
                attr: self,
                text: trimmed,
                at: 0,
            }
            .groups();
        }
        let v: String = self.value.chars().filter(|c| !c.is_whitespace()).collect();
        if let Some(rest) = v.strip_prefix('[') {
            // [G,S]<=[dims]T(perm)
            let (gs, rest) = rest
                .split_once("]<=[")
                .ok_or_else(|| self.error(format!("expected `[G,S]<=[d...]`, found `{v}`")))?;
            let (dims, tail) = rest
                .split_once(']')
                .ok_or_else(|| self.error("unterminated reshape dims"))?;
            let nums = |s: &str| -> Result<Vec<u64>, HloError> {
                s.split(',')
                    .filter(|x| !x.is_empty())
                    .map(|x| {
                        x.parse::<u64>()
                            .map_err(|_| self.error(format!("`{x}` is not a count")))
                    })
                    .collect()
            };
            let gs = nums(gs)?;
            let reshape = nums(dims)?;
            let (groups, size) = match gs.as_slice() {
                [g, s] => (*g, *s),
                [g] => (*g, 1),
                _ => return Err(self.error("expected two counts `[G,S]`")),
            };
            let transpose = if tail.is_empty() {
                None
            } else {
                let perm = tail
                    .strip_prefix("T(")
                    .and_then(|s| s.strip_suffix(')'))
                    .ok_or_else(|| self.error(format!("expected `T(p...)`, found `{tail}`")))?;
                let perm: Vec<usize> = nums(perm)?.into_iter().map(|p| p as usize).collect();
                let mut sorted = perm.clone();
                sorted.sort_unstable();
                if sorted != (0..reshape.len()).collect::<Vec<_>>() {
                    return Err(self.error("the transpose is not a permutation of the dims"));
                }
                Some(perm)
            };
            let total: u64 = reshape
                .iter()
                .try_fold(1u64, |a, &d| a.checked_mul(d))
                .ok_or_else(|| self.error("too many devices"))?;
            if groups.checked_mul(size) != Some(total) || total > 1 << 24 {
                // XLA rejects it too ("does not match the tile assignment dimensions
                // product", its parser test `CollectiveDeviceListIotaSizeMismatch`).
                return Err(self.error(format!(
                    "{groups} groups of {size} devices do not match the {total} devices of \
                     the iota `<=[...]` (the tile assignment dimensions product)"
                )));
            }
            return Ok(ReplicaGroups::Iota {
                groups,
                size,
                reshape,
                transpose,
            });
        }
        let inner = v
            .strip_prefix('{')
            .and_then(|s| s.strip_suffix('}'))
            .ok_or_else(|| {
                self.error(format!(
                    "expected `{{{{0,1}},...}}` or `[G,S]<=[N]`, found `{v}`"
                ))
            })?;
        if inner.is_empty() {
            return Ok(ReplicaGroups::Explicit(Vec::new()));
        }
        let mut groups = Vec::new();
        for part in inner.split("},") {
            let g = part.trim_start_matches('{').trim_end_matches('}');
            let ids = g
                .split(',')
                .filter(|x| !x.is_empty())
                .map(|x| {
                    x.parse::<u64>()
                        .map_err(|_| self.error(format!("`{x}` is not a device id")))
                })
                .collect::<Result<Vec<_>, _>>()?;
            groups.push(ids);
        }
        Ok(ReplicaGroups::Explicit(groups))
    }
}

/// A cursor over the mesh form of replica groups, for [`Attribute::replica_groups`]. The
/// grammar follows XLA's `ParseMesh` and `ParseAxisRefList`:
///
/// ```text
/// mesh-form ::= mesh '{' (axis-ref (',' axis-ref)*)? '}'
/// mesh      ::= 'mesh' '[' (name '=' int (',' name '=' int)*)? ']'
///                 (',' 'device_ids' '=' '(' ('[' ints ']' ('T' '(' ints ')')? | ints?) ')')?
///             | 'maximal_mesh' '[' 'device_id' '=' int ']'
/// axis-ref  ::= name (':' '(' int ')' int)?        -- a quoted axis name, or its index
/// name      ::= "'" chars "'" | '"' chars '"'
/// ```
///
/// Whitespace may separate any two tokens.
struct MeshText<'a> {
    /// The attribute, for errors.
    attr: &'a Attribute,
    /// The value, from `mesh` or `maximal_mesh` on.
    text: &'a str,
    /// The cursor: a byte offset into `text`, on a character boundary.
    at: usize,
}

impl<'a> MeshText<'a> {
    fn error(&self, message: impl Into<String>) -> HloError {
        self.attr.error(message)
    }

    /// The text after the cursor.
    fn rest(&self) -> &'a str {
        self.text.get(self.at..).unwrap_or_default()
    }

    /// Skips whitespace.
    fn ws(&mut self) {
        let rest = self.rest();
        self.at += rest.len() - rest.trim_start().len();
    }

    /// "expected WHAT, found ..." at the cursor.
    fn expected(&self, what: &str) -> HloError {
        let rest = self.rest();
        let found = match rest.char_indices().nth(24) {
            _ if rest.is_empty() => "the end of the value".to_string(),
            Some((cut, _)) => format!("`{}...`", rest.get(..cut).unwrap_or_default()),
            None => format!("`{rest}`"),
        };
        self.error(format!("expected {what}, found {found}"))
    }

    /// Skips whitespace, then eats `token` when it comes next.
    fn eat(&mut self, token: &str) -> bool {
        self.ws();
        let next = self.rest().starts_with(token);
        if next {
            self.at += token.len();
        }
        next
    }

    /// Eats `token` or fails with "expected WHAT".
    fn expect(&mut self, token: &str, what: &str) -> Result<(), HloError> {
        if self.eat(token) {
            Ok(())
        } else {
            Err(self.expected(what))
        }
    }

    /// An unsigned decimal integer.
    fn int(&mut self, what: &str) -> Result<u64, HloError> {
        self.ws();
        let rest = self.rest();
        let len = rest.bytes().take_while(u8::is_ascii_digit).count();
        if len == 0 {
            return Err(self.expected(what));
        }
        let digits = rest.get(..len).unwrap_or_default();
        let value = digits
            .parse()
            .map_err(|_| self.error(format!("{what} `{digits}` does not fit in 64 bits")))?;
        self.at += len;
        Ok(value)
    }

    /// `int (',' int)*`, or nothing when `close` comes next (which is not eaten).
    fn ints(&mut self, close: &str, what: &str) -> Result<Vec<u64>, HloError> {
        let mut out = Vec::new();
        self.ws();
        if self.rest().starts_with(close) {
            return Ok(out);
        }
        loop {
            out.push(self.int(what)?);
            if !self.eat(",") {
                return Ok(out);
            }
        }
    }

    /// A name in single or double quotes (a backslash escapes the next character).
    fn name(&mut self, what: &str) -> Result<String, HloError> {
        self.ws();
        let rest = self.rest();
        let Some(quote) = rest.chars().next().filter(|&c| c == '\'' || c == '"') else {
            return Err(self.expected(what));
        };
        let mut out = String::new();
        let mut chars = rest.char_indices().skip(1);
        while let Some((i, c)) = chars.next() {
            if c == quote {
                self.at += i + 1;
                return Ok(out);
            }
            if c == '\\' {
                match chars.next() {
                    Some((_, escaped)) => out.push(escaped),
                    None => break,
                }
            } else {
                out.push(c);
            }
        }
        Err(self.error(format!("unterminated quote in {what}")))
    }

    /// A permutation `T(p0,p1,...)` of `n` dimensions (after the `T`).
    fn permutation(&mut self, n: usize) -> Result<Vec<usize>, HloError> {
        self.expect("(", "`(` after `T`")?;
        let perm = self.ints(")", "a dimension index")?;
        self.expect(")", "`,` or `)` to end the permutation")?;
        let perm: Vec<usize> = perm.into_iter().map(|p| p as usize).collect();
        let mut sorted = perm.clone();
        sorted.sort_unstable();
        if sorted != (0..n).collect::<Vec<_>>() {
            return Err(self.error(format!(
                "`T({})` is not a permutation of the {n} device_ids dimensions",
                perm.iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            )));
        }
        Ok(perm)
    }

    /// `mesh[...]` with its optional `device_ids=(...)`, or `maximal_mesh[device_id=N]`: the
    /// axes and the device array.
    #[allow(clippy::type_complexity)]
    fn mesh(&mut self) -> Result<(Vec<(String, u64)>, Option<Vec<u64>>), HloError> {
        if self.eat("maximal_mesh") {
            self.expect("[", "`[` after `maximal_mesh`")?;
            self.expect("device_id", "`device_id=N` in `maximal_mesh[...]`")?;
            self.expect("=", "`=` after `device_id`")?;
            let id = self.int("a device id")?;
            self.expect("]", "`]` to end `maximal_mesh[...]`")?;
            return Ok((Vec::new(), Some(vec![id])));
        }
        self.expect("mesh", "`mesh[...]` or `maximal_mesh[...]`")?;
        self.expect("[", "`[` after `mesh`")?;
        let mut axes: Vec<(String, u64)> = Vec::new();
        self.ws();
        if !self.rest().starts_with(']') {
            loop {
                let name = self.name("a mesh axis (`'name'=size`)")?;
                self.expect("=", "`=` after the axis name")?;
                let size = self.int("an axis size")?;
                if size == 0 {
                    return Err(self.error(format!("mesh axis '{name}' has size 0")));
                }
                if axes.iter().any(|(a, _)| *a == name) {
                    return Err(self.error(format!("mesh axis '{name}' appears twice")));
                }
                axes.push((name, size));
                if !self.eat(",") {
                    break;
                }
            }
        }
        self.expect("]", "`,` or `]` in the mesh axes")?;
        let n = axes
            .iter()
            .try_fold(1u64, |acc, &(_, s)| acc.checked_mul(s))
            .filter(|&n| n <= MAX_DEVICES)
            .ok_or_else(|| self.error(format!("the mesh has more than {MAX_DEVICES} devices")))?;
        // XLA reads `device_ids` only after a mesh with axes.
        if axes.is_empty() || !self.eat(",") {
            return Ok((axes, None));
        }
        self.expect("device_ids", "`device_ids=(...)` after the mesh")?;
        self.expect("=", "`=` after `device_ids`")?;
        self.expect("(", "`(` after `device_ids=`")?;
        let devices = if self.eat("[") {
            // The iota form: iota(prod r).reshape(r).transpose(p), flattened.
            let reshape = self.ints("]", "a dimension")?;
            self.expect("]", "`,` or `]` in the device_ids dimensions")?;
            let product = reshape
                .iter()
                .try_fold(1u64, |acc, &d| acc.checked_mul(d))
                .filter(|&p| p <= MAX_DEVICES);
            if product != Some(n) {
                return Err(self.error(format!(
                    "device_ids dimensions {reshape:?} do not hold the mesh's {n} devices"
                )));
            }
            let perm = if self.eat("T") {
                self.permutation(reshape.len())?
            } else {
                (0..reshape.len()).collect()
            };
            transposed(&reshape, &perm)
        } else {
            let ids = self.ints(")", "a device id")?;
            if ids.len() as u64 != n {
                return Err(self.error(format!(
                    "expected {n} device ids (the product of the mesh axis sizes), found {}",
                    ids.len()
                )));
            }
            let mut sorted = ids.clone();
            sorted.sort_unstable();
            if sorted.iter().copied().ne(0..n) {
                return Err(self.error(format!("device_ids are not a permutation of 0..{n}")));
            }
            ids
        };
        self.expect(")", "`,` or `)` to end `device_ids=(...)`")?;
        Ok((axes, Some(devices)))
    }

    /// The whole mesh form.
    fn groups(mut self) -> Result<ReplicaGroups, HloError> {
        let (axes, devices) = self.mesh()?;
        self.expect("{", "`{` and the axes the groups span after the mesh")?;
        let mut over: Vec<MeshAxis> = Vec::new();
        self.ws();
        if !self.rest().starts_with('}') {
            loop {
                let name = self.name("an axis of the mesh (`'name'`)")?;
                let axis = axes
                    .iter()
                    .position(|(a, _)| *a == name)
                    .or_else(|| name.parse::<usize>().ok())
                    .filter(|&k| k < axes.len())
                    .ok_or_else(|| self.error(format!("'{name}' is not an axis of the mesh")))?;
                let size = axes[axis].1;
                let sub = if self.eat(":") {
                    self.expect("(", "`(` after `:` (a sub-axis `'x':(pre)size`)")?;
                    let pre = self.int("a sub-axis pre-size")?;
                    self.expect(")", "`)` after the sub-axis pre-size")?;
                    let sub = self.int("a sub-axis size")?;
                    let next = pre.checked_mul(sub).unwrap_or(0);
                    if pre == 0 || sub == 0 || next == 0 || size % next != 0 || sub >= size {
                        return Err(self.error(format!(
                            "sub-axis '{name}':({pre}){sub} does not fit axis '{name}' of size \
                             {size} (pre-size times size must divide it, size below it)"
                        )));
                    }
                    Some((pre, sub))
                } else {
                    None
                };
                over.push(MeshAxis { axis, sub });
                if !self.eat(",") {
                    break;
                }
            }
        }
        self.expect("}", "`,` or `}` in the axis list")?;
        self.ws();
        if !self.rest().is_empty() {
            return Err(self.expected("the end of the value after the axis list"));
        }
        for (a, (name, _)) in axes.iter().enumerate() {
            let mut subs: Vec<Option<(u64, u64)>> =
                over.iter().filter(|r| r.axis == a).map(|r| r.sub).collect();
            if subs.len() < 2 {
                continue;
            }
            if subs.contains(&None) {
                return Err(self.error(format!("axis '{name}' is listed more than once")));
            }
            subs.sort_unstable();
            let mut prefix = 1u64;
            for (pre, size) in subs.into_iter().flatten() {
                if pre % prefix != 0 {
                    return Err(self.error(format!("sub-axes of '{name}' overlap")));
                }
                prefix = pre.saturating_mul(size);
            }
        }
        Ok(ReplicaGroups::Mesh {
            axes,
            devices,
            over,
        })
    }
}

#[cfg(test)]
mod tests;
