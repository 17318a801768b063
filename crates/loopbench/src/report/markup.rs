//! The markup that the terminal table, the Markdown and the HTML share.
//!
//! An exporter describes a table once (its [`Column`]s, then rows of plain
//! text cells) and a heading once (its level and text); a [`Markup`] writes
//! them in its syntax and escapes every cell and heading on the way out, so
//! no exporter escapes by hand and none can forget to. The three syntaxes:
//!
//! - [`Text`]: fixed-width columns for the terminal; a row with fewer cells
//!   than columns lets its last cell run on (a note under a shape).
//! - [`Markdown`]: pipe tables; `|` and line breaks inside a cell would end
//!   the cell or the table, so they become `\|` and `<br>`.
//! - [`Html`]: `<table>` rows and `<hN>`; `&`, `<`, `>` and `"` become
//!   entities.
//!
//! Rows are written one at a time (the terminal table puts a shape's notes
//! and counters between its rows), so a table is a start, rows and an end.

/// How a column's cells sit in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// One column of a table: its title, alignment, and for the terminal its
/// width and the spaces before it.
#[derive(Clone, Debug)]
pub struct Column {
    pub title: String,
    pub align: Align,
    /// Characters the cell is padded to in fixed-width text.
    pub width: usize,
    /// Spaces before the column in fixed-width text (none before the first).
    pub gap: usize,
}

impl Column {
    pub fn left(title: impl Into<String>, width: usize) -> Self {
        Column {
            title: title.into(),
            align: Align::Left,
            width,
            gap: 1,
        }
    }

    pub fn right(title: impl Into<String>, width: usize) -> Self {
        Column {
            align: Align::Right,
            ..Column::left(title, width)
        }
    }

    /// `gap` spaces before this column instead of one.
    pub fn gap(self, gap: usize) -> Self {
        Column { gap, ..self }
    }
}

/// A format's syntax for headings and tables, and its escaping.
pub trait Markup {
    /// `text` made safe to stand inside this format's markup.
    fn escape(&self, text: &str) -> String;
    /// A heading of `level` (1 is the page title).
    fn heading(&self, level: usize, text: &str) -> String;
    /// The start of a table: its header.
    fn table_start(&self, columns: &[Column]) -> String;
    /// One row; `cells` may be fewer than `columns`.
    fn table_row(&self, columns: &[Column], cells: &[&str]) -> String;
    /// The end of a table.
    fn table_end(&self) -> String;

    /// A whole table at once.
    fn table(&self, columns: &[Column], rows: &[Vec<String>]) -> String {
        let mut out = self.table_start(columns);
        for row in rows {
            let cells: Vec<&str> = row.iter().map(String::as_str).collect();
            out.push_str(&self.table_row(columns, &cells));
        }
        out.push_str(&self.table_end());
        out
    }
}

/// Fixed-width text for the terminal.
pub struct Text;

impl Text {
    fn line(columns: &[Column], cells: &[&str]) -> String {
        let mut out = String::new();
        for (i, (column, cell)) in columns.iter().zip(cells).enumerate() {
            if i > 0 {
                out.extend(std::iter::repeat_n(' ', column.gap));
            }
            // A row's last cell, left-aligned, is not padded: nothing
            // follows it.
            let last = i + 1 == cells.len();
            let width = if last && column.align == Align::Left {
                0
            } else {
                column.width
            };
            match column.align {
                Align::Left => out.push_str(&format!("{cell:<width$}")),
                Align::Right => out.push_str(&format!("{cell:>width$}")),
            }
        }
        out.push('\n');
        out
    }
}

impl Markup for Text {
    fn escape(&self, text: &str) -> String {
        text.to_string()
    }

    fn heading(&self, _level: usize, text: &str) -> String {
        format!("{text}\n")
    }

    fn table_start(&self, columns: &[Column]) -> String {
        let titles: Vec<&str> = columns.iter().map(|c| c.title.as_str()).collect();
        Text::line(columns, &titles)
    }

    fn table_row(&self, columns: &[Column], cells: &[&str]) -> String {
        Text::line(columns, cells)
    }

