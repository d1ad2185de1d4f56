//! Sharded bench runs: a deterministic split of a bench's item list ([`Shard`]), the file
//! each shard writes ([`ShardFile`]), and the merge that rebuilds the unsharded run from the
//! files ([`merge`]; [`ShardTexts`] reads the files of any bench and names it first). Each
//! bench that shards is a [`Shardable`] kind, implemented in the bench's own module: this
//! module knows no kind, and a caller (the command line's `bench merge`) lists the kinds it
//! dispatches to.
//!
//! A bench orders its items (PSPLIB instances in natural name order, graphs in run order,
//! sizes as given); shard `I/N` takes the items at positions `k` with `k mod N = I`. The
//! split needs no coordination between shards, every item lands in exactly one shard, and
//! shards differ in size by at most one item. Each shard writes its rows with their
//! positions, the whole item list and the run's configuration; [`merge`] checks that the
//! files belong together (same bench, configuration, shard count and item list, every shard
//! once, every row where its shard says) and puts the rows back in the unsharded order, so
//! the summary computed from them is the unsharded run's: the same sums in the same order.
//!
//! What a row measures on the clock (solve times, peak memory) is the shard's measurement:
//! the merge reproduces the summary of those rows exactly, not another run's clock.
//!
//! The files are JSON. The rows' floating-point values come back exactly only when
//! `serde_json` parses floats exactly (its `float_roundtrip` feature, which the `concerto`
//! binary enables).

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::de::{self, DeserializeOwned, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use thiserror::Error;

use crate::BenchError;

/// One part of a split in `count` parts: the items at positions `k` with
/// `k mod count = index`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Shard {
    index: usize,
    count: usize,
}

/// Why a shard is invalid.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ShardError {
    /// The text is not of the form `I/N` with two whole numbers.
    #[error("expected I/N (a shard index from 0 and a shard count, e.g. 0/4), found `{0}`")]
    Syntax(String),
    /// The shard count is 0.
    #[error("the shard count must be at least 1, found `{0}`")]
    ZeroCount(String),
    /// The index is not below the count (shards are numbered from 0).
    #[error("shard index {index} is out of range: shards of a split in {count} are numbered 0 to {}", count - 1)]
    IndexOutOfRange {
        /// The index given.
        index: usize,
        /// The shard count.
        count: usize,
    },
}

impl Shard {
    /// The whole list: shard `0/1`.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Shard `index` of a split in `count` parts: an error unless `count >= 1` and
    /// `index < count`.
    pub fn new(index: usize, count: usize) -> Result<Self, ShardError> {
        if count == 0 {
            return Err(ShardError::ZeroCount(format!("{index}/{count}")));
        }
        if index >= count {
            return Err(ShardError::IndexOutOfRange { index, count });
        }
        Ok(Self { index, count })
    }

    /// The shard's index, from 0.
    pub fn index(self) -> usize {
        self.index
    }

    /// The number of shards of the split.
    pub fn count(self) -> usize {
        self.count
    }

    /// Whether the item at position `k` of the whole list belongs to this shard.
    pub fn contains(self, k: usize) -> bool {
        k % self.count == self.index
    }

    /// The positions of this shard's items in a whole list of `len` items, in order.
    pub fn positions(self, len: usize) -> impl Iterator<Item = usize> {
        (self.index..len).step_by(self.count)
    }

    /// This shard's items of the whole list `items`, in order.
    pub fn pick<T: Clone>(self, items: &[T]) -> Vec<T> {
        self.positions(items.len())
            .map(|k| items[k].clone())
            .collect()
    }
}

impl fmt::Display for Shard {
    /// `I/N`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = ShardError;

    /// Parses `I/N` (see [`Shard::new`]).
    fn from_str(s: &str) -> Result<Self, ShardError> {
        let syntax = || ShardError::Syntax(s.to_owned());
        let (i, n) = s.split_once('/').ok_or_else(syntax)?;
        let number = |t: &str| {
            let t = t.trim();
            if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
                return Err(syntax());
            }
            t.parse::<usize>().map_err(|_| syntax())
        };
        let (index, count) = (number(i)?, number(n)?);
        if count == 0 {
            return Err(ShardError::ZeroCount(s.to_owned()));
        }
        Self::new(index, count)
    }
}

