//! emq: EchoMQ's fair, weighted lane scheduling as native Valkey commands.
//! This file registers the commands (from `catalog.rs`), their metadata, the
//! `emq` ACL category, the `emq.max-claim` config and `INFO emq`; nothing
//! else.

pub mod alloc;
pub mod args;
pub mod catalog;
pub mod commands;
pub mod errors;
pub mod keys;
pub mod schedule;
pub mod state;
pub mod stats;
pub mod store;

#[cfg(test)]
mod fuzz;

#[cfg(not(test))]
mod info;

#[cfg(not(test))]
mod module {
    use std::ffi::CString;
    use std::os::raw::{c_char, c_int, c_longlong, c_void};
    use std::ptr;

    use redis_module::{raw, redis_module, Context, RedisString, Status};

    use crate::catalog::{ArgDoc, CommandDoc, Kind, COMMANDS, SINCE};
    use crate::stats::{MAX_CLAIM, REPLICATE_COMMAND};
    use std::sync::atomic::Ordering;

    /// The server's callback for `COMMANDS[I]`.
    extern "C" fn callback<const I: usize>(
        ctx: *mut raw::RedisModuleCtx,
        argv: *mut *mut raw::RedisModuleString,
        argc: c_int,
    ) -> c_int {
        let doc = &COMMANDS[I];
        unsafe { crate::commands::run(ctx, argv, argc, doc.handler, doc.deterministic) }
    }

    extern "C" fn debug_panic(
        ctx: *mut raw::RedisModuleCtx,
        argv: *mut *mut raw::RedisModuleString,
        argc: c_int,
    ) -> c_int {
        unsafe { crate::commands::run(ctx, argv, argc, crate::commands::debug_panic, false) }
    }

    type Callback = extern "C" fn(*mut raw::RedisModuleCtx, *mut *mut raw::RedisModuleString, c_int) -> c_int;
    const CALLBACKS: [Callback; 14] = [
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
    ];
    const _: () = assert!(CALLBACKS.len() == COMMANDS.len());

    fn init(ctx: &Context, args: &[RedisString]) -> Status {
        if let Some(name) = crate::store::missing_api() {
            ctx.log_warning(&format!("emq: this server lacks {name}; not loading"));
            return Status::Err;
        }
        unsafe {
            crate::store::detect_server(ctx.ctx);
            crate::store::set_module_options(ctx.ctx);
        }
        // A panic (caught at the command boundary) is reported in the server's
        // log, without a backtrace walk on the server's thread.
        std::panic::set_hook(Box::new(|info| {
            crate::store::log_warning(&format!("emq: panic: {info}"))
        }));
        if !register_config(ctx) {
            return Status::Err;
        }
        let category = add_acl_category(ctx);
        for (doc, callback) in COMMANDS.iter().zip(CALLBACKS) {
            if let Err(e) = register(ctx, doc, callback, category) {
                ctx.log_warning(&format!("emq: could not register {}: {e}", doc.name));
                return Status::Err;
            }
        }
        // A test hook, only with `loadmodule … debug-panic`: proves that a panic
        // becomes an error reply and the server lives on.
        if args
            .iter()
            .any(|a| a.as_slice().eq_ignore_ascii_case(b"debug-panic"))
        {
            let created = unsafe {
                raw::RedisModule_CreateCommand.map(|create| {
                    create(
                        ctx.ctx,
                        c"emq.debug-panic".as_ptr(),
                        Some(debug_panic),
                        c"readonly".as_ptr(),
                        0,
                        0,
                        0,
                    )
                })
            };
            if created != Some(raw::REDISMODULE_OK as c_int) {
                return Status::Err;
            }
            ctx.log_warning("emq: loaded with debug-panic: EMQ.DEBUG-PANIC panics on purpose");
        }
        unsafe {
            if let Some(register_info) = raw::RedisModule_RegisterInfoFunc {
                register_info(ctx.ctx, Some(crate::info::info));
            }
        }
        ctx.log_notice(&format!(
            "emq {} ({}) loaded",
            env!("CARGO_PKG_VERSION"),
            env!("EMQ_GIT_COMMIT")
        ));
        Status::Ok
    }

    unsafe extern "C" fn get_max_claim(_name: *const c_char, _privdata: *mut c_void) -> c_longlong {
        MAX_CLAIM.load(Ordering::Relaxed)
    }

    unsafe extern "C" fn set_max_claim(
        _name: *const c_char,
        value: c_longlong,
        _privdata: *mut c_void,
        _err: *mut *mut raw::RedisModuleString,
    ) -> c_int {
        MAX_CLAIM.store(value, Ordering::Relaxed);
        raw::REDISMODULE_OK as c_int
    }

    unsafe extern "C" fn get_replicate(_name: *const c_char, _privdata: *mut c_void) -> c_int {
        c_int::from(REPLICATE_COMMAND.load(Ordering::Relaxed))
    }

