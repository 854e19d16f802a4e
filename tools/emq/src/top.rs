//! `emq top`: the queue's lanes, refreshed in place until Ctrl-C.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use redis::Connection;

use crate::read;
use crate::view;

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// Ctrl-C (and SIGTERM) end the loop instead of the process, so that the
/// terminal is put back as it was.
fn catch_stop() {
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

/// The terminal's rows and columns (24 × 80 when stdout is no terminal).
fn terminal_size() -> (usize, usize) {
    let mut ws = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one winsize into `ws`.
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) } == 0;
    if ok && ws.ws_row > 0 && ws.ws_col > 0 {
        (ws.ws_row as usize, ws.ws_col as usize)
    } else {
        (24, 80)
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

/// One frame from the server.
fn frame(
    c: &mut Connection,
    o: &Options,
    last: &mut Option<(Instant, u64)>,
    size: (usize, usize),
) -> redis::RedisResult<Vec<String>> {
    let lanes = read::lanes(c, &o.prefix)?;
    let mut rows = read::rows(c, &o.prefix, &lanes)?;
    view::sort_by_depth(&mut rows);
    let totals = read::totals(c, &o.prefix)?;
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
    let title = format!(
        "emq top {}   {}   every {}s   Ctrl-C quits",
        o.prefix,
        o.target,
        o.interval.as_secs_f64()
    );
    let (height, width) = size;
    Ok(view::top_frame(&title, &rows, &totals, now, rate, height, width))
}

pub fn run(c: &mut Connection, o: &Options) -> redis::RedisResult<()> {
    let mut last = None;
    let mut out = std::io::stdout();
    if o.once || !out.is_terminal() {
        let lines = frame(c, o, &mut last, (usize::MAX, terminal_size().1))?;
        writeln!(out, "{}", lines.join("\n"))?;
        return Ok(());
    }
    catch_stop();
    // The alternate screen, cursor hidden: the shell's screen comes back on exit.
    write!(out, "\x1b[?1049h\x1b[?25l")?;
    let result = (|| {
        while !STOP.load(Ordering::Relaxed) {
            let lines = frame(c, o, &mut last, terminal_size())?;
            // Home, then each line cleared to its end, then the rest below.
            let mut screen = String::from("\x1b[H");
            for l in &lines {
                screen.push_str(l);
                screen.push_str("\x1b[K\r\n");
            }
            screen.push_str("\x1b[J");
            out.write_all(screen.as_bytes())?;
            out.flush()?;
            let until = Instant::now() + o.interval;
            while Instant::now() < until && !STOP.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Ok(())
    })();
    write!(out, "\x1b[?25h\x1b[?1049l")?;
    out.flush()?;
    result
}
