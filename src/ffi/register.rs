//! Registering commands with the server, by hand: the
//! crate's `redis_module!` rows would turn every call's argv into a freshly
//! allocated `Vec` (a cost on the hot path) and cannot declare key specs or
//! argument docs. The `emq` ACL category is added by hand too (through the
//! crate, a load after `MODULE UNLOAD` fails: see `acl_category`); configs
//! and INFO go through the crate (`lib.rs`).

use std::ffi::CString;
use std::os::raw::c_int;
use std::ptr;
use std::sync::OnceLock;

use redis_module::raw;

use super::boundary;
use super::ctx::Ctx;
use super::docs::{CommandInfo, CommandSpec};
use super::reply::Reply;
use super::string::Argv;
use crate::model::error::Error;

/// What runs command `i` of the table.
pub type Runner = for<'a> fn(usize, &Ctx, Argv<'a>) -> Result<Option<Reply>, Error>;

/// The table: how many commands, the spec of each, and their runner.
#[derive(Clone, Copy)]
pub struct Table {
    pub len: usize,
    pub spec: fn(usize) -> &'static CommandSpec,
    pub run: Runner,
}

static TABLE: OnceLock<Table> = OnceLock::new();

/// The server's callback for command `I` of the table.
extern "C" fn callback<const I: usize>(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    let Some(table) = TABLE.get() else {
        return raw::REDISMODULE_ERR as c_int;
    };
    let writable = !(table.spec)(I).readonly;
    boundary::command(ctx, argv, argc, writable, |ctx, argv| (table.run)(I, ctx, argv))
}

type Callback = extern "C" fn(*mut raw::RedisModuleCtx, *mut *mut raw::RedisModuleString, c_int) -> c_int;

/// One callback per row; a table longer than this list fails to register.
macro_rules! callbacks {
    ($($i:literal)*) => { [$(callback::<$i> as Callback),*] };
}
const CALLBACKS: [Callback; 60] = callbacks!(
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19
    20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39
    40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59
);

/// Registers every command of `table` with its metadata and, where
/// `category` was added, the `emq` ACL category.
pub fn commands(ctx: &redis_module::Context, table: Table, category: Option<&str>) -> Result<(), String> {
    if table.len > CALLBACKS.len() {
        return Err(format!("{} commands, {} callbacks", table.len, CALLBACKS.len()));
    }
    // A module unloaded and loaded again may find its statics as it left
    // them (the server need not unmap the library): the same table is fine.
    let known = *TABLE.get_or_init(|| table);
    if known.len != table.len
        || known.spec as usize != table.spec as usize
        || known.run as usize != table.run as usize
    {
        return Err("another command table is already registered".to_string());
    }
    for (i, callback) in CALLBACKS.iter().enumerate().take(table.len) {
        let spec = (table.spec)(i);
        register(ctx.ctx, spec, *callback, category).map_err(|e| format!("{}: {e}", spec.name))?;
    }
    Ok(())
}

fn register(
    ctx: *mut raw::RedisModuleCtx,
    doc: &CommandSpec,
    callback: Callback,
    category: Option<&str>,
) -> Result<(), String> {
    let name = CString::new(doc.name).map_err(|e| e.to_string())?;
    let flags = CString::new(doc.flags).map_err(|e| e.to_string())?;
    // SAFETY: the load context is live; names and flags are NUL-ended; the info copied by the server is alive for the call.
    unsafe {
        let create = raw::RedisModule_CreateCommand.ok_or("no CreateCommand")?;
        if create(ctx, name.as_ptr(), Some(callback), flags.as_ptr(), 1, 1, 1) != raw::REDISMODULE_OK as c_int
        {
            return Err("CreateCommand failed".into());
        }
        let command = raw::RedisModule_GetCommand.map_or(ptr::null_mut(), |get| get(ctx, name.as_ptr()));
        if command.is_null() {
            return Ok(()); // An old server: the command works, without metadata.
        }
        if let (Some(category), false) = (category, doc.internal) {
            if let Some(set) = raw::RedisModule_SetCommandACLCategories {
                let category = CString::new(category).map_err(|e| e.to_string())?;
                if set(command, category.as_ptr()) != raw::REDISMODULE_OK as c_int {
                    return Err("SetCommandACLCategories failed".into());
                }
            }
        }
        if let Some(set_info) = raw::RedisModule_SetCommandInfo {
            let info = CommandInfo::new(doc);
            if set_info(command, &info.info) != raw::REDISMODULE_OK as c_int {
                return Err("SetCommandInfo failed (see the server log)".into());
            }
        }
    }
    Ok(())
}

/// Adds the ACL category `name` where the server has custom categories
/// (Valkey 8+, Redis 7.4+); whether it exists now. A category outlives the
/// module that added it (a server cannot remove one), so after `MODULE
/// UNLOAD` a new load finds it there: adding it again fails, and it is used
/// as it is. (The crate's `acl_categories` fails the load instead.)
pub fn acl_category(ctx: &redis_module::Context, name: &str) -> bool {
    let Ok(category) = CString::new(name) else {
        return false;
    };
    // SAFETY: the load context is live; the API pointers are checked present; the reply is checked and freed once.
    unsafe {
        let Some(add) = raw::RedisModule_AddACLCategory else {
            return false;
        };
        if add(ctx.ctx, category.as_ptr()) == raw::REDISMODULE_OK as c_int {
            return true;
        }
        // Already there? `ACL CAT` lists it.
        let Some(call) = raw::RedisModule_Call else {
            return false;
        };
        let reply = call(ctx.ctx, c"ACL".as_ptr(), c"c".as_ptr(), c"CAT".as_ptr());
        if reply.is_null() {
            return false;
        }
        let mut found = false;
        for i in 0..raw::RedisModule_CallReplyLength.map_or(0, |len| len(reply)) {
            let element = raw::RedisModule_CallReplyArrayElement.map_or(ptr::null_mut(), |at| at(reply, i));
            let mut len = 0usize;
            let text = raw::RedisModule_CallReplyStringPtr.map_or(ptr::null(), |s| s(element, &mut len));
            if !text.is_null() && std::slice::from_raw_parts(text.cast::<u8>(), len) == name.as_bytes() {
                found = true;
            }
        }
        if let Some(free) = raw::RedisModule_FreeCallReply {
            free(reply);
        }
        found
    }
}

/// Registers a test hook that panics on purpose (only with the `debug-panic`
/// load argument): proves that a panic becomes an error reply.
pub fn debug_panic_command(ctx: &redis_module::Context) -> bool {
    let ctx = ctx.ctx;
    extern "C" fn debug_panic(
        ctx: *mut raw::RedisModuleCtx,
        argv: *mut *mut raw::RedisModuleString,
        argc: c_int,
    ) -> c_int {
        boundary::command(ctx, argv, argc, false, |_, _| {
            panic!("emq.debug-panic: a panic on purpose")
        })
    }
    // SAFETY: the load context is live; the name and flags are NUL-ended.
    let created = unsafe {
        raw::RedisModule_CreateCommand.map(|create| {
            create(
                ctx,
                c"emq.debug-panic".as_ptr(),
                Some(debug_panic),
                c"readonly".as_ptr(),
                0,
                0,
                0,
            )
        })
    };
    created == Some(raw::REDISMODULE_OK as c_int)
}
