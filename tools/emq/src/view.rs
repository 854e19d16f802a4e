//! What `emq` prints, from figures already read: pure functions, tested
//! without a server.

use std::fmt::Write;

/// One lane's row. Stored values are shown as stored (a damaged one too).
#[derive(Debug, Clone, PartialEq)]
pub struct LaneRow {
    /// Its name as shown (made printable), and as stored.
    pub lane: String,
    pub key: Vec<u8>,
    /// `ZCARD` of the pending set, or the error reading it gave.
    pub depth: Result<u64, String>,
    pub active: Option<String>,
    pub limit: Option<String>,
    pub weight: Option<String>,
    pub paused: Result<bool, String>,
    /// Its rate as stored (`P grate`), when it has one.
    pub rate: Option<String>,
    /// When it may be served again (`P gnext`, ms, as stored): throttled
    /// until then, or paused until then.
    pub back_at: Option<String>,
    /// `back_at` is its rate's wait, not the end of a pause: always for an
    /// unpaused lane; for a paused one when EMQ.LANE says it is paused
    /// until no time (EchoMQ's `@gpause` keeps a throttled lane's wait).
    pub rate_wait: bool,
    /// How many times the ring holds the lane (1 when healthy and
    /// serviceable; 2 or more only after outside damage).
    pub ringed: usize,
    /// Its figures over the window (EMQ.STATS), when the server keeps them.
    pub fig: Option<Fig>,
}

/// A lane's figures over the window, as EMQ.STATS gives them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fig {
    pub jobs: i64,
    /// Its share of the queue's jobs, and of the weight of the lanes served.
    pub share: f64,
    pub weight_share: f64,
    /// Its share of the queue's busy time (worker time its jobs used).
    pub busy_share: f64,
    pub wait_p99: Option<i64>,
    /// How long its head has waited (nil: empty, or no mint time).
    pub oldest: Option<i64>,
}

/// The queue's figures over the window (EMQ.STATS P).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueueFig {
    pub jobs: i64,
    pub lanes_served: i64,
    pub wait_p50: Option<i64>,
    pub wait_p99: Option<i64>,
}

/// `EMQ.QUEUE`'s figures.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Totals {
    pub ringed: i64,
    pub paused: i64,
    /// The whole queue is paused (`P meta` `paused`).
    pub queue_paused: bool,
    /// EchoMQ's flat queue (`P pending`): jobs with no lane.
    pub flat: i64,
    pub leased: i64,
    pub expired: i64,
    pub next_deadline: Option<i64>,
    pub scheduled: i64,
    pub due: i64,
    pub next_due: Option<i64>,
    /// Lanes in `P gnext`: throttled by their rate, paused until a time;
    /// and the first time one comes back.
    pub throttled: i64,
    pub timed_paused: i64,
    pub next_return: Option<i64>,
    pub dead: i64,
    /// As stored (a damaged one shown as it is).
    pub max_stalled: Option<String>,
    pub completed: i64,
    pub failed: i64,
}

/// Unreadable pending sets first (they need an operator), then deepest
/// first; ties by name, so that a refresh does not reorder them.
pub fn sort_by_depth(rows: &mut [LaneRow]) {
    let rank = |r: &LaneRow| match r.depth {
        Err(_) => u64::MAX,
        Ok(d) => d.min(u64::MAX - 1),
    };
    rows.sort_by(|a, b| rank(b).cmp(&rank(a)).then_with(|| a.lane.cmp(&b.lane)));
}

/// `12345678` as `12,345,678`.
pub fn thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    if n < 0 {
        out.insert(0, '-');
    }
    out
}

/// A duration in ms as `850ms`, `12.3s`, `4m05s`, `3h12m`, `2d04h`.
pub fn duration(ms: i64) -> String {
    let sign = if ms < 0 { "-" } else { "" };
    let ms = ms.unsigned_abs();
    let s = ms / 1000;
    let body = if ms < 1000 {
        format!("{ms}ms")
    } else if s < 60 {
        format!("{}.{}s", s, (ms % 1000) / 100)
    } else if s < 3600 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else if s < 86_400 {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    } else {
        format!("{}d{:02}h", s / 86_400, (s % 86_400) / 3600)
    };
    format!("{sign}{body}")
}

