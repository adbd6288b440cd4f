//! Reading a file that a command puts into an object (restore hooks, a restore test): YAML or
//! JSON, `-` for standard input, no more than the parser's limit read, and refused with every
//! error at its path, line and column before anything is created.

use std::io::Read;
use std::path::Path;

use anyhow::Context as _;
use ark_api::hooks::HookError;

/// The file at `path` (`what` names it in messages: "hooks"), parsed by `parse`.
pub fn read<T>(
    path: &Path,
    what: &str,
    parse: impl FnOnce(&str) -> Result<T, Vec<HookError>>,
) -> anyhow::Result<T> {
    let shown = path.display().to_string();
    // No more than one byte past the limit is read: the parser refuses a longer file by its size.
    let limit = ark_api::hooks::MAX_FILE_BYTES as u64 + 1;
    let text = if shown == "-" {
        std::io::read_to_string(std::io::stdin().take(limit))
            .with_context(|| format!("cannot read {what} from standard input"))?
    } else {
        std::fs::File::open(path)
            .and_then(|file| std::io::read_to_string(file.take(limit)))
            .with_context(|| format!("cannot read {what} file {shown}"))?
    };
    let name = if shown == "-" {
        "<stdin>"
    } else {
        shown.as_str()
    };
    parse(&text).map_err(|errors| {
        let lines: Vec<String> = errors.iter().map(|e| format!("  {name}:{e}")).collect();
        anyhow::anyhow!(
            "invalid {what} file {name}; nothing was created:\n{}",
            lines.join("\n")
        )
    })
}
