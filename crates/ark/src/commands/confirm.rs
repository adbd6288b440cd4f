//! Asking a person before something that cannot be undone.

use std::io::IsTerminal as _;

use anyhow::{Context as _, bail};

/// Shows `intro` and `items`, then asks; refuses (rather than hang or act) when standard input is
/// not a terminal, naming what was not done (`not_done`, e.g. "deleting 2 backup(s)").
pub fn confirmed(not_done: &str, intro: &str, items: &[String]) -> anyhow::Result<bool> {
    if !std::io::stdin().is_terminal() {
        bail!(
            "not {not_done} without confirmation: standard input is not a terminal; pass --confirm"
        );
    }
    eprintln!("{intro}");
    for item in items {
        eprintln!("  {item}");
    }
    dialoguer::Confirm::new()
        .with_prompt("Are you sure you want to continue?")
        .default(false)
        .interact()
        .context("reading the confirmation")
}
