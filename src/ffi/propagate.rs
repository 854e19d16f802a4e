//! Replication: what a command sends to replicas and the AOF. Several calls
//! in one command reach them wrapped in MULTI/EXEC, in call order.

use std::ffi::CStr;
use std::os::raw::c_char;

use redis_module::raw;

use super::ctx::Ctx;
use super::string::Arg;

impl Ctx {
    /// Sends `cmd args…` to replicas and the AOF.
    pub fn replicate(&self, cmd: &CStr, args: &[Arg]) {
        // Up to 18 arguments go as one `s` each: the server sizes its argv
        // from the format, where a `v` vector makes it grow that argv again
        // (a second allocation per call).
        const ESSES: &[u8; 19] = b"ssssssssssssssssss\0";
        // SAFETY: reading an API pointer the server exported at load.
        let f = unsafe { api!(RedisModule_Replicate) };
        let (ctx, cmd) = (self.ptr, cmd.as_ptr());
        let a = |i: usize| args[i].ptr;
        macro_rules! fixed {
            ($($i:literal)+) => {{
                let fmt = ESSES[ESSES.len() - 1 - args.len()..].as_ptr() as *const c_char;
                // SAFETY: one live string per `s` of the format.
                unsafe { f(ctx, cmd, fmt, $(a($i)),+) }
            }};
        }
        match args.len() {
            1 => fixed!(0),
            2 => fixed!(0 1),
            3 => fixed!(0 1 2),
            4 => fixed!(0 1 2 3),
            5 => fixed!(0 1 2 3 4),
            6 => fixed!(0 1 2 3 4 5),
            7 => fixed!(0 1 2 3 4 5 6),
            8 => fixed!(0 1 2 3 4 5 6 7),
            9 => fixed!(0 1 2 3 4 5 6 7 8),
            10 => fixed!(0 1 2 3 4 5 6 7 8 9),
            11 => fixed!(0 1 2 3 4 5 6 7 8 9 10),
            12 => fixed!(0 1 2 3 4 5 6 7 8 9 10 11),
            13 => fixed!(0 1 2 3 4 5 6 7 8 9 10 11 12),
            14 => fixed!(0 1 2 3 4 5 6 7 8 9 10 11 12 13),
            15 => fixed!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14),
            16 => fixed!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15),
            17 => fixed!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16),
            18 => fixed!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17),
            _ => {
                let mut raw_args: Vec<*mut raw::RedisModuleString> = args.iter().map(|a| a.ptr).collect();
                // SAFETY: a vector of live strings and its length, as `v` takes.
                unsafe { f(ctx, cmd, c"v".as_ptr(), raw_args.as_mut_ptr(), raw_args.len()) }
            }
        };
    }

    /// Replicates `cmd a b n1 n2 n3`: two strings and three integers, the
    /// integers made into strings by the server (no strings to build here).
    pub fn replicate_sslll(&self, cmd: &CStr, a: Arg, b: Arg, n: [i64; 3]) {
        // SAFETY: two live strings and three integers, as the format says.
        unsafe {
            api!(RedisModule_Replicate)(
                self.ptr,
                cmd.as_ptr(),
                c"sslll".as_ptr(),
                a.ptr,
                b.ptr,
                n[0],
                n[1],
                n[2],
            );
        }
    }

    /// Replicates the running command as the client sent it.
    pub fn replicate_verbatim(&self) {
        // SAFETY: the context is live.
        unsafe { api!(RedisModule_ReplicateVerbatim)(self.ptr) };
    }
}