/// Stored bytes (a name, a damaged value) as text a terminal shows
/// literally: ASCII control characters (an escape sequence would redraw the
/// screen) and bytes that are not UTF-8 as `\xNN`; other control and
/// invisible characters (C1 controls, zero-width and direction marks) as
/// `\u{NNNN}`; a backslash as `\\` — so two different names never look
/// alike.
pub fn printable(name: &[u8]) -> String {
    let mut out = String::with_capacity(name.len());
    for chunk in name.utf8_chunks() {
        for ch in chunk.valid().chars() {
            match ch {
                '\\' => out.push_str("\\\\"),
                c if c.is_ascii_control() => {
                    let _ = write!(out, "\\x{:02x}", c as u32);
                }
                c if c.is_control() || invisible(c) => out.extend(c.escape_unicode()),
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out
}

/// Characters that print as nothing, or reorder what follows: zero-width
/// spaces and joiners, direction marks and overrides, the byte-order mark.
fn invisible(c: char) -> bool {
    matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{feff}' | '\u{00ad}')
}

/// A rate as people read it: `20/1s`, with `b5` when its burst is not its
/// count; as stored when it is not a rate (damaged).
fn rate_cell(text: &str) -> String {
    let parts: Vec<Option<i64>> = text.split(' ').map(|p| p.parse().ok()).collect();
    match parts[..] {
        [Some(n), Some(period), Some(burst)] if n == burst => format!("{n}/{}", duration(period)),
        [Some(n), Some(period), Some(burst)] => format!("{n}/{} b{burst}", duration(period)),
        _ => format!("{text} (damaged)"),
    }
}

/// The lanes table's columns: the lane's state, then its figures (its share
/// of jobs beside its share of weight and of worker time, wait p99, oldest
/// wait), the name last (a long one costs only its own column).
pub const HEADER: [&str; 12] = [
    "DEPTH",
    "ACTIVE/LIMIT",
    "WEIGHT",
    "RATE",
    "PAUSED",
    "RINGED",
    "JOBS%",
    "WT%",
    "BUSY%",
    "P99",
    "OLDEST",
    "LANE",
];

/// A share as a percentage with one decimal.
fn percent(v: f64) -> String {
    format!("{:.1}%", v * 100.0)
}

/// One lane's cells at server time `now`, in [`HEADER`]'s order. A
/// throttled lane's rate, and a timed pause, say how long they have left.
pub fn lane_cells(r: &LaneRow, now: i64) -> [String; 12] {
    let left = || -> Option<String> {
        let at = r.back_at.as_deref()?;
        Some(match at.parse::<f64>() {
            Ok(at) if at as i64 > now => duration(at as i64 - now),
            Ok(_) => "due".into(),
            Err(_) => format!("{at}?"),
        })
    };
    let paused = matches!(r.paused, Ok(true)) && !r.rate_wait;
    let fig = r.fig.as_ref();
    let ms = |v: Option<i64>| v.map_or_else(|| "-".to_string(), duration);
    [
        match &r.depth {
            Ok(d) => thousands(*d as i64),
            Err(e) => e.clone(),
        },
        format!(
            "{}/{}",
            r.active.as_deref().unwrap_or("0"),
            r.limit.as_deref().unwrap_or("-")
        ),
        r.weight.clone().unwrap_or_else(|| "1".into()),
        match (r.rate.as_deref(), left().filter(|_| !paused)) {
            (None, _) => "-".into(),
            (Some(rate), None) => rate_cell(rate),
            (Some(rate), Some(wait)) => format!("{} wait {wait}", rate_cell(rate)),
        },
        match (&r.paused, left().filter(|_| !r.rate_wait)) {
            (Ok(true), Some(until)) => format!("for {until}"),
            (Ok(true), None) => "yes".into(),
            (Ok(false), _) => "no".into(),
            (Err(e), _) => e.clone(),
        },
        match r.ringed {
            0 => "no".to_string(),
            1 => "yes".to_string(),
            n => format!("{n}x"),
        },
        fig.map_or("-".into(), |f| percent(f.share)),
        fig.map_or("-".into(), |f| percent(f.weight_share)),
        fig.map_or("-".into(), |f| percent(f.busy_share)),
        ms(fig.and_then(|f| f.wait_p99)),
        ms(fig.and_then(|f| f.oldest)),
        r.lane.clone(),
    ]
}

/// Whether a lane got less than its share: served in the window, its share
/// of jobs under its share of weight by more than a tenth of it.
pub fn short_of_share(r: &LaneRow) -> bool {
    r.fig
        .as_ref()
        .is_some_and(|f| f.weight_share > 0.0 && f.share < f.weight_share * 0.9)
}

/// The queue's figures in four lines. `now` is the server's clock (ms);
/// `rate` the jobs claimed per second on the server since the last frame;
/// `fig` the queue's figures over the window, when the server keeps them.
pub fn totals_lines(
    lanes: usize,
    t: &Totals,
    now: i64,
    rate: Option<f64>,
    fig: Option<&QueueFig>,
) -> Vec<String> {
    let when = |at: Option<i64>, past: &str| match at {
        Some(d) if d <= now => format!("{past} {} ago", duration(now - d)),
        Some(d) => format!("in {}", duration(d - now)),
        None => "none".into(),
    };
    let paused = if t.queue_paused { "   QUEUE PAUSED" } else { "" };
    vec![
        format!(
            "lanes {}   ringed {}   paused {}   throttled {}   leased {}   expired {}   dead {}{paused}",
            thousands(lanes as i64),
            thousands(t.ringed),
            thousands(t.paused),
            thousands(t.throttled),
            thousands(t.leased),
            thousands(t.expired),
            thousands(t.dead),
        ),
        format!(
            "scheduled {}   due {}   flat {}   completed {}   failed {}   max-stalled {}",
            thousands(t.scheduled),
            thousands(t.due),
            thousands(t.flat),
            thousands(t.completed),
            thousands(t.failed),
            match t.max_stalled.as_deref() {
                None => "none".into(),
                Some(v) => v
                    .parse::<i64>()
                    .map_or_else(|_| format!("{v} (damaged)"), thousands),
            },
        ),
        format!(
            "server: {} jobs/s claimed   next lease deadline {}   next due {}{}",
            rate.map_or("-".into(), |r| thousands(r.round() as i64)),
            when(t.next_deadline, "expired"),
            when(t.next_due, "due"),
            match t.next_return {
                Some(_) => format!("   next return {}", when(t.next_return, "due")),
                None => String::new(),
            },
        ),
        match fig {
            Some(f) => format!(
                "window: {} jobs   {} lanes served   wait p50 {}   p99 {}",
                thousands(f.jobs),
                thousands(f.lanes_served),
                f.wait_p50.map_or("-".into(), duration),
                f.wait_p99.map_or("-".into(), duration),
            ),
            None => "window: no figures (EMQ.STATS)".into(),
        },
    ]
}

/// A healthy lane's row of `depth` jobs, for the tests.
#[cfg(test)]
pub fn row(lane: &str, depth: u64) -> LaneRow {
    LaneRow {
        lane: lane.into(),
        key: lane.as_bytes().to_vec(),
        depth: Ok(depth),
        active: None,
        limit: None,
        weight: None,
        paused: Ok(false),
        rate: None,
        back_at: None,
        rate_wait: false,
        ringed: 1,
        fig: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_people_write_them() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(-1234567), "-1,234,567");
        assert_eq!(duration(850), "850ms");
        assert_eq!(duration(12_345), "12.3s");
        assert_eq!(duration(245_000), "4m05s");
        assert_eq!(duration(3 * 3_600_000 + 12 * 60_000), "3h12m");
        assert_eq!(duration(-1500), "-1.5s");
        assert_eq!(percent(0.0), "0.0%");
        assert_eq!(percent(1.0 / 3.0), "33.3%");
    }

    #[test]
    fn deepest_first_then_by_name() {
        let mut rows = vec![row("b", 1), row("a", 1), row("c", 9), row("z", 0)];
        rows[3].depth = Err("WRONGTYPE".into());
        sort_by_depth(&mut rows);
        let names: Vec<&str> = rows.iter().map(|r| r.lane.as_str()).collect();
        assert_eq!(names, ["z", "c", "a", "b"]);
    }

    #[test]
    fn cells_show_stored_values_defaults_and_figures() {
        let mut r = row("t", 12_004);
        r.active = Some("3".into());
        r.limit = Some("4".into());
        r.paused = Ok(true);
        r.ringed = 2;
        r.fig = Some(Fig {
            jobs: 9,
            share: 0.1,
            weight_share: 0.25,
            busy_share: 0.5,
            wait_p99: Some(850),
            oldest: None,
        });
        assert_eq!(
            lane_cells(&r, 0),
            ["12,004", "3/4", "1", "-", "yes", "2x", "10.0%", "25.0%", "50.0%", "850ms", "-", "t"]
                .map(String::from)
        );
        assert!(short_of_share(&r), "10% of the jobs for 25% of the weight");
        let mut damaged = row("x", 0);
        damaged.weight = Some("abc".into());
        damaged.ringed = 0;
        damaged.depth = Err("WRONGTYPE".into());
        damaged.paused = Err("WRONGTYPE".into());
        assert_eq!(
            lane_cells(&damaged, 0)[..6],
            ["WRONGTYPE", "0/-", "abc", "-", "WRONGTYPE", "no"].map(String::from)
        );
        assert!(!short_of_share(&damaged), "no figures: no verdict");
    }

    #[test]
    fn rates_and_timed_pauses_say_how_long_they_have_left() {
        let mut rated = row("r", 5);
        rated.rate = Some("20 1000 5".into());
        rated.back_at = Some("10250".into());
        rated.ringed = 0;
        let c = lane_cells(&rated, 10_000);
        assert_eq!((c[3].as_str(), c[4].as_str()), ("20/1.0s b5 wait 250ms", "no"));
        let mut parked = row("p", 5);
        parked.paused = Ok(true);
        parked.back_at = Some("14900".into());
        parked.rate = Some("3 60000 3".into());
        let c = lane_cells(&parked, 10_000);
        assert_eq!((c[3].as_str(), c[4].as_str()), ("3/1m00s", "for 4.9s"));
        let mut broken = row("x", 1);
        broken.rate = Some("fast".into());
        assert_eq!(lane_cells(&broken, 0)[3], "fast (damaged)");

        // Paused by EchoMQ's @gpause while throttled: paused with no end,
        // its rate still waiting.
        let mut held = row("h", 5);
        held.paused = Ok(true);
        held.rate = Some("20 1000 5".into());
        held.back_at = Some("10250".into());
        held.rate_wait = true;
        let c = lane_cells(&held, 10_000);
        assert_eq!((c[3].as_str(), c[4].as_str()), ("20/1.0s b5 wait 250ms", "yes"));
        let totals = Totals {
            throttled: 1,
            timed_paused: 1,
            next_return: Some(10_250),
            ..Totals::default()
        };
        let lines = totals_lines(3, &totals, 10_000, None, None);
        assert!(lines[0].contains("throttled 1"), "{}", lines[0]);
        assert!(lines[2].ends_with("next return in 250ms"), "{}", lines[2]);
    }

    #[test]
    fn names_cannot_drive_the_terminal() {
        assert_eq!(printable(b"plain-\xc3\xa9"), "plain-\u{e9}");
        assert_eq!(printable(b"a\x1b[2Jb\n"), "a\\x1b[2Jb\\x0a");
        assert_eq!(printable("x\u{85}".as_bytes()), "x\\u{85}");
        // Bytes that are not UTF-8 keep their value: two such names differ.
        assert_eq!(printable(b"\xff\xfe"), "\\xff\\xfe");
        assert_ne!(printable(b"\xff\xfe"), printable(b"\xfe\xff"));
        // A backslash is escaped, so no name can look like an escape.
        assert_eq!(printable(b"\\x1b"), "\\\\x1b");
        assert_ne!(printable(b"\\x1b"), printable(b"\x1b"));
        // A C1 control is a character, not a byte: it cannot pass for one.
        assert_ne!(printable("c1\u{9b}31m".as_bytes()), printable(b"c1\x9b31m"));
        // Invisible and reordering characters show.
        assert_eq!(printable("ok\u{200b}".as_bytes()), "ok\\u{200b}");
        assert!(!printable("a\u{202e}b".as_bytes()).contains('\u{202e}'));
    }

    #[test]
    fn damaged_values_and_times_are_shown_as_damaged() {
        let mut bad = row("b", 1);
        bad.active = Some(printable(b"\x1b[2J"));
        assert!(!lane_cells(&bad, 0)[1].contains('\x1b'));
        let totals = Totals {
            max_stalled: Some("abc".into()),
            ..Totals::default()
        };
        assert!(totals_lines(1, &totals, 0, None, None)[1].ends_with("max-stalled abc (damaged)"));
        let paused = Totals {
            queue_paused: true,
            ..Totals::default()
        };
        assert!(totals_lines(1, &paused, 0, None, None)[0].ends_with("QUEUE PAUSED"));
    }

    #[test]
    fn the_window_line_gives_the_queues_figures() {
        let fig = QueueFig {
            jobs: 12_345,
            lanes_served: 7,
            wait_p50: Some(40),
            wait_p99: Some(2_500),
        };
        let lines = totals_lines(7, &Totals::default(), 0, Some(10.0), Some(&fig));
        assert_eq!(
            lines[3],
            "window: 12,345 jobs   7 lanes served   wait p50 40ms   p99 2.5s"
        );
    }
}