impl Serialize for Shard {
    /// As its `I/N` text.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Shard {
    /// From its `I/N` text, validated.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        text.parse().map_err(de::Error::custom)
    }
}

/// A bench whose runs split into shards (`--shard I/N --json`) and merge back into the
/// unsharded run (`bench merge`): what differs between benches. The split ([`Shard`]), the
/// file's layout ([`ShardFile`]) and the checks that files belong together ([`merge`]) are
/// the same for every kind. A kind is a marker type, implemented in its bench's module.
pub trait Shardable: Sized {
    /// The bench's command name, the `bench` key of its shard files (`psplib`).
    const NAME: &'static str;
    /// Every setting that decides the rows or the summary: every shard's must be equal.
    type Config: Clone + fmt::Debug + PartialEq + Serialize + DeserializeOwned;
    /// The row of one item.
    type Row: Clone + fmt::Debug + PartialEq + Serialize + DeserializeOwned;
    /// The unsharded run that [`merge`] rebuilds from the rows.
    type Unsharded;

    /// Checks what only this kind knows about one file (that a row is of the item at its
    /// position, say), before [`merge`]'s own checks: an error names the file. None by
    /// default.
    fn check(file: &Path, f: &ShardFile<Self>) -> Result<(), MergeError> {
        let _ = (file, f);
        Ok(())
    }

    /// The unsharded run from every row in the unsharded order (its summary computed from
    /// them in that order).
    fn unsharded(merged: Merged<Self>) -> Self::Unsharded;
}

/// The version of [`ShardFile`]'s layout that this build writes and reads.
pub const FORMAT: u32 = 1;

/// What one shard of a bench of kind `K` writes: enough to check that shards belong together
/// and to rebuild the unsharded rows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(bound = "")]
pub struct ShardFile<K: Shardable> {
    /// [`FORMAT`].
    pub format: u32,
    /// The bench ([`Shardable::NAME`]).
    pub bench: String,
    /// Which shard, of how many.
    pub shard: Shard,
    /// The run's configuration; every shard's must be equal.
    pub config: K::Config,
    /// The whole item list of the unsharded run, in its order (instance names, graph names,
    /// sizes).
    pub items: Vec<String>,
    /// This shard's rows, with their positions in `items`, in order.
    pub rows: Vec<ShardRow<K::Row>>,
}

/// A row of a [`ShardFile`] with its position in the whole item list.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShardRow<R> {
    /// The position of the row's item in [`ShardFile::items`].
    pub index: usize,
    /// The row.
    pub row: R,
}

impl<K: Shardable> ShardFile<K> {
    /// The file of `shard` of a run over `items` whose rows, one per item of the shard in
    /// order, are `rows`: an error when their number is not the shard's.
    pub fn new(
        shard: Shard,
        config: K::Config,
        items: Vec<String>,
        rows: Vec<K::Row>,
    ) -> Result<Self, BenchError> {
        let positions: Vec<usize> = shard.positions(items.len()).collect();
        if positions.len() != rows.len() {
            return Err(BenchError::InvalidConfig {
                reason: format!(
                    "shard {shard} of {} items holds {} of them, but {} rows were given",
                    items.len(),
                    positions.len(),
                    rows.len()
                ),
            });
        }
        Ok(Self {
            format: FORMAT,
            bench: K::NAME.to_owned(),
            shard,
            config,
            items,
            rows: positions
                .into_iter()
                .zip(rows)
                .map(|(index, row)| ShardRow { index, row })
                .collect(),
        })
    }
}

