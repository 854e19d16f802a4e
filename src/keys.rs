//! Prefix → key names (SPEC section 1). Every key a command touches is the
//! prefix followed by a fixed suffix (`P gring`: the prefix, then `RING`),
//! so the prefix is the one declared key.

/// A queue's fixed keys: `P` followed by its entry in [`SUFFIXES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fixed {
    Ring,
    Weight,
    Limit,
    Active,
    Paused,
    Leases,
    Jlease,
    Jreturns,
    Dead,
    Jdead,
    Policy,
}

/// The suffixes, in the order of [`Fixed`].
pub const SUFFIXES: &[&[u8]] = &[
    b"gring",
    b"gweight",
    b"glimit",
    b"gactive",
    b"gpaused",
    b"leases",
    b"jlease",
    b"jreturns",
    b"dead",
    b"jdead",
    b"policy",
];

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
    fn every_fixed_key_has_its_suffix() {
        assert_eq!(SUFFIXES[Fixed::Ring as usize], b"gring");
        assert_eq!(SUFFIXES[Fixed::Policy as usize], b"policy");
        assert_eq!(SUFFIXES.len(), Fixed::Policy as usize + 1);
    }

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
        // Any length of tag (the server's rule has no bound).
        let long = format!("q:{{{}}}:", "t".repeat(300));
        assert!(has_hash_tag(long.as_bytes()));
    }
}
