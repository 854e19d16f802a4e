//! The record of a leased or dead job (`P jlease`, `P jdead`):
//! `"<mint> <lane>"`, the mint as the server formats a zset score, one
//! space, the lane. Pure: whether the mint is a score the server can store
//! is asked of the server (`Arg::to_score`) by the caller.

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
