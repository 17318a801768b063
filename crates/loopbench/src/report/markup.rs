//! The markup that the terminal table, the Markdown and the HTML share.
//!
//! An exporter describes a table once (its [`Column`]s, then rows of plain
//! text cells) and a heading once (its level and text); a [`Markup`] writes
//! them in its syntax and escapes every cell and heading on the way out, so
//! no exporter escapes by hand and none can forget to. The three syntaxes:
//!
//! - [`Text`]: fixed-width columns for the terminal; a row with fewer cells
//!   than columns lets its last cell run on (a note under a shape). A
//!   name from a file or a database may hold escape sequences (which the
//!   terminal would obey) or line breaks (which would break the row): every
//!   control character is written as its Rust escape (`\u{1b}`, `\n`).
//! - [`Markdown`]: pipe tables; `|` and line breaks inside a cell would end
//!   the cell or the table, so they become `\|` and `<br>`; Markdown passes
//!   HTML through, so `&`, `<` and `>` become entities; `\` is
//!   backslash-escaped, and so is a `]` before `(`, so no link can be made
//!   of a name (intervals such as `[+1%, +2%]` stay as they are).
//! - [`Html`]: `<table>` rows and `<hN>`; `&`, `<`, `>` and `"` become
//!   entities.
//!
//! Text outside tables (a report's prose lines) goes through the same
//! escapes: [`Text::page`] and [`Markdown::escape`].
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

/// Whether `c` would act on a terminal or a text layout rather than show:
/// control characters, and the bidirectional overrides that reorder what
/// follows them.
pub(crate) fn acts(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every character that [`acts`] written as its Rust escape
/// (`\u{1b}`, `\n`), except line breaks when `keep_lines`.
fn shown(text: &str, keep_lines: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if !acts(c) || (keep_lines && c == '\n') {
            out.push(c);
        } else {
            out.extend(c.escape_default());
        }
    }
    out
}

impl Text {
    /// Lines of terminal text (a report's prose around its tables) safe to
    /// print: its line breaks stay, every other control character shows as
    /// its escape.
    pub fn page(&self, text: &str) -> String {
        shown(text, true)
    }
}

impl Markup for Text {
    fn escape(&self, text: &str) -> String {
        shown(text, false)
    }

    fn heading(&self, _level: usize, text: &str) -> String {
        format!("{}\n", self.escape(text))
    }

    fn table_start(&self, columns: &[Column]) -> String {
        let titles: Vec<String> = columns.iter().map(|c| self.escape(&c.title)).collect();
        let titles: Vec<&str> = titles.iter().map(String::as_str).collect();
        Text::line(columns, &titles)
    }

    fn table_row(&self, columns: &[Column], cells: &[&str]) -> String {
        let cells: Vec<String> = cells.iter().map(|c| self.escape(c)).collect();
        let cells: Vec<&str> = cells.iter().map(String::as_str).collect();
        Text::line(columns, &cells)
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

/// The shortest run of backticks longer than every run inside `text`, at
/// least `min` long: a code span or fence that `text` cannot end.
fn fence(text: &str, min: usize) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    "`".repeat((longest + 1).max(min))
}

impl Markdown {
    /// `text` as inline code, on one line.
    pub fn code_span(&self, text: &str) -> String {
        let text = shown(text, false);
        let f = fence(&text, 1);
        format!("{f}{text}{f}")
    }

    /// `text` as a fenced code block: the fence is longer than any run of
    /// backticks inside, so no line of `text` can end the block.
    pub fn code_block(&self, info: &str, text: &str) -> String {
        let body = shown(text.trim_end(), true);
        let f = fence(&body, 3);
        format!("{f}{info}\n{body}\n{f}\n")
    }
}

impl Markup for Markdown {
    fn escape(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '&' => out.push_str("&amp;"),
                '<' => out.push_str("&lt;"),
                '>' => out.push_str("&gt;"),
                '\\' | '|' => {
                    out.push('\\');
                    out.push(c);
                }
                // `](` is where an inline link starts its target.
                ']' if chars.peek() == Some(&'(') => out.push_str("\\]"),
                '\r' if chars.peek() == Some(&'\n') => {}
                '\n' | '\r' => out.push_str("<br>"),
                c if acts(c) => out.extend(c.escape_default()),
                c => out.push(c),
            }
        }
        out
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

    /// A name with HTML, a terminal escape and a line break is text in
    /// Markdown and on the terminal: no tag, no control character, one line.
    #[test]
    fn hostile_names_are_text_in_markdown_and_on_the_terminal() {
        let name = "x<img src=x>\u{1b}[31m\nrow [a](javascript:b)";
        assert_eq!(
            Markdown.escape(name),
            "x&lt;img src=x&gt;\\u{1b}[31m<br>row [a\\](javascript:b)"
        );
        assert_eq!(
            Text.escape(name),
            "x<img src=x>\\u{1b}[31m\\nrow [a](javascript:b)"
        );
        assert_eq!(Text.page("a\u{1b}b\nc\u{202e}"), "a\\u{1b}b\nc\\u{202e}");
        let row = Text.table_row(&columns(), &[name, "1"]);
        assert_eq!(row.lines().count(), 1, "{row}");
        // No run of backticks inside can close the fence.
        assert_eq!(
            Markdown.code_block("sh", "a ``` b"),
            "````sh\na ``` b\n````\n"
        );
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
