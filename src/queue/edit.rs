//! Writes: each call here does one core command's work through the key API,
//! fires the notification that command fires (and `del` when it empties the
//! key), and replicates it as that command with explicit values — one call,
//! so no write can forget its notification or its effect.

use std::ffi::CStr;

use smallvec::SmallVec;

use crate::ffi::{word, Arg, Class, Key, Word};

use super::Queue;

/// The arguments of one replicated effect (a key and up to 16 more on the
/// stack: a batch of 8 pairs).
type Effect<'a> = SmallVec<[Arg<'a>; 17]>;

/// A zset score as written: the number and the text a replica applies.
#[derive(Clone, Copy)]
pub struct Score<'a> {
    pub value: i64,
    pub text: Arg<'a>,
}

impl Score<'static> {
    /// Score 0: lanes, `P pending`, `P dead`.
    pub fn zero() -> Score<'static> {
        Score {
            value: 0,
            text: word(Word::Zero),
        }
    }
}

impl<'q> Queue<'q> {
    /// `ZADD key score member…`.
    pub fn zadd(&self, key: Key, score: Score, members: &[Arg]) {
        if members.is_empty() {
            return;
        }
        for &m in members {
            key.zset_add(score.value as f64, m, false);
        }
        key.notify_added(Class::Zset, c"zadd");
        if self.call.repl.sends_effect() {
            let mut effect: Effect = smallvec::smallvec![key.name()];
            for &m in members {
                effect.push(score.text);
                effect.push(m);
            }
            self.ctx.replicate(c"ZADD", &effect);
        }
    }

    /// `ZREM key member…` (`event`: `zrem`, or `zpopmin` for a head taken).
    pub fn zrem(&self, key: Key, members: &[Arg], event: &CStr) {
        let send = self.call.repl.sends();
        let mut effect: Effect = SmallVec::new();
        if send {
            effect.push(key.name());
        }
        let mut removed = false;
        for &m in members {
            if key.zset_rem(m) {
                removed = true;
                if send {
                    effect.push(m);
                }
            }
        }
        if removed {
            key.notify(Class::Zset, event);
            // Built above only when it is sent.
            self.call.repl.effect(c"ZREM", &effect);
        }
    }

    /// `HSET key field value…` (`event`: `hset`, or `hincrby` for a count).
    pub fn hset(&self, key: Key, pairs: &[(Arg, Arg)], event: &CStr) {
        if pairs.is_empty() {
            return;
        }
        for chunk in pairs.chunks(4) {
            key.hash_set_many(chunk);
        }
        key.notify_added(Class::Hash, event);
        if self.call.repl.sends_effect() {
            let mut effect: Effect = smallvec::smallvec![key.name()];
            for &(f, v) in pairs {
                effect.push(f);
                effect.push(v);
            }
            self.ctx.replicate(c"HSET", &effect);
        }
    }

    /// `HDEL key field…` of the fields present.
    pub fn hdel(&self, key: Key, fields: &[Arg]) {
        self.hdel_after(key, fields, None);
    }

    /// A count's new value, as `HINCRBY` then (at 0 or below) `HDEL` leave it:
    /// the field set, or removed.
    pub fn set_count(&self, key: Key, field: Arg, value: i64) {
        if value > 0 {
            let v = self.ctx.string_from_i64(value);
            self.hset(key, &[(field, v.as_arg())], c"hincrby");
        } else {
            // As the script's HINCRBY then HDEL: both events, one effect.
            self.hdel_after(key, &[field], Some(c"hincrby"));
        }
    }

    /// [`Queue::hdel`], with `first` fired before `hdel` when a field went.
    fn hdel_after(&self, key: Key, fields: &[Arg], first: Option<&CStr>) {
        let mut effect: Effect = smallvec::smallvec![key.name()];
        for &f in fields {
            if key.hash_del(f) {
                effect.push(f);
            }
        }
        if effect.len() > 1 {
            if let Some(event) = first {
                self.ctx.notify(Class::Hash, event, key.name());
            }
            key.notify(Class::Hash, c"hdel");
            self.call.repl.effect(c"HDEL", &effect);
        }
    }

    /// `RPUSH key value…`.
    pub fn rpush(&self, key: Key, values: &[Arg]) {
        self.push(key, values, false);
    }

    /// `LPUSH key value…`.
    pub fn lpush(&self, key: Key, values: &[Arg]) {
        self.push(key, values, true);
    }

