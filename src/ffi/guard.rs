//! The permission check of one context: whose keys a call may touch, and
//! the check made before each key is first opened (`acl.rs` decides who the
//! caller is).

use std::cell::Cell;
use std::os::raw::c_int;
use std::ptr;

use redis_module::raw;

use super::string::Arg;
use crate::model::error::Error;

#[derive(Clone, Copy, Default)]
pub(super) enum State {
    /// No guard set: nothing is checked (a timer's own work).
    #[default]
    Off,
    /// Every key the command may touch is allowed.
    All,
    /// Each key is checked for this user.
    Each(*mut raw::RedisModuleUser),
    /// The client's user no longer exists or is disabled: nothing is allowed.
    Nobody,
}

/// The permission check of one context.
#[derive(Default)]
pub(super) struct Guard {
    pub(super) state: Cell<State>,
    /// The access asked for: read, or read and write.
    pub(super) flags: Cell<c_int>,
    /// A user object the guard must free.
    pub(super) owned: Cell<*mut raw::RedisModuleUser>,
}

impl Guard {
    /// Checks `key` (just before it is opened): nothing to do, inline, when
    /// the caller may access every key the command touches.
    #[inline]
    pub(super) fn check(&self, ctx: *mut raw::RedisModuleCtx, key: Arg) -> Result<(), Error> {
        match self.state.get() {
            State::Off | State::All => Ok(()),
            state => self.check_each(state, ctx, key),
        }
    }

    #[cold]
    fn check_each(&self, state: State, ctx: *mut raw::RedisModuleCtx, key: Arg) -> Result<(), Error> {
        match state {
            State::Off | State::All => Ok(()),
            State::Nobody => Err(no_permission(key)),
            State::Each(user) => {
                // SAFETY: the API pointer is checked present; the user and key are live for this call.
                let ok = unsafe {
                    raw::RedisModule_ACLCheckKeyPermissions.is_none_or(|check| {
                        check(user, key.ptr, self.flags.get()) == raw::REDISMODULE_OK as c_int
                    })
                };
                if ok {
                    Ok(())
                } else {
                    log_denial(ctx, user, key);
                    Err(no_permission(key))
                }
            }
        }
    }

    /// Checks that the caller may publish on `channel`.
    pub(super) fn check_publish(&self, channel: Arg) -> Result<(), Error> {
        let denied = || Error::NoChannelPermission {
            channel: channel.bytes().to_vec(),
        };
        match self.state.get() {
            State::Off => Ok(()),
            State::Nobody => Err(denied()),
            State::All | State::Each(_) => {
                let user = self.owned.get();
                // SAFETY: the API pointer is checked present; the user and channel are live for this call.
                let ok = user.is_null()
                    || unsafe {
                        raw::RedisModule_ACLCheckChannelPermissions.is_none_or(|check| {
                            check(user, channel.ptr, raw::REDISMODULE_CMD_CHANNEL_PUBLISH as c_int)
                                == raw::REDISMODULE_OK as c_int
                        })
                    };
                if ok {
                    Ok(())
                } else {
                    Err(denied())
                }
            }
        }
    }

    pub(super) fn release(&self) {
        let user = self.owned.replace(ptr::null_mut());
        if !user.is_null() {
            // SAFETY: a user object this guard obtained and frees once.
            unsafe {
                if let Some(free) = raw::RedisModule_FreeModuleUser {
                    free(user);
                }
            }
        }
        self.state.set(State::Off);
    }
}

/// Records the denial in `ACL LOG`, as the server does for its own keys.
fn log_denial(ctx: *mut raw::RedisModuleCtx, user: *mut raw::RedisModuleUser, key: Arg) {
    // SAFETY: the API pointer is checked present; context, user and key are live.
    unsafe {
        if let Some(add) = raw::RedisModule_ACLAddLogEntry {
            add(
                ctx,
                user,
                key.ptr,
                raw::RedisModuleACLLogEntryReason_REDISMODULE_ACL_LOG_KEY,
            );
        }
    }
}

fn no_permission(key: Arg) -> Error {
    Error::NoPermission {
        key: key.bytes().to_vec(),
    }
}

pub(super) fn errno() -> c_int {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

pub(super) fn set_errno(v: c_int) {
    // SAFETY: errno is this thread's, and writable.
    unsafe { *libc::__errno_location() = v };
}