    unsafe extern "C" fn set_replicate(
        _name: *const c_char,
        value: c_int,
        _privdata: *mut c_void,
        _err: *mut *mut raw::RedisModuleString,
    ) -> c_int {
        REPLICATE_COMMAND.store(value == 1, Ordering::Relaxed);
        raw::REDISMODULE_OK as c_int
    }

    /// `emq.max-claim` (1..2^63-1, default 1000) and `emq.replicate`
    /// (`effects`, the default, or `command`): settable in the config file,
    /// on the command line and with `CONFIG SET`.
    fn register_config(ctx: &Context) -> bool {
        unsafe {
            let (Some(register), Some(register_enum), Some(load)) = (
                raw::RedisModule_RegisterNumericConfig,
                raw::RedisModule_RegisterEnumConfig,
                raw::RedisModule_LoadConfigs,
            ) else {
                ctx.log_notice(
                    "emq: this server has no module configs; emq.max-claim stays 1000, emq.replicate effects",
                );
                return true;
            };
            let mut names = [c"effects".as_ptr(), c"command".as_ptr()];
            let values: [c_int; 2] = [0, 1];
            let status = register_enum(
                ctx.ctx,
                c"replicate".as_ptr(),
                0,
                0,
                names.as_mut_ptr(),
                values.as_ptr(),
                2,
                Some(get_replicate),
                Some(set_replicate),
                None,
                ptr::null_mut(),
            );
            if status != raw::REDISMODULE_OK as c_int {
                ctx.log_warning("emq: could not register emq.replicate");
                return false;
            }
            let status = register(
                ctx.ctx,
                c"max-claim".as_ptr(),
                1000,
                0,
                1,
                i64::MAX,
                Some(get_max_claim),
                Some(set_max_claim),
                None,
                ptr::null_mut(),
            );
            if status != raw::REDISMODULE_OK as c_int || load(ctx.ctx) != raw::REDISMODULE_OK as c_int {
                ctx.log_warning("emq: could not register or load emq.max-claim");
                return false;
            }
        }
        true
    }

    fn deinit(_ctx: &Context) -> Status {
        crate::store::release_words();
        // Back to the default hook: ours must not outlive the unloaded module.
        drop(std::panic::take_hook());
        Status::Ok
    }

    /// Adds the `emq` ACL category where the server can (Valkey 8+, Redis 7.4+).
    fn add_acl_category(ctx: &Context) -> bool {
        let added = unsafe { raw::RedisModule_AddACLCategory.map(|add| add(ctx.ctx, c"emq".as_ptr())) };
        match added {
            Some(status) if status == raw::REDISMODULE_OK as c_int => true,
            Some(_) => {
                ctx.log_warning("emq: could not add the emq ACL category");
                false
            }
            None => {
                ctx.log_notice("emq: this server has no custom ACL categories; +@emq is unavailable");
                false
            }
        }
    }

    fn register(ctx: &Context, doc: &CommandDoc, callback: Callback, category: bool) -> Result<(), String> {
        let name = CString::new(doc.name).map_err(|e| e.to_string())?;
        let flags = CString::new(doc.flags).map_err(|e| e.to_string())?;
        unsafe {
            let create = raw::RedisModule_CreateCommand.ok_or("no CreateCommand")?;
            if create(ctx.ctx, name.as_ptr(), Some(callback), flags.as_ptr(), 1, 1, 1)
                != raw::REDISMODULE_OK as c_int
            {
                return Err("CreateCommand failed".into());
            }
            let command =
                raw::RedisModule_GetCommand.map_or(ptr::null_mut(), |get| get(ctx.ctx, name.as_ptr()));
            if command.is_null() {
                return Ok(()); // An old server: the command works, without metadata.
            }
            if category && !doc.internal {
                if let Some(set) = raw::RedisModule_SetCommandACLCategories {
                    if set(command, c"emq".as_ptr()) != raw::REDISMODULE_OK as c_int {
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
                raw::REDISMODULE_CMD_KEY_RW
                    | raw::REDISMODULE_CMD_KEY_ACCESS
                    | raw::REDISMODULE_CMD_KEY_UPDATE
            };
            let mut key_specs: Vec<raw::RedisModuleCommandKeySpec> = vec![unsafe { std::mem::zeroed() }; 2];
            key_specs[0].notes = notes;
            key_specs[0].flags = u64::from(access);
            key_specs[0].begin_search_type =
                raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX;
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
            a.flags = (if doc.optional {
                raw::REDISMODULE_CMD_ARG_OPTIONAL
            } else {
                0
            } | if doc.multiple {
                raw::REDISMODULE_CMD_ARG_MULTIPLE
            } else {
                0
            }) as c_int;
            out.push(a);
        }
        out.push(unsafe { std::mem::zeroed() });
        let p = out.as_mut_ptr();
        lists.push(out);
        p
    }

    redis_module! {
        name: "emq",
        version: env!("EMQ_VERSION_NUMBER").parse::<i32>().unwrap_or(0),
        allocator: (crate::alloc::ModuleAlloc, crate::alloc::ModuleAlloc),
        data_types: [],
        init: init,
        deinit: deinit,
    }
}
