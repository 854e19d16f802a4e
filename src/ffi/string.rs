//! Strings: the ones the module owns ([`RStr`], freed with the context that
//! made them) and the ones it borrows ([`Arg`]: a command argument, an
//! [`RStr`], a constant word).

use std::marker::PhantomData;
use std::os::raw::c_int;
use std::ptr;
use std::sync::atomic::Ordering;

use redis_module::raw;

use super::api::{Word, WORDS};

/// A string the module owns, freed on drop. It belongs to no context: the
/// module never turns on auto memory (nothing here calls
/// `RedisModule_AutoMemory`), so the server tracks no string per context and
/// one may be freed after the context it was made in has ended.
pub struct RStr {
    pub(super) ptr: *mut raw::RedisModuleString,
}

impl RStr {
    /// Takes ownership of a string the server returned (`None` for NULL).
    pub(super) fn own(ptr: *mut raw::RedisModuleString) -> Option<RStr> {
        // Not `then_some`: it would build (and drop, freeing NULL) an RStr.
        if ptr.is_null() {
            None
        } else {
            Some(RStr { ptr })
        }
    }

    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the string lives as long as `self`.
        unsafe { bytes_of(self.ptr) }
    }

    pub fn as_arg(&self) -> Arg<'_> {
        Arg {
            ptr: self.ptr,
            _life: PhantomData,
        }
    }
}

/// A string held with its bytes, read once: a string never changes while a
/// reference to it is held, and a turn reads a lane's or a job's name
/// several times (each read of an `RStr`'s bytes is a call).
pub struct Text {
    s: RStr,
    at: *const u8,
    len: usize,
}

impl Text {
    pub fn new(s: RStr) -> Text {
        let b = s.bytes();
        Text {
            at: b.as_ptr(),
            len: b.len(),
            s,
        }
    }

    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the bytes of `self.s`, read when it was taken; the string
        // lives, unchanged, as long as `self` holds its reference.
        unsafe { std::slice::from_raw_parts(self.at, self.len) }
    }

    pub fn as_arg(&self) -> Arg<'_> {
        self.s.as_arg()
    }
}

impl Clone for RStr {
    /// One more reference to the same string (no copy is made: nothing here
    /// changes a string once made).
    fn clone(&self) -> RStr {
        // SAFETY: a live string; with no context, one more reference, which the clone's drop releases.
        unsafe { api!(RedisModule_RetainString)(ptr::null_mut(), self.ptr) };
        RStr { ptr: self.ptr }
    }
}

impl Drop for RStr {
    fn drop(&mut self) {
        // SAFETY: this RStr owns one reference to the string, released once.
        unsafe { api!(RedisModule_FreeString)(ptr::null_mut(), self.ptr) }
    }
}

/// A string borrowed for `'a`: a command argument or an [`RStr`].
#[derive(Clone, Copy)]
pub struct Arg<'a> {
    pub(super) ptr: *mut raw::RedisModuleString,
    _life: PhantomData<&'a ()>,
}

impl<'a> Arg<'a> {
    /// A string that outlives `'a`, borrowed.
    pub(super) fn borrowed(ptr: *mut raw::RedisModuleString) -> Arg<'a> {
        Arg {
            ptr,
            _life: PhantomData,
        }
    }

    pub fn bytes(&self) -> &'a [u8] {
        // SAFETY: the string outlives 'a (an argument of the running
        // command, or an RStr borrowed for 'a).
        unsafe { bytes_of(self.ptr) }
    }
}

/// A constant word as an argument (made at load by `detect_server`).
pub fn word(w: Word) -> Arg<'static> {
    Arg {
        ptr: WORDS[w as usize].load(Ordering::Relaxed),
        _life: PhantomData,
    }
}

/// `parts` joined, on the stack when short (key names are built on every
/// call).
pub fn with_joined<T>(parts: &[&[u8]], f: impl FnOnce(&[u8]) -> T) -> T {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    if len > 256 {
        return f(&parts.concat());
    }
    // Not zeroed first: every byte up to `len` is written below.
    let mut stack = [std::mem::MaybeUninit::<u8>::uninit(); 256];
    let mut at = 0;
    for part in parts {
        // SAFETY: `part` fits (the parts sum to `len` ≤ 256), and a byte
        // slice and its uninitialised counterpart have one layout.
        unsafe {
            std::ptr::copy_nonoverlapping(part.as_ptr(), stack.as_mut_ptr().add(at).cast::<u8>(), part.len());
        }
        at += part.len();
    }
    // SAFETY: the first `len` bytes were written just above.
    f(unsafe { std::slice::from_raw_parts(stack.as_ptr().cast::<u8>(), len) })
}

/// # Safety
/// `s` must be a valid string that outlives `'a`.
unsafe fn bytes_of<'a>(s: *mut raw::RedisModuleString) -> &'a [u8] {
    let mut len: usize = 0;
    let p = api!(RedisModule_StringPtrLen)(s, &mut len);
    if p.is_null() || len == 0 {
        &[]
    } else {
        std::slice::from_raw_parts(p.cast::<u8>(), len)
    }
}

/// A command's arguments, `argv[0]` being the command name.
#[derive(Clone, Copy)]
pub struct Argv<'a> {
    args: &'a [*mut raw::RedisModuleString],
}

impl<'a> Argv<'a> {
    /// # Safety
    /// `argv` must point to `argc` strings that outlive `'a`.
    pub(super) unsafe fn from_raw(argv: *mut *mut raw::RedisModuleString, argc: c_int) -> Argv<'a> {
        let args = if argv.is_null() || argc <= 0 {
            &[][..]
        } else {
            std::slice::from_raw_parts(argv, argc as usize)
        };
        Argv { args }
    }

    pub fn len(&self) -> usize {
        self.args.len()
    }

    #[allow(dead_code)] // beside `len`, as clippy asks
    pub fn is_empty(&self) -> bool {
        self.args.is_empty()
    }

    /// Argument `i` (`None` past the end).
    pub fn get(&self, i: usize) -> Option<Arg<'a>> {
        self.args.get(i).map(|&ptr| Arg {
            ptr,
            _life: PhantomData,
        })
    }

    /// Arguments `from..`.
    pub fn tail(&self, from: usize) -> impl Iterator<Item = Arg<'a>> + '_ {
        (from..self.len()).filter_map(|i| self.get(i))
    }
}

#[cfg(test)]
mod tests {
    use super::with_joined;

    #[test]
    fn joined_on_the_stack_or_the_heap() {
        assert_eq!(with_joined(&[b"a", b"bc"], |b| b.to_vec()), b"abc");
        let long = vec![b'x'; 300];
        assert_eq!(with_joined(&[&long, b"y"], |b| b.len()), 301);
    }
}
