//! A command's metadata in the server's own structs (`COMMAND INFO`,
//! `COMMAND DOCS`): what a command's table row says of it ([`CommandSpec`]),
//! and that spec in the server's structs, alive while the server copies it.

use std::ffi::CString;
use std::os::raw::{c_char, c_int};

use redis_module::raw;

/// How an argument is documented (`REDISMODULE_ARG_TYPE_*`).
#[derive(Debug, Clone, Copy)]
pub enum ArgKind {
    /// The prefix: the one declared key.
    Key,
    Str,
    Int,
    /// A keyword alone (`NONE`).
    Token,
    /// One of the sub-arguments.
    OneOf(&'static [ArgDoc]),
    /// The sub-arguments in sequence.
    Block(&'static [ArgDoc]),
}

#[derive(Debug, Clone, Copy)]
pub struct ArgDoc {
    pub name: &'static str,
    pub kind: ArgKind,
    pub token: Option<&'static str>,
    pub optional: bool,
    pub multiple: bool,
}

/// What the server is told of a command: its name, flags, arity and the
/// documentation `COMMAND INFO` / `COMMAND DOCS` show.
#[derive(Debug, Clone, Copy)]
pub struct CommandSpec {
    pub name: &'static str,
    /// `CreateCommand` flags.
    pub flags: &'static str,
    /// The server's convention: n = exactly n, -n = at least n (name included).
    pub arity: i32,
    pub summary: &'static str,
    pub complexity: &'static str,
    pub since: &'static str,
    pub args: &'static [ArgDoc],
    /// Whether the command only reads (its key spec is RO, else RW).
    pub readonly: bool,
    /// Only for the replication stream and AOF loading: outside the `emq`
    /// ACL category.
    pub internal: bool,
}

/// `RedisModuleCommandInfo` and everything it points to, alive while the
/// server copies it.
pub(super) struct CommandInfo {
    pub(super) info: raw::RedisModuleCommandInfo,
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
    pub(super) fn new(doc: &CommandSpec) -> CommandInfo {
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
        let since = cstr(doc.since);
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
        // SAFETY: a key spec is plain data; all zero is its documented empty value.
        let mut key_specs: Vec<raw::RedisModuleCommandKeySpec> = vec![unsafe { std::mem::zeroed() }; 2];
        key_specs[0].notes = notes;
        key_specs[0].flags = u64::from(access);
        key_specs[0].begin_search_type = raw::RedisModuleKeySpecBeginSearchType_REDISMODULE_KSPEC_BS_INDEX;
        key_specs[0].bs.index.pos = 1;
        key_specs[0].find_keys_type = raw::RedisModuleKeySpecFindKeysType_REDISMODULE_KSPEC_FK_RANGE;
        key_specs[0].fk.range.lastkey = 0;
        key_specs[0].fk.range.keystep = 1;
        key_specs[0].fk.range.limit = 0;
        // SAFETY: the info struct is plain data; the server's header expects every field not set to be zero.
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
        // SAFETY: an argument spec is plain data; all zero is its empty value.
        let mut a: raw::RedisModuleCommandArg = unsafe { std::mem::zeroed() };
        a.name = cstr(doc.name);
        a.key_spec_index = -1;
        a.type_ = match doc.kind {
            ArgKind::Key => {
                a.key_spec_index = 0;
                raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_KEY
            }
            ArgKind::Str => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_STRING,
            ArgKind::Int => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_INTEGER,
            ArgKind::Token => raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_PURE_TOKEN,
            ArgKind::OneOf(subs) => {
                a.subargs = build_args(subs, cstr, lists);
                raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_ONEOF
            }
            ArgKind::Block(subs) => {
                a.subargs = build_args(subs, cstr, lists);
                raw::RedisModuleCommandArgType_REDISMODULE_ARG_TYPE_BLOCK
            }
        };
        if let Some(token) = doc.token {
            a.token = cstr(token);
        }
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
    // SAFETY: the zeroed argument ends the list, as the server expects.
    out.push(unsafe { std::mem::zeroed() });
    let p = out.as_mut_ptr();
    lists.push(out);
    p
}
