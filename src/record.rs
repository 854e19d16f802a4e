//! The record of a leased or dead job (`P jlease`, `P jdead`):
//! `"<mint> <lane>"`, the mint as the server formats a zset score (what
//! `ZSCORE` replies), one space, the lane. Whether a mint read back is a
//! score the server can store is asked of the server (`Arg::to_score`).

use crate::ffi::{Ctx, RStr};

/// A zset score as this server formats it (what `ZSCORE` replies): an
/// integer well inside 2^53 as its digits (every server prints those so),
/// else as the server prints it — `%.17g` on Redis before 7.2, whose
/// `RM_CreateStringFromDouble` prints otherwise.
pub fn score_text(ctx: &Ctx, score: f64) -> RStr {
    if let Some(int) = integer_score(score) {
        let mut digits = [0u8; 20];
        return ctx.string(decimal(int, &mut digits));
    }
    if ctx.scores_print_17g() {
        return ctx.string(&crate::ffi::ctx::format_17g(score));
    }
    ctx.string_from_double(score)
}

/// The record `"<mint> <lane>"` (one string made: the mint's digits written
/// beside the lane when it is an integer, the common case).
pub fn lease_record(ctx: &Ctx, mint: f64, lane: &[u8]) -> RStr {
    match integer_score(mint) {
        Some(int) => {
            let mut digits = [0u8; 20];
            ctx.string_of(&parts(decimal(int, &mut digits), lane))
        }
        None => ctx.string_of(&parts(score_text(ctx, mint).bytes(), lane)),
    }
}

/// `v` in decimal, written at the end of `buf` (a claim writes one per
/// leased job: no formatting machinery).
fn decimal(v: i64, buf: &mut [u8; 20]) -> &[u8] {
    let mut n = v.unsigned_abs();
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if v < 0 {
        at -= 1;
        buf[at] = b'-';
    }
    &buf[at..]
}

/// The common case of a mint printed without a round trip through the
/// server.
pub fn integer_score(score: f64) -> Option<i64> {
    // -0.0 is printed "-0" by the server: not this case.
    let plain = score.fract() == 0.0 && score.abs() < 1e15 && !(score == 0.0 && score.is_sign_negative());
    plain.then_some(score as i64)
}

/// A record's mint as a zset score, by the server's rules (what `ZADD`
/// stores); `None` when it is not one. The digits a claim writes are read
/// here; anything else is asked of the server.
pub fn mint_score(ctx: &Ctx, mint: &[u8]) -> Option<f64> {
    plain_integer(mint).or_else(|| ctx.string(mint).as_arg().to_score())
}

/// An integer in the server's own grammar (no "-0", no leading zero) whose
/// double is exact: what the server's parser makes of it too.
fn plain_integer(text: &[u8]) -> Option<f64> {
    crate::args::parse_i64(text)
        .filter(|n| n.unsigned_abs() <= 1 << 53)
        .map(|n| n as f64)
}

/// A record split at its first space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    pub mint: &'a [u8],
    pub lane: &'a [u8],
}

/// `None` when the record is not `"<mint> <lane>"` with both parts
/// non-empty (the mint's own validity aside).
pub fn parse(record: &[u8]) -> Option<Record<'_>> {
    let space = record.iter().position(|&b| b == b' ')?;
    let (mint, lane) = (&record[..space], &record[space + 1..]);
    (!mint.is_empty() && !lane.is_empty()).then_some(Record { mint, lane })
}

/// The record's parts, to be joined: `[mint, " ", lane]`.
pub fn parts<'a>(mint: &'a [u8], lane: &'a [u8]) -> [&'a [u8]; 3] {
    [mint, b" ", lane]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_scores_print_plainly_on_every_server() {
        assert_eq!(integer_score(42.0), Some(42));
        assert_eq!(integer_score(-7.0), Some(-7));
        assert_eq!(integer_score(0.0), Some(0));
        assert_eq!(integer_score(-0.0), None, "the server prints -0");
        assert_eq!(integer_score(1.5), None);
        assert_eq!(integer_score(1e17), None, "Redis 7.0 prints 1e+17");
        // Where the fast path applies, %.17g agrees with it.
        for v in [1.0, 123456789012345.0, -99.0] {
            let fast = integer_score(v).unwrap().to_string();
            assert_eq!(crate::ffi::ctx::format_17g(v), fast.into_bytes());
        }
    }

    #[test]
    fn integers_in_decimal() {
        // integer_score keeps |v| < 1e15; the formatter takes any i64.
        for v in [0, 7, -7, 10, 999_999_999_999_999, -123_456, i64::MIN, i64::MAX] {
            let mut buf = [0u8; 20];
            assert_eq!(decimal(v, &mut buf), v.to_string().as_bytes());
        }
    }

    #[test]
    fn plain_integers_read_as_the_server_reads_them() {
        for (text, v) in [
            ("0", 0.0),
            ("7", 7.0),
            ("-7", -7.0),
            ("9007199254740992", 9_007_199_254_740_992.0),
        ] {
            assert_eq!(plain_integer(text.as_bytes()), Some(v), "{text}");
        }
        for other in [
            "",
            "-",
            "-0",
            "007",
            "+7",
            " 7",
            "7 ",
            "1.5",
            "1e3",
            "9007199254740993",
            "inf",
            "0x10",
        ] {
            assert_eq!(
                plain_integer(other.as_bytes()),
                None,
                "{other}: left to the server"
            );
        }
    }

    #[test]
    fn records_split_at_the_first_space() {
        assert_eq!(
            parse(b"1.5 lane a"),
            Some(Record {
                mint: b"1.5",
                lane: b"lane a"
            })
        );
        assert_eq!(parse(b"-inf x").map(|r| r.mint), Some(&b"-inf"[..]));
        for bad in [&b""[..], b"12", b"12 ", b" x", b" "] {
            assert_eq!(parse(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
        assert_eq!(parts(b"7", b"a").concat(), b"7 a");
    }
}
