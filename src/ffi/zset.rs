//! Sorted-set reads and writes of a [`Key`] (`key.rs` opens it): scores,
//! ranges in ZPOPMIN order, and walks that stop their range before any write.

use std::os::raw::c_int;

use redis_module::raw;

use super::key::{Key, Kind, Members};
use super::string::{Arg, RStr};

impl Key<'_> {
    pub fn zset_score(&self, member: Arg) -> Option<f64> {
        if !self.is_open() || self.kind() != Kind::Zset {
            return None;
        }
        let mut score = 0f64;
        // SAFETY: an open zset key (checked above).
        let status = unsafe { api!(RedisModule_ZsetScore)(self.ptr(), member.ptr, &mut score) };
        (status == raw::REDISMODULE_OK as c_int).then_some(score)
    }

    /// The lowest score of a zset, if any.
    pub fn zset_first_score(&self) -> Option<f64> {
        self.zset_range(f64::INFINITY, 1).first().map(|(_, s)| *s)
    }

    /// The lowest score of a zset above `min` (exclusive), if any.
    pub fn zset_first_score_above(&self, min: f64) -> Option<f64> {
        if !self.is_open() || self.kind() != Kind::Zset {
            return None;
        }
        // SAFETY: an open zset key (checked above); the range is stopped before returning.
        unsafe {
            let mut score = None;
            if api!(RedisModule_ZsetFirstInScoreRange)(self.ptr(), min, f64::INFINITY, 1, 0)
                == raw::REDISMODULE_OK as c_int
                && api!(RedisModule_ZsetRangeEndReached)(self.ptr()) == 0
            {
                let mut s = 0f64;
                let ele = api!(RedisModule_ZsetRangeCurrentElement)(self.ptr(), &mut s);
                if RStr::own(ele).is_some() {
                    score = Some(s);
                }
            }
            api!(RedisModule_ZsetRangeStop)(self.ptr());
            score
        }
    }

    /// Whether a zset has a member scored `<= max` (no member is copied).
    pub fn zset_has_at_most(&self, max: f64) -> bool {
        if !self.is_open() || self.kind() != Kind::Zset {
            return false;
        }
        // SAFETY: an open zset key (checked above); the range is stopped before returning.
        unsafe {
            let found = api!(RedisModule_ZsetFirstInScoreRange)(self.ptr(), f64::NEG_INFINITY, max, 0, 0)
                == raw::REDISMODULE_OK as c_int
                && api!(RedisModule_ZsetRangeEndReached)(self.ptr()) == 0;
            api!(RedisModule_ZsetRangeStop)(self.ptr());
            found
        }
    }

    /// At most `n` members scored `<= max`, lowest first (ties by member):
    /// ZPOPMIN order.
    pub fn zset_range(&self, max: f64, n: usize) -> Members {
        let mut out = Members::new();
        out.reserve(n.min(1024));
        if n == 0 || !self.is_open() || self.kind() != Kind::Zset {
            return out;
        }
        let key = self.ptr();
        // SAFETY: an open zset key (checked above); the range is stopped before any write can follow.
        unsafe {
            if api!(RedisModule_ZsetFirstInScoreRange)(key, f64::NEG_INFINITY, max, 0, 0)
                != raw::REDISMODULE_OK as c_int
            {
                return out;
            }
            while out.len() < n && api!(RedisModule_ZsetRangeEndReached)(key) == 0 {
                let mut score = 0f64;
                let ele = api!(RedisModule_ZsetRangeCurrentElement)(key, &mut score);
                match RStr::own(ele) {
                    Some(s) => out.push((s, score)),
                    None => break,
                }
                if api!(RedisModule_ZsetRangeNext)(key) == 0 {
                    break;
                }
            }
            // Stopped before anything is removed: the range must not be open
            // across a ZsetRem.
            api!(RedisModule_ZsetRangeStop)(key);
        }
        out
    }

    /// Calls `f` with every member of a zset, lowest score first, without
    /// collecting them (an operator's walk of a large set). `f` must not
    /// write this key.
    pub fn zset_for_each(&self, mut f: impl FnMut(RStr, f64)) {
        self.zset_walk(f64::INFINITY, |member, score| {
            f(member, score);
            true
        });
    }

    /// Calls `f` with the members scored `<= max`, lowest first (ZPOPMIN
    /// order), until it returns `false`: a sweep reads only as far as it
    /// goes. `f` may read other keys, never write this one.
    pub fn zset_walk(&self, max: f64, mut f: impl FnMut(RStr, f64) -> bool) {
        if !self.is_open() || self.kind() != Kind::Zset {
            return;
        }
        let key = self.ptr();
        // SAFETY: an open zset key; the range is stopped before returning,
        // and `f` cannot reach this handle's writes (it gets owned strings).
        unsafe {
            if api!(RedisModule_ZsetFirstInScoreRange)(key, f64::NEG_INFINITY, max, 0, 0)
                != raw::REDISMODULE_OK as c_int
            {
                return;
            }
            while api!(RedisModule_ZsetRangeEndReached)(key) == 0 {
                let mut score = 0f64;
                let ele = api!(RedisModule_ZsetRangeCurrentElement)(key, &mut score);
                let go_on = match RStr::own(ele) {
                    Some(s) => f(s, score),
                    None => false,
                };
                if !go_on || api!(RedisModule_ZsetRangeNext)(key) == 0 {
                    break;
                }
            }
            api!(RedisModule_ZsetRangeStop)(key);
        }
    }

    // ---- writes (on a write command only) ----

    /// Adds or updates; with `nx` only adds. Returns whether it was added.
    pub fn zset_add(&self, score: f64, member: Arg, nx: bool) -> bool {
        self.wrote();
        let mut flags: c_int = if nx { raw::REDISMODULE_ZADD_NX as c_int } else { 0 };
        // SAFETY: an open key opened for writing, and a live string.
        unsafe { api!(RedisModule_ZsetAdd)(self.ptr(), score, member.ptr, &mut flags) };
        flags & raw::REDISMODULE_ZADD_ADDED as c_int != 0
    }

    pub fn zset_rem(&self, member: Arg) -> bool {
        self.wrote();
        let mut deleted: c_int = 0;
        // SAFETY: an open key opened for writing, and a live string.
        unsafe { api!(RedisModule_ZsetRem)(self.ptr(), member.ptr, &mut deleted) };
        deleted != 0
    }
}
