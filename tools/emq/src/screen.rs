//! What `emq top` and `emq lanes` draw, laid out by ratatui: the title, the
//! queue's totals and the lanes' table, fitted to the terminal. The same
//! drawing goes to a terminal (`emq top`) or into a buffer printed as text
//! (`emq top --once`, `emq lanes`).

use ratatui::buffer::{Buffer, CellWidth};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style, Stylize};
use ratatui::text::{Line, Text};
use ratatui::widgets::{Paragraph, Row, Table, Widget};

use crate::view::{self, LaneRow, HEADER};

/// One frame: a title, the totals' lines and the lanes (deepest first).
pub struct Frame<'a> {
    pub title: String,
    pub totals: Vec<String>,
    pub rows: &'a [LaneRow],
    /// The server's clock (ms), for the times left.
    pub now: i64,
}

/// The lanes' table in `area`: a header, the rows that fit and, when some do
/// not, a line saying how many. A lane short of its share is shown bold.
pub fn table(area: Rect, buf: &mut Buffer, rows: &[LaneRow], now: i64) {
    let room = usize::from(area.height.saturating_sub(1));
    let shown = if rows.len() > room {
        room.saturating_sub(1)
    } else {
        rows.len()
    };
    let cells: Vec<[String; 12]> = rows[..shown].iter().map(|r| view::lane_cells(r, now)).collect();
    let widths: Vec<Constraint> = (0..HEADER.len())
        .map(|i| match i {
            // The name takes what is left.
            11 => Constraint::Fill(1),
            _ => {
                let w = cells.iter().map(|c| c[i].chars().count()).max().unwrap_or(0);
                Constraint::Length(w.max(HEADER[i].len()) as u16)
            }
        })
        .collect();
    // Numbers right-aligned, the name left.
    let line = |i: usize, text: String| match i {
        11 => Line::from(text),
        _ => Line::from(text).right_aligned(),
    };
    let body = rows[..shown].iter().zip(cells).map(|(r, c)| {
        let row = Row::new(c.into_iter().enumerate().map(|(i, t)| line(i, t)));
        match view::short_of_share(r) {
            true => row.style(Style::new().add_modifier(Modifier::BOLD)),
            false => row,
        }
    });
    let header = Row::new(HEADER.iter().enumerate().map(|(i, h)| line(i, h.to_string()))).reversed();
    let [lanes, more] =
        Layout::vertical([Constraint::Length(shown as u16 + 1), Constraint::Min(0)]).areas(area);
    Table::new(body, widths)
        .header(header)
        .column_spacing(1)
        .render(lanes, buf);
    if shown < rows.len() {
        let left = view::thousands((rows.len() - shown) as i64);
        Paragraph::new(format!("… {left} more lanes (deepest first)")).render(more, buf);
    }
}

/// Draws `frame` in `area`: title, a blank line, the totals, a blank line,
/// the table.
pub fn draw(area: Rect, buf: &mut Buffer, frame: &Frame) {
    let totals = frame.totals.len() as u16;
    let [title, _, totals_area, _, lanes] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Length(totals),
        Constraint::Length(1),
        Constraint::Min(1),
    ])
    .areas(area);
    Paragraph::new(frame.title.as_str()).bold().render(title, buf);
    let lines: Vec<Line> = frame.totals.iter().map(|l| Line::from(l.as_str())).collect();
    Paragraph::new(Text::from(lines)).render(totals_area, buf);
    table(lanes, buf, frame.rows, frame.now);
}

/// Renders with `paint` into a buffer of `width` × `height` and gives back
/// its lines as text, trailing blanks trimmed (no escape codes: for a pipe).
pub fn text(width: u16, height: u16, paint: impl FnOnce(Rect, &mut Buffer)) -> Vec<String> {
    let area = Rect::new(0, 0, width, height);
    let mut buf = Buffer::empty(area);
    paint(area, &mut buf);
    let mut lines: Vec<String> = buf
        .content
        .chunks(usize::from(width.max(1)))
        .map(|cells| {
            let mut line = String::new();
            let mut hidden: u16 = 0;
            for c in cells {
                // A wide character hides the cells after it.
                if hidden == 0 {
                    line.push_str(c.symbol());
                }
                hidden = hidden.max(c.cell_width()).saturating_sub(1);
            }
            line.trim_end().to_string()
        })
        .collect();
    while lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::{row, Fig, Totals};

    #[test]
    fn a_table_shows_each_lanes_state_and_its_share_beside_its_weights() {
        let mut r = row("tenant-with-a-long-name", 12_004);
        r.active = Some("3".into());
        r.limit = Some("4".into());
        r.paused = Ok(true);
        r.ringed = 2;
        r.fig = Some(Fig {
            jobs: 30,
            share: 0.25,
            weight_share: 0.5,
            busy_share: 0.75,
            wait_p99: Some(1_500),
            oldest: Some(61_000),
        });
        let mut damaged = row("x", 0);
        damaged.weight = Some("abc".into());
        damaged.ringed = 0;
        let t = text(80, 3, |area, buf| table(area, buf, &[r, damaged], 0));
        assert_eq!(
            t[0],
            " DEPTH ACTIVE/LIMIT WEIGHT RATE PAUSED RINGED JOBS%   WT% BUSY%  P99 OLDEST LANE"
        );
        assert_eq!(
            t[1],
            "12,004          3/4      1    -    yes     2x 25.0% 50.0% 75.0% 1.5s  1m01s tena"
        );
        assert_eq!(
            t[2],
            "     0          0/-    abc    -     no     no     -     -     -    -      - x"
        );
        assert!(t.iter().all(|l| l.chars().count() <= 80));
    }

    #[test]
    fn a_frame_fits_its_area_and_says_what_it_left_out() {
        let rows: Vec<LaneRow> = (0..100).map(|i| row(&format!("l{i}"), 100 - i)).collect();
        let t = Totals {
            leased: 5,
            next_deadline: Some(10_500),
            ..Totals::default()
        };
        let frame = Frame {
            title: "emq top q:".into(),
            totals: view::totals_lines(rows.len(), &t, 10_000, Some(1234.4), None),
            rows: &rows,
            now: 10_000,
        };
        let f = text(80, 20, |area, buf| draw(area, buf, &frame));
        assert_eq!(f.len(), 20);
        assert_eq!(f[0], "emq top q:");
        assert!(f[2].starts_with("lanes 100   ringed 0"), "{}", f[2]);
        assert_eq!(
            f[4],
            "server: 1,234 jobs/s claimed   next lease deadline in 500ms   next due none"
        );
        assert_eq!(f[5], "window: no figures (EMQ.STATS)");
        assert!(f[7].trim_start().starts_with("DEPTH"), "{}", f[7]);
        assert!(f[8].ends_with("l0") && f[8].contains("100"), "{}", f[8]);
        assert_eq!(f[19], "… 89 more lanes (deepest first)");
        let all = Frame {
            rows: &rows[..3],
            ..frame
        };
        let f = text(80, 20, |area, buf| draw(area, buf, &all));
        assert_eq!(f.len(), 11, "no 'more' line when every lane fits");
    }
}
