//! What a valid argument is: one strict integer grammar (the server's own,
//! so that a value a core command stores is a value the module reads), and
//! the typed values the commands share — leases, delays, prefixes, lanes,
//! job ids under EchoMQ's kind rule.

use super::error::{Error, DELAY_RANGE, LEASE_RANGE};
use super::layout;

/// The longest lease: 2^40 ms (about 35 years).
pub const LEASE_MAX: i64 = 1 << 40;

/// Parses a signed 64-bit integer exactly as the server's `string2ll` does:
/// an optional `-`, no `+`, no leading zeros, no spaces, no overflow.
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, s),
    };
    match digits {
        [] => return None,
        [b'0'] => return (!neg).then_some(0),
        [b'0', ..] => return None,
        _ => {}
    }
    if digits.len() > 19 {
        return None;
    }
    // Up to 18 digits cannot overflow (10^18 < 2^63): no checks per digit.
    if digits.len() <= 18 {
        let mut v: i64 = 0;
        for &d in digits {
            let d = d.wrapping_sub(b'0');
            if d > 9 {
                return None;
            }
            v = v * 10 + i64::from(d);
        }
        return Some(if neg { -v } else { v });
    }
    let mut v: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    if neg {
        if v <= i64::MAX as u64 + 1 {
            Some((v as i128).wrapping_neg() as i64)
        } else {
            None
        }
    } else {
        i64::try_from(v).ok()
    }
}

/// An integer argument within `min..=max`, else an error naming it.
pub fn int_in(
    s: &[u8],
    name: &'static str,
    min: i64,
    max: i64,
    expected: &'static str,
) -> Result<i64, Error> {
    match parse_i64(s) {
        Some(v) if (min..=max).contains(&v) => Ok(v),
        _ => Err(Error::bad_arg(name, expected)),
    }
}

/// A lease length in ms.
pub fn lease(s: &[u8]) -> Result<i64, Error> {
    int_in(s, "lease", 1, LEASE_MAX, LEASE_RANGE)
}

/// A delay in ms (0: due at once).
pub fn delay(s: &[u8], name: &'static str) -> Result<i64, Error> {
    int_in(s, name, 0, LEASE_MAX, DELAY_RANGE)
}

/// The queue prefix: non-empty, and in cluster mode carrying a hash tag.
pub fn prefix(s: &[u8], cluster: bool) -> Result<&[u8], Error> {
    if s.is_empty() {
        Err(Error::EmptyPrefix)
    } else if cluster && !layout::has_hash_tag(s) {
        Err(Error::NoHashTag)
    } else {
        Ok(s)
    }
}

pub fn lane(s: &[u8]) -> Result<&[u8], Error> {
    if s.is_empty() {
        Err(Error::EmptyLane)
    } else {
        Ok(s)
    }
}

/// EchoMQ's kind rule: a job id begins with `kind` (an empty kind admits any
/// id), else `EMQKIND`.
pub fn job_of_kind<'a>(id: &'a [u8], kind: &[u8]) -> Result<&'a [u8], Error> {
    if id.starts_with(kind) {
        Ok(id)
    } else {
        Err(Error::Kind(kind.to_vec()))
    }
}

/// Whether `s` is `keyword`, ignoring ASCII case.
pub fn is_keyword(s: &[u8], keyword: &str) -> bool {
    s.eq_ignore_ascii_case(keyword.as_bytes())
}

/// The first occurrence of each item, in order, `key` naming it: a scan for
/// the handful a call usually names (a hash set costs more than the scan
/// below a few dozen), a hash set beyond.
pub fn distinct<'a, T: Copy>(items: Vec<T>, key: impl Fn(T) -> &'a [u8]) -> Vec<T> {
    if items.len() <= 32 {
        let mut kept: Vec<(T, &[u8])> = Vec::with_capacity(items.len());
        for item in items {
            let name = key(item);
            if !kept.iter().any(|k| k.1 == name) {
                kept.push((item, name));
            }
        }
        return kept.into_iter().map(|k| k.0).collect();
    }
    let mut seen = std::collections::HashSet::with_capacity(items.len());
    items.into_iter().filter(|i| seen.insert(key(*i))).collect()
}

/// `v` in decimal, written at the end of `buf`, without the formatting
/// machinery (a claim writes a few per leased job).
pub fn decimal(v: i64, buf: &mut [u8; 20]) -> &[u8] {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_follow_the_servers_grammar() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"7"), Some(7));
        assert_eq!(parse_i64(b"-12"), Some(-12));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-",
            b"-0",
            b"+1",
            b"01",
            b" 1",
            b"1 ",
            b"1.0",
            b"1e3",
            b"0x10",
            b"9223372036854775808",
            b"-9223372036854775809",
            b"99999999999999999999",
            b"abc",
            b"1\0",
        ] {
            assert_eq!(parse_i64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn distinct_keeps_first_occurrences_in_order() {
        let words = |s: &'static str| s.split(' ').map(str::as_bytes).collect::<Vec<_>>();
        for n in [3, 40] {
            // Short lists are scanned, long ones hashed: the same result.
            let mut items = words("b a b c a");
            items.extend((0..n).map(|i| &b"0123456789abcdefghijklmnopqrstuvwxyzABCDEF"[i..i + 1]));
            let kept = distinct(items.clone(), |s| s);
            let mut expect: Vec<&[u8]> = Vec::new();
            for i in items {
                if !expect.contains(&i) {
                    expect.push(i);
                }
            }
            assert_eq!(kept, expect, "{n}");
        }
        assert_eq!(distinct(words("x x x"), |s| s), words("x"));
    }

    #[test]
    fn lease_and_delay_bounds() {
        assert_eq!(lease(b"1"), Ok(1));
        assert_eq!(lease(b"1099511627776"), Ok(LEASE_MAX));
        assert!(lease(b"1099511627777").is_err());
        assert!(lease(b"0").is_err());
        assert!(lease(b"-5").is_err());
        let msg = lease(b"x").unwrap_err().message().unwrap();
        assert_eq!(msg, "ERR lease must be an integer from 1 to 1099511627776");
        assert_eq!(delay(b"0", "delay"), Ok(0));
        assert!(delay(b"-1", "delay").is_err());
    }

    #[test]
    fn prefixes_lanes_and_kinds() {
        assert_eq!(prefix(b"emq:", false), Ok(&b"emq:"[..]));
        assert_eq!(prefix(b"", false), Err(Error::EmptyPrefix));
        assert_eq!(prefix(b"emq:", true), Err(Error::NoHashTag));
        assert!(prefix(b"emq:{q}:", true).is_ok());
        assert_eq!(lane(b""), Err(Error::EmptyLane));
        assert!(is_keyword(b"bLoCk", "BLOCK"));
        assert!(!is_keyword(b"BLOCKS", "BLOCK"));
        assert!(job_of_kind(b"JOB01", b"JOB").is_ok());
        assert_eq!(job_of_kind(b"job01", b"JOB"), Err(Error::Kind(b"JOB".to_vec())));
        assert!(
            job_of_kind(b"anything", b"").is_ok(),
            "an empty kind admits any id"
        );
    }

    #[test]
    fn integers_in_decimal() {
        for v in [0, 7, -7, 10, 999_999_999_999_999, -123_456, i64::MIN, i64::MAX] {
            let mut buf = [0u8; 20];
            assert_eq!(decimal(v, &mut buf), v.to_string().as_bytes());
        }
    }
}
