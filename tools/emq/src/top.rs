//! `emq top`: the queue's lanes, redrawn in place by ratatui until `q`,
//! Esc or Ctrl-C (or SIGTERM).

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyModifiers};
use redis::Connection;

use crate::read;
use crate::screen::{self, Frame};
use crate::view::{self, LaneRow};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// SIGTERM (and a SIGINT sent from outside: in the terminal's raw mode
/// Ctrl-C is a key) ends the loop instead of the process, so that the
/// terminal is put back as it was.
fn catch_stop() {
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

pub struct Options {
    pub prefix: String,
    pub interval: Duration,
    /// One frame, no escape codes (for a pipe or a script).
    pub once: bool,
    /// Where the title says it is connected.
    pub target: String,
}

/// What one frame shows, read from the server.
struct Model {
    title: String,
    totals: Vec<String>,
    rows: Vec<LaneRow>,
    now: i64,
}

/// Reads a frame: every lane's row (deepest first), the figures of the
/// first `shown` of them, the totals and the claim rate since the last one.
fn read(
    c: &mut Connection,
    o: &Options,
    last: &mut Option<(Instant, u64)>,
    shown: usize,
) -> redis::RedisResult<Model> {
    let lanes = read::lanes(c, &o.prefix)?;
    let mut rows = read::rows(c, &o.prefix, &lanes)?;
    view::sort_by_depth(&mut rows);
    let shown = shown.min(rows.len());
    read::figures(c, &o.prefix, &mut rows[..shown])?;
    let totals = read::totals(c, &o.prefix)?;
    let fig = read::queue_figures(c, &o.prefix)?;
    let now = read::server_ms(c)?;
    let claimed = read::jobs_claimed(c)?;
    let at = Instant::now();
    let rate = match (*last, claimed) {
        (Some((then, before)), Some(n)) if at > then => {
            Some(n.saturating_sub(before) as f64 / at.duration_since(then).as_secs_f64())
        }
        _ => None,
    };
    *last = claimed.map(|n| (at, n));
    Ok(Model {
        title: format!(
            "emq top {}   {}   every {}s   q quits",
            o.prefix,
            o.target,
            o.interval.as_secs_f64()
        ),
        totals: view::totals_lines(rows.len(), &totals, now, rate, fig.as_ref()),
        rows,
        now,
    })
}

fn frame(m: &Model) -> Frame<'_> {
    Frame {
        title: m.title.clone(),
        totals: m.totals.clone(),
        rows: &m.rows,
        now: m.now,
    }
}

/// Whether a key ends `emq top`.
fn quits(k: KeyEvent) -> bool {
    matches!(k.code, KeyCode::Char('q') | KeyCode::Esc)
        || (k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL))
}

pub fn run(c: &mut Connection, o: &Options) -> redis::RedisResult<()> {
    let mut last = None;
    if o.once || !std::io::stdout().is_terminal() {
        let width = crossterm::terminal::size().map_or(80, |(w, _)| w);
        let m = read(c, o, &mut last, usize::MAX)?;
        let height = (m.rows.len() + m.totals.len() + 6).min(u16::MAX as usize) as u16;
        for line in screen::text(width, height, |area, buf| screen::draw(area, buf, &frame(&m))) {
            println!("{line}");
        }
        return Ok(());
    }
    catch_stop();
    let mut terminal = ratatui::try_init()?;
    let result = (|| -> redis::RedisResult<()> {
        while !STOP.load(Ordering::Relaxed) {
            let rows = usize::from(terminal.size()?.height);
            let m = read(c, o, &mut last, rows)?;
            terminal.draw(|f| screen::draw(f.area(), f.buffer_mut(), &frame(&m)))?;
            let until = Instant::now() + o.interval;
            while !STOP.load(Ordering::Relaxed) {
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() || !event::poll(left.min(Duration::from_millis(50)))? {
                    if left.is_zero() {
                        break;
                    }
                    continue;
                }
                match event::read()? {
                    Event::Key(k) if quits(k) => return Ok(()),
                    Event::Resize(..) => break,
                    _ => {}
                }
            }
        }
        Ok(())
    })();
    ratatui::restore();
    result
}
