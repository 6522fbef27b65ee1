//! Aligned tables for people, JSON documents for scripts, both written to stdout.

use serde_json::Value;

use crate::error::CliError;
use crate::output::{quiet_if_closed, Out};

/// A table: a header and rows, printed with columns padded to their widest cell (two spaces
/// between columns, no trailing spaces).
#[derive(Debug, Default)]
pub(crate) struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column names.
    pub(crate) fn new(header: &[&str]) -> Table {
        Table { header: header.iter().map(|s| (*s).to_owned()).collect(), rows: Vec::new() }
    }

    /// Adds a row.
    pub(crate) fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// Whether it has no row.
    pub(crate) fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The text, one line per row, each ending in `\n`.
    pub(crate) fn render(&self) -> String {
        let columns = self.header.len();
        let mut widths: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate().take(columns) {
                widths[i] = widths[i].max(cell.chars().count());
            }
        }
        let mut text = String::new();
        for row in std::iter::once(&self.header).chain(&self.rows) {
            let mut line = String::new();
            for (i, cell) in row.iter().enumerate().take(columns) {
                if i + 1 < columns {
                    line.push_str(&format!("{cell:<width$}  ", width = widths[i]));
                } else {
                    line.push_str(cell);
                }
            }
            text.push_str(line.trim_end());
            text.push('\n');
        }
        text
    }
}

/// `1,2,3`.
pub(crate) fn ids(list: &[i32]) -> String {
    list.iter().map(i32::to_string).collect::<Vec<_>>().join(",")
}

/// A number, or `-` for none.
pub(crate) fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_owned(), |v| v.to_string())
}

/// Writes `text` to stdout; a closed stdout is a quiet stop.
pub(crate) async fn print(text: &str) -> Result<(), CliError> {
    let mut out = Out::stdout();
    let written = async {
        if !text.is_empty() {
            out.line(text.strip_suffix('\n').unwrap_or(text).as_bytes()).await?;
        }
        out.flush().await
    };
    written.await.or_else(quiet_if_closed)
}

/// Writes `value` as pretty JSON to stdout.
pub(crate) async fn print_json(value: &Value) -> Result<(), CliError> {
    let text = serde_json::to_string_pretty(value).unwrap_or_else(|_| "null".to_owned());
    print(&format!("{text}\n")).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_padded_to_the_widest_cell() {
        let mut t = Table::new(&["TOPIC", "PARTITION", "LEADER"]);
        t.row(vec!["events".into(), "0".into(), "1".into()]);
        t.row(vec!["a".into(), "10".into(), "-".into()]);
        assert_eq!(t.render(), "TOPIC   PARTITION  LEADER\nevents  0          1\na       10         -\n");
        assert_eq!(ids(&[1, 2]), "1,2");
        assert_eq!(opt(None::<i64>), "-");
    }
}
