//! Registering the commands of `catalog.rs` with the server, by hand: the
//! crate's `redis_module!` rows would turn every call's argv into a freshly
//! allocated `Vec` (a cost on the hot path) and cannot declare key specs or
//! argument docs. The `emq` ACL category is added by hand too (through the
//! crate, a load after `MODULE UNLOAD` fails: see `acl_category`); configs
//! and INFO go through the crate (`lib.rs`).

use std::ffi::CString;
use std::os::raw::{c_char, c_int};
use std::ptr;
use std::sync::OnceLock;

use redis_module::raw;

use super::boundary;
use super::ctx::Ctx;
use super::reply::Reply;
use super::string::Argv;
use crate::catalog::{ArgDoc, CommandDoc, Kind, SINCE};
use crate::errors::Error;

/// What runs a command of the table: the policy layer's dispatcher.
pub type Runner = for<'a> fn(&Ctx, Argv<'a>, &'static CommandDoc) -> Result<Option<Reply>, Error>;

static TABLE: OnceLock<(&'static [CommandDoc], Runner)> = OnceLock::new();

/// The server's callback for command `I` of the table.
extern "C" fn callback<const I: usize>(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    let Some((table, run)) = TABLE.get() else {
        return raw::REDISMODULE_ERR as c_int;
    };
    let doc = &table[I];
    boundary::command(ctx, argv, argc, !doc.readonly, |ctx, argv| run(ctx, argv, doc))
}

type Callback = extern "C" fn(*mut raw::RedisModuleCtx, *mut *mut raw::RedisModuleString, c_int) -> c_int;

/// One callback per row; a table longer than this list fails to register.
const CALLBACKS: [Callback; 24] = [
    callback::<0>,
    callback::<1>,
    callback::<2>,
    callback::<3>,
    callback::<4>,
    callback::<5>,
    callback::<6>,
    callback::<7>,
    callback::<8>,
    callback::<9>,
    callback::<10>,
    callback::<11>,
    callback::<12>,
    callback::<13>,
    callback::<14>,
    callback::<15>,
    callback::<16>,
    callback::<17>,
    callback::<18>,
    callback::<19>,
    callback::<20>,
    callback::<21>,
    callback::<22>,
    callback::<23>,
];

/// Registers every command of `table`, run by `run`, with its metadata and,
/// where `category` was added, the `emq` ACL category.
pub fn commands(
    ctx: &redis_module::Context,
    table: &'static [CommandDoc],
    run: Runner,
    category: Option<&str>,
) -> Result<(), String> {
    if table.len() > CALLBACKS.len() {
        return Err(format!("{} commands, {} callbacks", table.len(), CALLBACKS.len()));
    }
    // A module unloaded and loaded again may find its statics as it left
    // them (the server need not unmap the library): the same table is fine.
    let (known, known_run) = *TABLE.get_or_init(|| (table, run));
    if !std::ptr::eq(known, table) || known_run as usize != run as usize {
        return Err("another command table is already registered".to_string());
    }
    for (doc, callback) in table.iter().zip(CALLBACKS) {
        register(ctx.ctx, doc, callback, category).map_err(|e| format!("{}: {e}", doc.name))?;
    }
    Ok(())
}

fn register(
    ctx: *mut raw::RedisModuleCtx,
    doc: &CommandDoc,
    callback: Callback,
    category: Option<&str>,
) -> Result<(), String> {
    let name = CString::new(doc.name).map_err(|e| e.to_string())?;
    let flags = CString::new(doc.flags).map_err(|e| e.to_string())?;
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

/// `RedisModuleCommandInfo` and everything it points to, alive while the
/// server copies it.
struct CommandInfo {
    info: raw::RedisModuleCommandInfo,
    _strings: Vec<CString>,
    _args: Vec<Vec<raw::RedisModuleCommandArg>>,
    _key_specs: Vec<raw::RedisModuleCommandKeySpec>,
}

static VERSION: raw::RedisModuleCommandInfoVersion = raw::RedisModuleCommandInfoVersion {
    version: 1,
    sizeof_historyentry: std::mem::size_of::<raw::RedisModuleCommandHistoryEntry>(),
    sizeof_keyspec: std::mem::size_of::<raw::RedisModuleCommandKeySpec>(),
    sizeof_arg: std::mem::size_of::<raw::RedisModuleCommandArg>(),
};

impl CommandInfo {
    fn new(doc: &CommandDoc) -> CommandInfo {
        let mut strings = Vec::new();
        let mut arg_lists = Vec::new();
        let mut cstr = |s: &str| -> *const c_char {
            let c = CString::new(s).unwrap_or_default();
            let p = c.as_ptr();
            strings.push(c);
            p
        };
        let summary = cstr(doc.summary);
        let complexity = cstr(doc.complexity);
        let since = cstr(SINCE);
        let notes = cstr("the queue prefix: every key touched is the prefix plus a fixed suffix");
        let args = build_args(doc.args, &mut cstr, &mut arg_lists);
        let access = if doc.readonly {
            raw::REDISMODULE_CMD_KEY_RO | raw::REDISMODULE_CMD_KEY_ACCESS
        } else {
            raw::REDISMODULE_CMD_KEY_RW | raw::REDISMODULE_CMD_KEY_ACCESS | raw::REDISMODULE_CMD_KEY_UPDATE
        };
        // The info struct and key specs are zeroed as the server's header
        // expects (every field not set here is 0 / NULL); the list of key
        // specs ends with a zeroed one.
        let mut key_specs: Vec<raw::RedisModuleCommandKeySpec> = vec![unsafe { std::mem::zeroed() }; 2];
        key_specs[0].notes = notes;
        key_specs[0].flags = u64::from(access);
        key_specs[0].begin_search_type = raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX;
        key_specs[0].bs.index.pos = 1;
        key_specs[0].find_keys_type = raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_RANGE;
        key_specs[0].fk.range.lastkey = 0;
        key_specs[0].fk.range.keystep = 1;
        key_specs[0].fk.range.limit = 0;
        let mut info: raw::RedisModuleCommandInfo = unsafe { std::mem::zeroed() };
        info.version = &VERSION;
        info.summary = summary;
        info.complexity = complexity;
        info.since = since;
        info.arity = doc.arity;
        info.key_specs = key_specs.as_mut_ptr();
        info.args = args;
        CommandInfo {
            info,
            _strings: strings,
            _args: arg_lists,
            _key_specs: key_specs,
        }
    }
}

/// A NULL-terminated argument array (kept alive in `lists`).
fn build_args(
    docs: &[ArgDoc],
    cstr: &mut dyn FnMut(&str) -> *const c_char,
    lists: &mut Vec<Vec<raw::RedisModuleCommandArg>>,
) -> *mut raw::RedisModuleCommandArg {
    let mut out: Vec<raw::RedisModuleCommandArg> = Vec::with_capacity(docs.len() + 1);
    for doc in docs {
        let mut a: raw::RedisModuleCommandArg = unsafe { std::mem::zeroed() };
        a.name = cstr(doc.name);
        a.key_spec_index = -1;
        a.type_ = match doc.kind {
            Kind::Key => {
                a.key_spec_index = 0;
                raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY
            }
            Kind::Str => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING,
            Kind::Int => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER,
            Kind::Double => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_DOUBLE,
            Kind::Token => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_PURE_TOKEN,
            Kind::OneOf(subs) => {
                a.subargs = build_args(subs, cstr, lists);
                raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_ONEOF
            }
            Kind::Block(subs) => {
                a.subargs = build_args(subs, cstr, lists);
                raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_BLOCK
            }
        };
        if let Some(token) = doc.token {
            a.token = cstr(token);
        }
        a.since = cstr(SINCE);
        let mut flags = 0;
        if doc.optional {
            flags |= raw::REDISMODULE_CMD_ARG_OPTIONAL;
        }
        if doc.multiple {
            flags |= raw::REDISMODULE_CMD_ARG_MULTIPLE;
        }
        a.flags = flags as c_int;
        out.push(a);
    }
    out.push(unsafe { std::mem::zeroed() });
    let p = out.as_mut_ptr();
    lists.push(out);
    p
}
