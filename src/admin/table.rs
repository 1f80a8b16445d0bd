//! Plain-text tables in mqadmin's style: `#Header` columns, left-aligned, space-padded.

/// Columns are separated by at least this many spaces.
const COLUMN_GAP: usize = 2;

/// Renders `rows` under `headers` (each header gets mqadmin's leading `#`).
pub fn render(headers: &[&str], rows: &[Vec<String>]) -> String {
    let headers: Vec<String> = headers.iter().map(|h| format!("#{h}")).collect();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for line in std::iter::once(&headers).chain(rows) {
        let cells: Vec<String> = line
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        out.push_str(cells.join(&" ".repeat(COLUMN_GAP)).trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn aligns_columns_to_the_widest_cell() {
        let rows = vec![
            vec!["DefaultCluster".to_string(), "0".to_string()],
            vec!["C".to_string(), "12".to_string()],
        ];
        let text = super::render(&["Cluster", "BID"], &rows);
        assert_eq!(
            text,
            "#Cluster        #BID\nDefaultCluster  0\nC               12\n"
        );
    }
}
