//! Server events the module follows: the server's cron tick, and Valkey
//! 9's atomic slot migration (event 19, not in the crate's header). Each
//! callback runs inside a boundary, as a timer does: a panic is logged.

use std::os::raw::{c_char, c_int, c_void};
use std::sync::OnceLock;

use redis_module::raw;

use super::boundary::log_panic;
use super::ctx::Ctx;

/// `ValkeyModuleEvent_AtomicSlotMigration` and the subevents the module
/// acts on (valkeymodule.h of Valkey 9).
const ATOMIC_SLOT_MIGRATION: u64 = 19;
const IMPORT_ABORTED: u64 = 2;
const EXPORT_COMPLETED: u64 = 5;

/// `ValkeyModuleSlotRange`.
#[repr(C)]
struct SlotRange {
    start: c_int,
    end: c_int,
}

/// `ValkeyModuleAtomicSlotMigrationInfoV1`.
#[repr(C)]
#[allow(dead_code, reason = "the server's layout; the job's name is not read")]
struct MigrationInfo {
    version: u64,
    job_name: [c_char; 41],
    slot_ranges: *const SlotRange,
    num_slot_ranges: u32,
}

/// What the module does on events: `tick` on every cron tick; `slots_gone`
/// when slots' keys have left this node by an atomic migration (exported,
/// or an import given up).
#[derive(Clone, Copy)]
pub struct Handlers {
    pub tick: fn(&Ctx),
    pub slots_gone: fn(&[(u16, u16)]),
}

static HANDLERS: OnceLock<Handlers> = OnceLock::new();

fn handlers() -> Option<Handlers> {
    HANDLERS.get().copied()
}

/// Subscribes to the cron tick and, where the server has it, to atomic slot
/// migration.
pub fn subscribe(ctx: &redis_module::Context, handlers: Handlers) {
    // A module loaded again in the same process finds its first handlers,
    // which are these (the same functions).
    let _ = HANDLERS.set(handlers);
    let cron = raw::RedisModuleEvent {
        id: raw::REDISMODULE_EVENT_CRON_LOOP,
        dataver: 1,
    };
    let migration = raw::RedisModuleEvent {
        id: ATOMIC_SLOT_MIGRATION,
        dataver: 1,
    };
    // SAFETY: the load context is live; the callbacks are `extern "C"` functions of the right type.
    unsafe {
        api!(RedisModule_SubscribeToServerEvent)(ctx.ctx, cron, Some(on_cron));
        // A server without the event (Valkey 8, Redis 7) refuses its id.
        api!(RedisModule_SubscribeToServerEvent)(ctx.ctx, migration, Some(on_migration));
    }
}

/// SAFETY (callers: the server): `ctx` is a live context for the call.
unsafe extern "C" fn on_cron(
    ctx: *mut raw::RedisModuleCtx,
    _: raw::RedisModuleEvent,
    _: u64,
    _: *mut c_void,
) {
    let Some(h) = handlers() else { return };
    let ctx = Ctx::new(ctx, false);
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (h.tick)(&ctx))).is_err() {
        log_panic();
    }
}

unsafe extern "C" fn on_migration(
    _: *mut raw::RedisModuleCtx,
    _: raw::RedisModuleEvent,
    subevent: u64,
    data: *mut c_void,
) {
    let Some(h) = handlers() else { return };
    if !(subevent == EXPORT_COMPLETED || subevent == IMPORT_ABORTED) || data.is_null() {
        return;
    }
    // SAFETY: for this event the server passes a `ValkeyModuleAtomicSlotMigrationInfoV1`, alive during the callback.
    let info = &*data.cast::<MigrationInfo>();
    let mut ranges = Vec::with_capacity(info.num_slot_ranges as usize);
    if info.version >= 1 && !info.slot_ranges.is_null() {
        for i in 0..info.num_slot_ranges as usize {
            // SAFETY: `slot_ranges` holds `num_slot_ranges` ranges (the server's array, alive during the callback).
            let r = &*info.slot_ranges.add(i);
            if let (Ok(lo), Ok(hi)) = (u16::try_from(r.start), u16::try_from(r.end)) {
                ranges.push((lo, hi));
            }
        }
    }
    if std::panic::catch_unwind(|| (h.slots_gone)(&ranges)).is_err() {
        log_panic();
    }
}
