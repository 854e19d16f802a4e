//! The global allocator: the server's (so module memory shows in
//! `used_memory` and counts towards `maxmemory`) once the server has
//! exported it, the system's otherwise — in a bench or test binary that
//! links this crate without a server, where the server's would abort.
//! In a server nothing in the module allocates before `RedisModule_Init`
//! exports the allocator, so the two never mix.

use std::alloc::{GlobalAlloc, Layout, System};

use redis_module::alloc::RedisAlloc;
use redis_module::raw;

pub struct ModuleAlloc;

fn in_server() -> bool {
    // SAFETY: reading an API pointer the server wrote once, at load.
    unsafe { raw::RedisModule_Alloc }.is_some()
}

// SAFETY: both allocators return memory for the layout asked, and `in_server` gives the same answer for a block's alloc and dealloc (nothing allocates before the server exports its allocator).
unsafe impl GlobalAlloc for ModuleAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if in_server() {
            RedisAlloc.alloc(layout)
        } else {
            System.alloc(layout)
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if in_server() {
            RedisAlloc.dealloc(ptr, layout)
        } else {
            System.dealloc(ptr, layout)
        }
    }
}