    fn table_end(&self) -> String {
        String::new()
    }
}

/// Markdown as GitHub renders it: pipe tables, `#` headings.
pub struct Markdown;

impl Markdown {
    fn line(&self, cells: impl IntoIterator<Item = String>) -> String {
        let cells: Vec<String> = cells.into_iter().collect();
        format!("| {} |\n", cells.join(" | "))
    }
}

impl Markup for Markdown {
    fn escape(&self, text: &str) -> String {
        text.replace('|', "\\|")
            .replace("\r\n", "<br>")
            .replace(['\n', '\r'], "<br>")
    }

    fn heading(&self, level: usize, text: &str) -> String {
        format!("{} {}\n\n", "#".repeat(level), self.escape(text))
    }

    fn table_start(&self, columns: &[Column]) -> String {
        let mut out = self.line(columns.iter().map(|c| self.escape(&c.title)));
        let rule: Vec<&str> = columns
            .iter()
            .map(|c| match c.align {
                Align::Left => "---",
                Align::Right => "--:",
            })
            .collect();
        out.push_str(&format!("|{}|\n", rule.join("|")));
        out
    }

    fn table_row(&self, _columns: &[Column], cells: &[&str]) -> String {
        self.line(cells.iter().map(|c| self.escape(c)))
    }

    fn table_end(&self) -> String {
        String::new()
    }
}

/// HTML: `<table>` and `<hN>`, the page's CSS does the alignment.
pub struct Html;

/// `text` for HTML and SVG: the characters that would start markup or end
/// an attribute become entities.
pub fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

impl Markup for Html {
    fn escape(&self, text: &str) -> String {
        escape_html(text)
    }

    fn heading(&self, level: usize, text: &str) -> String {
        format!("<h{level}>{}</h{level}>", self.escape(text))
    }

    fn table_start(&self, columns: &[Column]) -> String {
        let mut out = String::from("<table><tr>");
        for c in columns {
            out.push_str(&format!("<th>{}</th>", self.escape(&c.title)));
        }
        out.push_str("</tr>");
        out
    }

    fn table_row(&self, _columns: &[Column], cells: &[&str]) -> String {
        let mut out = String::from("<tr>");
        for c in cells {
            out.push_str(&format!("<td>{}</td>", self.escape(c)));
        }
        out.push_str("</tr>");
        out
    }

    fn table_end(&self) -> String {
        "</table>".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn columns() -> Vec<Column> {
        vec![Column::left("arm", 6), Column::right("ns", 5).gap(2)]
    }

    #[test]
    fn text_pads_every_cell_but_the_last() {
        let t = Text.table(&columns(), &[vec!["a".into(), "1.5".into()]]);
        assert_eq!(t, "arm        ns\na         1.5\n");
        // A short row's last cell runs on, unpadded.
        assert_eq!(Text.table_row(&columns(), &["a note"]), "a note\n");
    }

    /// A `|` or a line break inside a cell (an engine's error message, an
    /// arm name) stays inside its cell and its row.
    #[test]
    fn markdown_cells_survive_pipes_and_line_breaks() {
        let t = Markdown.table(
            &columns(),
            &[vec!["a|b".into(), "failed:\nline 2\r\nline 3".into()]],
        );
        assert_eq!(
            t,
            "| arm | ns |\n|---|--:|\n| a\\|b | failed:<br>line 2<br>line 3 |\n"
        );
        assert_eq!(t.lines().count(), 3);
        assert_eq!(Markdown.heading(4, "x|y"), "#### x\\|y\n\n");
    }

    #[test]
    fn html_escapes_cells_and_headings() {
        let t = Html.table(&columns(), &[vec!["<b>".into(), "\"&\"".into()]]);
        assert_eq!(
            t,
            "<table><tr><th>arm</th><th>ns</th></tr><tr><td>&lt;b&gt;</td><td>&quot;&amp;&quot;</td></tr></table>"
        );
        assert_eq!(Html.heading(2, "a<b"), "<h2>a&lt;b</h2>");
    }
}
