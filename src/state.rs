//! Reads a lane's stored numbers, validated: the read half of every command.

use crate::args::parse_i64;
use crate::errors::{Error, INTEGER};
use crate::store::{Arg, Ctx, KeyRead, Kind, RStr};

/// An integer field of a hash: `None` when the key or the field is missing;
/// `WRONGTYPE` when the key is not a hash; an error naming the key and the
/// field when the value is not an integer.
pub fn stored_int(ctx: &Ctx, key: &RStr, field: Arg, what: &'static str) -> Result<Option<i64>, Error> {
    let Some(hash) = ctx.open_read(key) else {
        return Ok(None);
    };
    hash.kind().expect(Kind::Hash)?;
    match hash.hash_get(field) {
        None => Ok(None),
        Some(v) => parse_i64(v.bytes())
            .map(Some)
            .ok_or_else(|| Error::bad_stored(what, field.bytes(), key.bytes(), INTEGER)),
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
