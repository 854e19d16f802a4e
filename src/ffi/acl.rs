//! The caller's key permissions. The server checks only a command's declared
//! key (the prefix); every other key a command touches is checked here, when
//! it is first opened, before anything is written (docs/production.md, "ACL").
//!
//! Who the caller is:
//! - the primary's stream, an AOF load, a timer: no user, nothing to check;
//! - a connected client: its user, by client id;
//! - a client the server does not list (a script's, or another module's call):
//!   its user may be the superuser (no user at all), which only a call made
//!   "as the user" can tell apart without touching a NULL user; so a `PING`
//!   is made as the user first, and the user is read only if it exists.
//!
//! Where the server has Valkey's prefix check, one check that the user may
//! access every key under the prefix covers the whole command; otherwise (or
//! when it fails) each key is checked on its own.

use std::os::raw::{c_char, c_int};
use std::sync::atomic::Ordering;

use redis_module::raw;

use super::api::{PrefixCheck, PREFIX_CHECK};
use super::ctx::Ctx;
use super::guard::{errno, set_errno, State};
use super::string::{Arg, RStr};
use crate::model::error::Error;

impl Ctx {
    /// From now on, every key opened must be one the caller may access: read,
    /// or read and write on a write command. `prefix` is the command's
    /// declared key, which every key it touches begins with.
    pub fn guard_keys(&self, prefix: &[u8]) {
        let flags = if self.keys.writable {
            raw::REDISMODULE_CMD_KEY_ACCESS | raw::REDISMODULE_CMD_KEY_UPDATE
        } else {
            raw::REDISMODULE_CMD_KEY_ACCESS
        };
        self.guard.flags.set(flags as c_int);
        let state = match self.caller() {
            None => State::All,
            Some(None) => State::Nobody,
            Some(Some(user)) => {
                self.guard.owned.set(user);
                if prefix_allowed(user, prefix, flags) {
                    State::All
                } else {
                    State::Each(user)
                }
            }
        };
        self.guard.state.set(state);
    }

    /// The calling user: `None` when there is nothing to check (no client,
    /// or the superuser); `Some(None)` when the client's user is gone.
    fn caller(&self) -> Option<Option<*mut raw::RedisModuleUser>> {
        if self.replayed() {
            return None;
        }
        // SAFETY: the API pointers are checked present; the context is live and each user-name string returned is owned and freed by RStr.
        unsafe {
            let (Some(client_id), Some(name_by_id), Some(user_of), Some(current)) = (
                raw::RedisModule_GetClientId,
                raw::RedisModule_GetClientUserNameById,
                raw::RedisModule_GetModuleUserFromUserName,
                raw::RedisModule_GetCurrentUserName,
            ) else {
                return None; // A server without ACLs for modules.
            };
            let id = client_id(self.ptr);
            if id == 0 {
                return None;
            }
            set_errno(0);
            let name = RStr::own(name_by_id(self.ptr, id));
            let name = match name {
                Some(name) => name,
                // A listed client without a user: the superuser.
                None if errno() == libc::ENOTSUP => return None,
                None => {
                    if !self.has_user() {
                        return None;
                    }
                    RStr::own(current(self.ptr))?
                }
            };
            let user = user_of(name.ptr);
            Some((!user.is_null()).then_some(user))
        }
    }

    /// `NOPERM` unless the caller may access `key` (for keys reached by calls
    /// rather than opened: set keys).
    pub fn check_key(&self, key: Arg) -> Result<(), Error> {
        self.guard.check(self.ptr, key)
    }

    /// `NOPERM` unless the caller may publish on `channel`.
    pub fn check_publish(&self, channel: Arg) -> Result<(), Error> {
        self.guard.check_publish(channel)
    }

    /// Whether an unlisted client (a script's, a module's call) runs as some
    /// user: a `PING` made as that user fails with ENOTSUP only when there is
    /// none.
    fn has_user(&self) -> bool {
        // SAFETY: a live context; a NULL reply is checked before it is freed.
        unsafe {
            set_errno(0);
            let reply = api!(RedisModule_Call)(self.ptr, c"PING".as_ptr(), c"C".as_ptr());
            let none = reply.is_null() && errno() == libc::ENOTSUP;
            if !reply.is_null() {
                api!(RedisModule_FreeCallReply)(reply);
            }
            !none
        }
    }
}

fn prefix_allowed(user: *mut raw::RedisModuleUser, prefix: &[u8], flags: u32) -> bool {
    let check = PREFIX_CHECK.load(Ordering::Relaxed);
    if check.is_null() {
        return false;
    }
    // SAFETY: PREFIX_CHECK holds a pointer of type PrefixCheck, looked up by that name at load; the prefix bytes are read for their length.
    unsafe {
        let check: PrefixCheck = std::mem::transmute::<*mut std::os::raw::c_void, PrefixCheck>(check);
        check(user, prefix.as_ptr().cast::<c_char>(), prefix.len(), flags) == raw::REDISMODULE_OK as c_int
    }
}
