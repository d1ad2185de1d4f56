//! The repository's data folder (`data/`, see its README): the real XLA train steps, the
//! public profiler traces and the PSPLIB sets that the benches run by default.
//!
//! A folder is looked for, in order: under `--data DIR` when given (and nowhere else); as
//! `data/` under the current directory; as `data/` beside the source tree this binary was
//! built from. The first that holds the wanted subfolder is used; otherwise the error lists
//! every place tried.

use std::path::{Path, PathBuf};

use clap::Args;

/// Where the data folder is: `--data DIR`, shared by the benches that read it.
#[derive(Args, Debug, Clone, Default, serde::Serialize)]
pub(crate) struct DataArgs {
    /// The repository's data folder (default: `data/` under the current directory, else the
    /// one beside the source tree this binary was built from).
    #[arg(long = "data", value_name = "DIR")]
    pub(crate) data_dir: Option<PathBuf>,
}

impl DataArgs {
    /// The subfolder `sub` (`hlo`, `kineto`, `psplib/j30`) of the data folder; an error that
    /// lists the places tried when none has it.
    pub(crate) fn sub(&self, sub: &str, what: &str) -> anyhow::Result<PathBuf> {
        let candidates: Vec<PathBuf> = match &self.data_dir {
            Some(dir) => vec![dir.clone()],
            None => vec![
                PathBuf::from("data"),
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../data"),
            ],
        };
        for dir in &candidates {
            let path = dir.join(sub);
            if path.is_dir() {
                // The built-in fallback reads `cli/../data`: say it without the `..`.
                return Ok(if path.is_absolute() {
                    std::fs::canonicalize(&path).unwrap_or(path)
                } else {
                    path
                });
            }
        }
        let tried: Vec<String> = candidates
            .iter()
            .map(|d| format!("{}", d.join(sub).display()))
            .collect();
        anyhow::bail!(
            "{what}: no data folder has `{sub}` (tried {}); run from the repository's root, or \
             name its data folder with --data DIR",
            tried.join(", ")
        )
    }
}