    fn push(&self, key: Key, values: &[Arg], head: bool) {
        if values.is_empty() {
            return;
        }
        for &v in values {
            if head {
                key.list_push_head(v);
            } else {
                key.list_push_tail(v);
            }
        }
        let (event, cmd) = if head {
            (c"lpush", c"LPUSH")
        } else {
            (c"rpush", c"RPUSH")
        };
        key.notify_added(Class::List, event);
        if self.call.repl.sends_effect() {
            let mut effect: Effect = smallvec::smallvec![key.name()];
            effect.extend_from_slice(values);
            self.ctx.replicate(cmd, &effect);
        }
    }

    /// `LTRIM key 0 keep-1`, `end` being that `keep-1` as text. Fires
    /// `ltrim` whether or not it trimmed, as the core command does.
    pub fn ltrim(&self, key: Key, keep: usize, end: Arg) {
        while key.len() > keep {
            key.list_pop_tail();
        }
        key.touch();
        key.notify(Class::List, c"ltrim");
        self.call
            .repl
            .effect(c"LTRIM", &[key.name(), word(Word::Zero), end]);
    }

    /// `LTRIM key -keep -1`, `start` being that `-keep` as text: the last
    /// `keep` (≥ 1) stay.
    pub fn ltrim_head(&self, key: Key, keep: usize, start: Arg) {
        while key.len() > keep {
            key.list_pop_head();
        }
        key.touch();
        key.notify(Class::List, c"ltrim");
        let end = self.ctx.string(b"-1");
        self.call
            .repl
            .effect(c"LTRIM", &[key.name(), start, end.as_arg()]);
    }

    /// `LREM key 0 value`: every occurrence, found by a scan of the list.
    pub fn lrem(&self, key: Key, value: Arg) {
        let positions = key.list_positions(value.bytes());
        if positions.is_empty() {
            return;
        }
        // From the tail, so that the positions still to go do not move.
        for &i in positions.iter().rev() {
            key.list_delete(i);
        }
        key.notify(Class::List, c"lrem");
        self.call
            .repl
            .effect(c"LREM", &[key.name(), word(Word::Zero), value]);
    }

    /// `LMOVE key key LEFT RIGHT`: the head to the tail. A one-element list
    /// stays as it is (popping it would delete the key and its TTL) but
    /// counts as written, as the core command does.
    pub fn rotate(&self, key: Key) {
        if key.len() > 1 {
            if let Some(head) = key.list_pop_head() {
                key.list_push_tail(head.as_arg());
            }
        } else {
            key.touch();
        }
        key.notify(Class::List, c"lpop");
        key.notify(Class::List, c"rpush");
        let name = key.name();
        self.call
            .repl
            .effect(c"LMOVE", &[name, name, word(Word::Left), word(Word::Right)]);
    }

    /// `LPOP key`: the head, gone.
    pub fn lpop(&self, key: Key) {
        if key.list_pop_head().is_some() {
            key.notify(Class::List, c"lpop");
            self.call.repl.effect(c"LPOP", &[key.name()]);
        }
    }

    /// `DEL key`, when it exists.
    pub fn del(&self, key: Key) {
        if key.kind() == crate::ffi::Kind::Empty {
            return;
        }
        key.delete();
        self.ctx.notify(Class::Generic, c"del", key.name());
        self.call.repl.effect(c"DEL", &[key.name()]);
    }

    /// `ZADD P gnext at lane` unless it is there at that time already.
    pub fn wait_in_next(&self, next: Key, lane: Arg, at: i64) {
        if next.zset_score(lane) != Some(at as f64) {
            let text = self.ctx.string_from_i64(at);
            self.zadd(
                next,
                Score {
                    value: at,
                    text: text.as_arg(),
                },
                &[lane],
            );
        }
    }

    /// `SADD` / `SREM` on `P paused` (through a call: the key API has no set
    /// calls); whether it changed the set.
    pub fn paused_set(&self, lane: Arg, paused: bool) -> Result<bool, crate::model::error::Error> {
        let name = self.paused_key()?.as_arg();
        let cmd = if paused { c"SADD" } else { c"SREM" };
        let changed = self.ctx.set_call(cmd, name, lane)? == 1;
        if changed {
            self.call.repl.effect(cmd, &[name, lane]);
        }
        Ok(changed)
    }
}