/// Why shard files could not be merged. Each names the file at fault.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum MergeError {
    /// No file was given.
    #[error("no shard file to merge")]
    NoFiles,
    /// A file could not be read.
    #[error("reading {}", file.display())]
    Read {
        /// The file.
        file: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A file is not a shard file: not JSON, or a key missing or of the wrong type.
    #[error(
        "{}: not a shard file of `concerto bench ... --shard I/N --json`",
        file.display()
    )]
    Malformed {
        /// The file.
        file: PathBuf,
        /// The parser's error, with its line and column.
        #[source]
        source: serde_json::Error,
    },
    /// A file of another layout version.
    #[error("{}: shard file format {found}; this build reads format {FORMAT}", file.display())]
    Format {
        /// The file.
        file: PathBuf,
        /// Its format.
        found: u32,
    },
    /// Files of different benches.
    #[error(
        "{}: a `bench {found}` shard, but {} is a `bench {expected}` shard",
        file.display(),
        first.display()
    )]
    BenchDiffers {
        /// The file.
        file: PathBuf,
        /// Its bench.
        found: String,
        /// The first file.
        first: PathBuf,
        /// The first file's bench.
        expected: String,
    },
    /// Files of different configurations (solver, limits, instance selection, ...).
    #[error(
        "{}: its configuration differs from {}'s: {difference}",
        file.display(),
        first.display()
    )]
    ConfigDiffers {
        /// The file.
        file: PathBuf,
        /// The first file.
        first: PathBuf,
        /// The first setting that differs, with both values.
        difference: String,
    },
    /// Files of splits in different numbers of shards.
    #[error(
        "{}: shard {shard} is of a split in {}, but {} is of a split in {expected}",
        file.display(),
        shard.count(),
        first.display()
    )]
    CountDiffers {
        /// The file.
        file: PathBuf,
        /// Its shard.
        shard: Shard,
        /// The first file.
        first: PathBuf,
        /// The first file's shard count.
        expected: usize,
    },
    /// Files whose runs cover different item lists (another instance set).
    #[error(
        "{}: its item list differs from {}'s: {difference}",
        file.display(),
        first.display()
    )]
    ItemsDiffer {
        /// The file.
        file: PathBuf,
        /// The first file.
        first: PathBuf,
        /// The first difference.
        difference: String,
    },
    /// The same shard in two files.
    #[error("shard {shard} is given twice: {} and {}", first.display(), second.display())]
    Duplicate {
        /// The shard.
        shard: Shard,
        /// The file given first.
        first: PathBuf,
        /// The other.
        second: PathBuf,
    },
    /// Shards of the split that no file holds.
    #[error(
        "missing shard(s) {} of a split in {count}",
        missing.iter().map(|i| format!("{i}/{count}")).collect::<Vec<_>>().join(", ")
    )]
    Missing {
        /// Their indices.
        missing: Vec<usize>,
        /// The shard count.
        count: usize,
    },
    /// A file's rows are not its shard's items.
    #[error("{}: {reason}", file.display())]
    Rows {
        /// The file.
        file: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

/// The rows of every shard of one run, joined in the unsharded order by [`merge`], which
/// hands them to [`Shardable::unsharded`].
#[derive(Clone, Debug, PartialEq)]
pub struct Merged<K: Shardable> {
    /// The configuration every shard shares.
    pub config: K::Config,
    /// The whole item list.
    pub items: Vec<String>,
    /// One row per item, in the unsharded order.
    pub rows: Vec<K::Row>,
}

/// Merges the shard files of one run of bench `K`, each with the path it came from (for
/// errors): every file must pass [`Shardable::check`], then be a `K` shard of [`FORMAT`]
/// with the first file's configuration, shard count and item list; every shard of the split
/// must come exactly once; each file's rows must be its shard's items, in order. Cost:
/// O(files x (items + config) + rows), plus the kind's checks.
pub fn merge<K: Shardable>(
    files: Vec<(PathBuf, ShardFile<K>)>,
) -> Result<K::Unsharded, MergeError> {
    for (file, f) in &files {
        K::check(file, f)?;
    }
    join(files).map(K::unsharded)
}

/// [`merge`] past the kind's checks.
fn join<K: Shardable>(files: Vec<(PathBuf, ShardFile<K>)>) -> Result<Merged<K>, MergeError> {
    let Some((first, head)) = files.first() else {
        return Err(MergeError::NoFiles);
    };
    let count = head.shard.count();
    let mut by_index: Vec<Option<&PathBuf>> = vec![None; count];
    for (file, f) in &files {
        let here = || file.clone();
        if f.format != FORMAT {
            return Err(MergeError::Format {
                file: here(),
                found: f.format,
            });
        }
        if f.bench != K::NAME {
            return Err(MergeError::BenchDiffers {
                file: here(),
                found: f.bench.clone(),
                first: first.clone(),
                expected: K::NAME.to_owned(),
            });
        }
        if f.config != head.config {
            return Err(MergeError::ConfigDiffers {
                file: here(),
                first: first.clone(),
                difference: difference(&f.config, &head.config),
            });
        }
        if f.shard.count() != count {
            return Err(MergeError::CountDiffers {
                file: here(),
                shard: f.shard,
                first: first.clone(),
                expected: count,
            });
        }
        if f.items != head.items {
            return Err(MergeError::ItemsDiffer {
                file: here(),
                first: first.clone(),
                difference: item_difference(&f.items, &head.items),
            });
        }
        match by_index[f.shard.index()].replace(file) {
            Some(other) => {
                return Err(MergeError::Duplicate {
                    shard: f.shard,
                    first: other.clone(),
                    second: here(),
                })
            }
            None => check_rows(file, f)?,
        }
    }
    let missing: Vec<usize> = (0..count).filter(|&i| by_index[i].is_none()).collect();
    if !missing.is_empty() {
        return Err(MergeError::Missing { missing, count });
    }
    let mut files = files;
    let (_, head) = files.swap_remove(0);
    let (config, items) = (head.config, head.items);
    let mut slots: Vec<Option<K::Row>> =
        std::iter::repeat_with(|| None).take(items.len()).collect();
    for r in head
        .rows
        .into_iter()
        .chain(files.into_iter().flat_map(|(_, f)| f.rows))
    {
        slots[r.index] = Some(r.row);
    }
    let rows = slots
        .into_iter()
        .map(|r| r.expect("every position is in exactly one shard, checked above"))
        .collect();
    Ok(Merged {
        config,
        items,
        rows,
    })
}

/// The shard files of one run as read from disk: each file's text, every file checked to be
/// a shard file of [`FORMAT`] of one and the same bench, which [`ShardTexts::bench`] names so
/// that a caller can pick the kind to [`ShardTexts::merge`] them as.
#[derive(Clone, Debug)]
pub struct ShardTexts {
    bench: String,
    texts: Vec<(PathBuf, String)>,
}

impl ShardTexts {
    /// Reads the shard files at `paths` (JSON, as a bench's `--shard I/N --json` prints them)
    /// and their `format` and `bench` keys, which must name one of `known` (the kinds the
    /// caller merges, by [`Shardable::NAME`]). Every error names its file. Cost: reading every
    /// file and scanning its keys.
    pub fn read(paths: &[PathBuf], known: &'static [&'static str]) -> Result<Self, MergeError> {
        let mut texts = Vec::with_capacity(paths.len());
        let mut bench: Option<(&PathBuf, String)> = None;
        for path in paths {
            let text = std::fs::read_to_string(path).map_err(|source| MergeError::Read {
                file: path.clone(),
                source,
            })?;
            let header = HeaderSeed(known)
                .deserialize(&mut serde_json::Deserializer::from_str(&text))
                .map_err(|source| MergeError::Malformed {
                    file: path.clone(),
                    source,
                })?;
            if header.format != FORMAT {
                return Err(MergeError::Format {
                    file: path.clone(),
                    found: header.format,
                });
            }
            let (first, expected) = bench.get_or_insert((&paths[0], header.bench.clone()));
            if header.bench != *expected {
                return Err(MergeError::BenchDiffers {
                    file: path.clone(),
                    found: header.bench,
                    first: (*first).clone(),
                    expected: expected.clone(),
                });
            }
            texts.push((path.clone(), text));
        }
        match bench {
            None => Err(MergeError::NoFiles),
            Some((_, bench)) => Ok(Self { bench, texts }),
        }
    }

    /// The bench every file names ([`Shardable::NAME`]).
    pub fn bench(&self) -> &str {
        &self.bench
    }

    /// Parses every file as a shard file of `K` and merges them (see [`merge`]).
    pub fn merge<K: Shardable>(&self) -> Result<K::Unsharded, MergeError> {
        let files = self
            .texts
            .iter()
            .map(|(path, text)| {
                serde_json::from_str(text)
                    .map(|f| (path.clone(), f))
                    .map_err(|source| MergeError::Malformed {
                        file: path.clone(),
                        source,
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        merge::<K>(files)
    }
}

/// The keys every shard file starts with: read first, so that a file of another bench or
/// format is named as such rather than as malformed.
struct Header {
    format: u32,
    bench: String,
}

/// Reads a [`Header`] whose `bench` is one of the names it holds (otherwise an unknown
/// variant, as an enum of the names would say, at the name's place in the text).
struct HeaderSeed(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for HeaderSeed {
    type Value = Header;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Header, D::Error> {
        d.deserialize_struct("Header", &["format", "bench"], self)
    }
}

impl<'de> Visitor<'de> for HeaderSeed {
    type Value = Header;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("struct Header")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Header, A::Error> {
        let (mut format, mut bench) = (None, None);
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match &*key {
                "format" if format.is_none() => format = Some(map.next_value()?),
                "bench" if bench.is_none() => bench = Some(map.next_value_seed(Known(self.0))?),
                "format" => return Err(de::Error::duplicate_field("format")),
                "bench" => return Err(de::Error::duplicate_field("bench")),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Header {
            format: format.ok_or_else(|| de::Error::missing_field("format"))?,
            bench: bench.ok_or_else(|| de::Error::missing_field("bench"))?,
        })
    }
}

/// A name that must be one of those it holds.
struct Known(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for Known {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for Known {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("variant identifier")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<String, E> {
        match self.0.contains(&name) {
            true => Ok(name.to_owned()),
            false => Err(E::unknown_variant(name, self.0)),
        }
    }
}

/// Whether `f`'s rows are exactly its shard's positions of its items, in order.
fn check_rows<K: Shardable>(file: &Path, f: &ShardFile<K>) -> Result<(), MergeError> {
    let expected: Vec<usize> = f.shard.positions(f.items.len()).collect();
    let found: Vec<usize> = f.rows.iter().map(|r| r.index).collect();
    if found == expected {
        return Ok(());
    }
    let reason = match expected.iter().zip(&found).position(|(e, g)| e != g) {
        Some(k) => format!(
            "shard {} of {} items: row {k} is item {}, expected item {}",
            f.shard,
            f.items.len(),
            found[k],
            expected[k]
        ),
        None => format!(
            "shard {} of {} items holds {} rows, expected {}",
            f.shard,
            f.items.len(),
            found.len(),
            expected.len()
        ),
    };
    Err(MergeError::Rows {
        file: file.to_path_buf(),
        reason,
    })
}

/// The first setting in which `a` differs from `b` (as their JSON), with both values.
fn difference<C: Serialize>(a: &C, b: &C) -> String {
    fn walk(a: &serde_json::Value, b: &serde_json::Value, path: &str) -> Option<String> {
        use serde_json::Value;
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
                keys.into_iter().find_map(|k| {
                    let path = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    match (x.get(k), y.get(k)) {
                        (Some(u), Some(v)) => walk(u, v, &path),
                        (u, v) => Some(format!(
                            "`{path}` is {} here, {} there",
                            u.map_or("absent".into(), Value::to_string),
                            v.map_or("absent".into(), Value::to_string)
                        )),
                    }
                })
            }
            _ if a == b => None,
            _ => Some(format!(
                "`{}` is {a} here, {b} there",
                if path.is_empty() { "config" } else { path }
            )),
        }
    }
    match (serde_json::to_value(a), serde_json::to_value(b)) {
        (Ok(a), Ok(b)) => walk(&a, &b, "")
            // Values equal as JSON but not as `C` (a NaN, say): say so rather than nothing.
            .unwrap_or_else(|| "equal as JSON, not as values".into()),
        _ => "not comparable as JSON".into(),
    }
}

/// The first difference between two item lists.
fn item_difference(a: &[String], b: &[String]) -> String {
    match a.iter().zip(b).position(|(x, y)| x != y) {
        Some(k) => format!("item {k} is `{}` here, `{}` there", a[k], b[k]),
        None => format!("{} items here, {} there", a.len(), b.len()),
    }
}

#[cfg(test)]
mod tests;
