//! When a job was minted, read from its id (SPEC section 8): EchoMQ's job
//! ids are branded — three letters, then eleven characters of base62
//! (`0-9A-Za-z`, most significant first) holding a snowflake whose top 41
//! bits are ms since 2024-01-01T00:00:00Z. A job's wait is then measured
//! without a field added to any row.

/// 2024-01-01T00:00:00Z in ms since the Unix epoch.
pub const EPOCH_MS: i64 = 1_704_067_200_000;

/// Bits of the snowflake below its time.
const TIME_SHIFT: u32 = 22;

const BRAND_LEN: usize = 3;
const DIGITS: usize = 11;

fn digit(c: u8) -> Option<u64> {
    match c {
        b'0'..=b'9' => Some(u64::from(c - b'0')),
        b'A'..=b'Z' => Some(u64::from(c - b'A') + 10),
        b'a'..=b'z' => Some(u64::from(c - b'a') + 36),
        _ => None,
    }
}

/// The mint time (ms since the Unix epoch) of a branded id; `None` for an
/// id of another form (it is served, but has no wait).
pub fn mint_ms(id: &[u8]) -> Option<i64> {
    if id.len() != BRAND_LEN + DIGITS || !id[..BRAND_LEN].iter().all(u8::is_ascii_alphabetic) {
        return None;
    }
    let mut snowflake: u64 = 0;
    for &c in &id[BRAND_LEN..] {
        snowflake = snowflake.checked_mul(62)?.checked_add(digit(c)?)?;
    }
    Some((snowflake >> TIME_SHIFT) as i64 + EPOCH_MS)
}

/// A branded id minted at `ms` (the test support's and the benches' ids).
pub fn brand(kind: &[u8; 3], ms: i64, low: u64) -> Vec<u8> {
    const ALPHABET: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut n = (((ms - EPOCH_MS).max(0) as u64) << TIME_SHIFT) | (low & ((1 << TIME_SHIFT) - 1));
    let mut digits = [b'0'; DIGITS];
    for d in digits.iter_mut().rev() {
        *d = ALPHABET[(n % 62) as usize];
        n /= 62;
    }
    let mut id = kind.to_vec();
    id.extend_from_slice(&digits);
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_branded_id_gives_back_its_mint_time() {
        for ms in [
            EPOCH_MS,
            EPOCH_MS + 1,
            1_765_000_000_123,
            EPOCH_MS + (1 << 41) - 1,
        ] {
            for low in [0, 1, (1 << 22) - 1] {
                let id = brand(b"JOB", ms, low);
                assert_eq!(id.len(), 14);
                assert_eq!(mint_ms(&id), Some(ms), "{}", String::from_utf8_lossy(&id));
            }
        }
    }

    #[test]
    fn other_ids_have_no_mint_time() {
        for id in [
            &b"JOB-a-00001"[..],
            b"",
            b"JOB0000000000",
            b"JOB000000000000",
            b"J0B00000000000",
            b"JOB0000000000-",
            b"JOBzzzzzzzzzzz", // past 2^64
        ] {
            assert_eq!(mint_ms(id), None, "{}", String::from_utf8_lossy(id));
        }
    }
}
