//! A queue's stored state, read and validated (the read half of every
//! command), and the ring following a lane's change (SPEC section 1).

use crate::args::parse_i64;
use crate::errors::{Error, INTEGER};
use crate::keys;
use crate::schedule::{Lane, RingChange};
use crate::store::{self, Arg, Class, Ctx, KeyRead, Kind, RStr, Word};

/// One queue: its prefix and the context to open its keys with.
pub struct Queue<'a> {
    pub ctx: &'a Ctx,
    pub prefix: &'a [u8],
}

impl<'a> Queue<'a> {
    pub fn new(ctx: &'a Ctx, prefix: &'a [u8]) -> Queue<'a> {
        Queue { ctx, prefix }
    }

    /// `P` followed by `suffix` (one of the `keys::*` suffixes).
    pub fn key(&self, suffix: &[u8]) -> RStr {
        self.ctx.string_of(&[self.prefix, suffix])
    }

    /// `P g:<lane>:pending`.
    pub fn pending(&self, lane: &[u8]) -> RStr {
        self.ctx.string_of(&keys::pending_parts(self.prefix, lane))
    }

    /// The lane's numbers: depth, active count, ceiling, paused. Every key
    /// read is type-checked and every number validated.
    pub fn lane(&self, lane: Arg) -> Result<Lane, Error> {
        let ctx = self.ctx;
        let depth = zset_len(ctx, &self.pending(lane.bytes()))?;
        let active = stored_int(ctx, &self.key(keys::ACTIVE), lane, "active count of lane")?.unwrap_or(0);
        let limit = stored_int(ctx, &self.key(keys::LIMIT), lane, "limit of lane")?;
        let paused = self.paused(lane)?;
        Ok(Lane {
            depth,
            active,
            limit,
            paused,
        })
    }

    /// Whether the lane is in `P gpaused` (no call when the set is absent).
    pub fn paused(&self, lane: Arg) -> Result<bool, Error> {
        let name = self.key(keys::PAUSED);
        match self.ctx.kind_of(&name) {
            Kind::Empty => Ok(false),
            Kind::Set => Ok(self.ctx.set_call(c"SISMEMBER", &name, lane) == 1),
            _ => Err(Error::WrongType),
        }
    }

    /// `WRONGTYPE` unless `P gring` is a list or missing.
    pub fn check_ring(&self) -> Result<(), Error> {
        expect_kind(self.ctx, &self.key(keys::RING), Kind::List)
    }

    /// Applies a ring transition: `RPUSH` on joining, `LREM` on leaving.
    pub fn follow(&self, lane: Arg, change: RingChange) {
        let ring = self.key(keys::RING);
        match change {
            RingChange::Stay => {}
            RingChange::Join => {
                let list = self.ctx.open_write(&ring);
                list.list_push_tail(lane);
                self.ctx.notify(&list, Class::List, c"rpush");
                drop(list);
                // Wake the claims blocked on this ring (RM_ListPush does not).
                self.ctx.signal_ready(&ring);
                self.ctx.replicate(c"RPUSH", &[ring.as_arg(), lane]);
            }
            RingChange::Leave => {
                // A call to LREM, which fires its own notifications.
                self.ctx.list_remove_all(&ring, lane);
                self.ctx
                    .replicate(c"LREM", &[ring.as_arg(), store::word(Word::Zero), lane]);
            }
        }
    }

    /// Sets the lane's active count, removing the field at 0 or below.
    pub fn set_active(&self, active_key: &RStr, lane: Arg, active: i64) {
        let hash = self.ctx.open_write(active_key);
        if active > 0 {
            let v = self.ctx.string_from_i64(active);
            hash.hash_set(lane, v.as_arg());
            self.ctx.notify(&hash, Class::Hash, c"hincrby");
            self.ctx
                .replicate(c"HSET", &[active_key.as_arg(), lane, v.as_arg()]);
        } else {
            hash.hash_del(lane);
            self.ctx.notify(&hash, Class::Hash, c"hdel");
            self.ctx.replicate(c"HDEL", &[active_key.as_arg(), lane]);
        }
    }
}

/// An integer field of a hash: `None` when the key or the field is missing;
/// `WRONGTYPE` when the key is not a hash; an error naming the key and the
/// field when the value is not an integer.
pub fn stored_int(ctx: &Ctx, key: &RStr, field: Arg, what: &'static str) -> Result<Option<i64>, Error> {
    match ctx.open_read(key) {
        None => Ok(None),
        Some(hash) => int_field(&hash, key, field, what),
    }
}

/// [`stored_int`] on a key already open (`name` is its name, for errors).
pub fn int_field(
    hash: &impl KeyRead,
    name: &RStr,
    field: Arg,
    what: &'static str,
) -> Result<Option<i64>, Error> {
    hash.kind().expect(Kind::Hash)?;
    match hash.hash_get(field) {
        None => Ok(None),
        Some(v) => parse_i64(v.bytes())
            .map(Some)
            .ok_or_else(|| Error::bad_stored(what, field.bytes(), name.bytes(), INTEGER)),
    }
}

/// `ZCARD` of a zset key; `WRONGTYPE` when it is another type.
pub fn zset_len(ctx: &Ctx, key: &RStr) -> Result<u64, Error> {
    match ctx.open_read(key) {
        None => Ok(0),
        Some(k) => {
            k.kind().expect(Kind::Zset)?;
            Ok(k.len() as u64)
        }
    }
}

/// `WRONGTYPE` unless the key is missing or of type `want`.
pub fn expect_kind(ctx: &Ctx, key: &RStr, want: Kind) -> Result<(), Error> {
    ctx.kind_of(key).expect(want)
}

/// A `P jlease` record, `"<mint> <lane>"`, split: the mint's text and value,
/// and the lane. `None` when it is not of that form.
pub fn parse_record(record: &[u8]) -> Option<(&[u8], f64, &[u8])> {
    let space = record.iter().position(|&b| b == b' ')?;
    let (mint_text, lane) = (&record[..space], &record[space + 1..]);
    if lane.is_empty() {
        return None;
    }
    let mint: f64 = std::str::from_utf8(mint_text).ok()?.parse().ok()?;
    (!mint.is_nan()).then_some((mint_text, mint, lane))
}

#[cfg(test)]
mod tests {
    use super::parse_record;

    #[test]
    fn lease_records() {
        assert_eq!(
            parse_record(b"1.5 lane a"),
            Some((&b"1.5"[..], 1.5, &b"lane a"[..]))
        );
        assert_eq!(
            parse_record(b"-inf x"),
            Some((&b"-inf"[..], f64::NEG_INFINITY, &b"x"[..]))
        );
        assert_eq!(parse_record(b"1e+20 x").map(|r| r.1), Some(1e20));
        for bad in [&b""[..], b"12", b"12 ", b" x", b"abc x", b"nan x"] {
            assert_eq!(parse_record(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
