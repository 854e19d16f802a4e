//! Prefix → key names (SPEC section 1). Every key a command touches is the
//! prefix followed by a fixed suffix (`P gring`: the prefix, then `RING`),
//! so the prefix is the one declared key.

pub const RING: &[u8] = b"gring";
pub const WEIGHT: &[u8] = b"gweight";
pub const LIMIT: &[u8] = b"glimit";
pub const ACTIVE: &[u8] = b"gactive";
pub const PAUSED: &[u8] = b"gpaused";
pub const LEASES: &[u8] = b"leases";
pub const JLEASE: &[u8] = b"jlease";
pub const JRETURNS: &[u8] = b"jreturns";
pub const DEAD: &[u8] = b"dead";
pub const JDEAD: &[u8] = b"jdead";
pub const POLICY: &[u8] = b"policy";

/// `P g:<lane>:pending`, the lane's waiting jobs. The name is not
/// injective across queues: when one prefix extends another, a lane name
/// holding `:g:` can name another queue's key (prefix `a:` with lane `x:g:y`
/// and prefix `a:g:x:` with lane `y` both give `a:g:x:g:y:pending`). Give
/// queues prefixes that do not extend one another (the README says so).
pub fn pending(prefix: &[u8], lane: &[u8]) -> Vec<u8> {
    pending_parts(prefix, lane).concat()
}

/// [`pending`] in pieces, to be joined without a heap allocation.
pub fn pending_parts<'a>(prefix: &'a [u8], lane: &'a [u8]) -> [&'a [u8]; 4] {
    [prefix, b"g:", lane, b":pending"]
}

/// Whether every `P…` key hashes to the prefix's slot: the prefix itself
/// holds a `{` with a `}` after it and something in between (the server's
/// rule looks at the first `{` and the first `}` after it).
pub fn has_hash_tag(prefix: &[u8]) -> bool {
    let Some(open) = prefix.iter().position(|&b| b == b'{') else {
        return false;
    };
    match prefix[open + 1..].iter().position(|&b| b == b'}') {
        Some(len) => len > 0,
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(pending(b"emq:{o}:", b"PLR1"), b"emq:{o}:g:PLR1:pending");
    }

    #[test]
    fn a_prefix_that_extends_another_can_alias_its_keys() {
        assert_eq!(pending(b"a:", b"x:g:y"), pending(b"a:g:x:", b"y"));
    }

    #[test]
    fn hash_tags() {
        assert!(has_hash_tag(b"emq:{orders}:"));
        assert!(has_hash_tag(b"{a}"));
        assert!(!has_hash_tag(b"emq:orders:"));
        assert!(!has_hash_tag(b"emq:{}:"));
        assert!(!has_hash_tag(b"emq:{orders:"));
        // The first '{' decides: "{}{x}" has an empty tag.
        assert!(!has_hash_tag(b"{}{x}"));
        assert!(!has_hash_tag(b"emq:}{"));
    }
}
