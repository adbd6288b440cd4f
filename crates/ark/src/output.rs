//! Printing objects as a table, JSON or YAML.

use std::io::Write;

use anyhow::Context as _;
use comfy_table::{ContentArrangement, Table, presets};
use serde::Serialize;

use crate::cli::OutputFormat;

/// A kubectl-style table: no borders, upper-case headers, columns two spaces apart.
pub fn table<I, R>(headers: &[&str], rows: I) -> String
where
    I: IntoIterator<Item = R>,
    R: IntoIterator<Item = String>,
{
    let mut table = Table::new();
    table
        .load_style(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(headers.iter().copied());
    for row in rows {
        table.add_row(row);
    }
    for column in table.column_iter_mut() {
        column.set_padding((0, 2));
    }
    let text = table.to_string();
    text.lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Writes `items` in the chosen machine-readable format: the object itself when the user named just one,
/// otherwise a `List` as kubectl prints it. `Table` is the caller's business.
pub fn print_objects<T: Serialize>(
    format: OutputFormat,
    items: &[T],
    single: bool,
) -> anyhow::Result<()> {
    let value = if single && items.len() == 1 {
        serde_json::to_value(&items[0])?
    } else {
        serde_json::json!({ "apiVersion": "v1", "kind": "List", "items": items })
    };
    let mut out = std::io::stdout().lock();
    match format {
        OutputFormat::Json => {
            serde_json::to_writer_pretty(&mut out, &value)?;
            writeln!(out)?;
        }
        OutputFormat::Yaml => {
            let text = serde_saphyr::to_string(&value).context("cannot write YAML")?;
            write!(out, "{text}")?;
        }
        OutputFormat::Table => unreachable!("tables are printed by each command"),
    }
    Ok(())
}

/// A timestamp as users read it, or `<none>`.
pub fn time(time: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>) -> String {
    time.map_or_else(
        || "<none>".to_string(),
        |t| t.0.strftime("%Y-%m-%d %H:%M:%S +0000 UTC").to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_aligned_without_borders() {
        let text = table(
            &["NAME", "STATUS"],
            [
                vec!["nightly".to_string(), "Completed".to_string()],
                vec!["a".to_string(), "New".to_string()],
            ],
        );
        insta::assert_snapshot!(text, @r"
        NAME     STATUS
        nightly  Completed
        a        New
        ");
    }
}
