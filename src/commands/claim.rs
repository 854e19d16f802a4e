//! EMQ.CLAIM and EMQ.WCLAIM: one rota step, then `K = min(weight, depth,
//! headroom)` heads of the rotated lane, leased under one deadline.
//!
//! What a turn does to the keyspace (the same as the seed's `@gwclaim` and
//! `lua/wclaim.lua`):
//! - ring empty: nothing;
//! - [`Turn::Drop`]: the head lane leaves the ring (rotate + remove = pop head);
//! - [`Turn::Serve`]: the ring rotates one step; the K lowest-scored pending
//!   jobs move to `P leases` (score = deadline) and `P jlease`
//!   (`"<mint> <lane>"`); `gactive[lane] += K`; if the guard says so, the lane
//!   (now the ring's tail) leaves the ring.
//!
//! Every read and type check happens before the first write.

use crate::args;
use crate::errors::{Error, BOOLEAN, COUNT_RANGE, INTEGER, TIMEOUT_RANGE};
use crate::keys;
use crate::schedule::{self, Lane, Turn};
use crate::state::{self, Queue};
use crate::stats;
use std::io::Write as _;

use crate::store::{self, Arg, Argv, Class, Ctx, KeyRead, Kind, RStr, Word, WriteKey};

/// `EMQ.CLAIM P lease [BLOCK ms]`: plain rotation, the weight taken as 1.
pub fn claim(ctx: &Ctx, argv: Argv) -> Result<(), Error> {
    command(ctx, argv, false)
}

/// `EMQ.WCLAIM P lease [BLOCK ms]`: the weighted rotation.
pub fn wclaim(ctx: &Ctx, argv: Argv) -> Result<(), Error> {
    command(ctx, argv, true)
}

/// What one attempt at a turn came to. Only `Served` has replied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Served,
    /// The head lane could not be served and left the ring.
    Dropped,
    /// The head lane cannot be served, and the caller did not let it drop.
    WouldDrop,
    /// No ring: nothing can be served now.
    Empty,
}

/// The arguments: prefix, lease, and the BLOCK timeout in ms (0 = forever).
fn parse<'a>(ctx: &Ctx, argv: Argv<'a>) -> Result<(Arg<'a>, i64, Option<i64>), Error> {
    if argv.len() != 3 && argv.len() != 5 {
        return Err(Error::WrongArity);
    }
    let prefix = argv.get(1);
    args::prefix(prefix.bytes(), ctx.is_cluster())?;
    let lease = args::lease(argv.get(2).bytes())?;
    let block = if argv.len() == 5 {
        if !args::is_keyword(argv.get(3).bytes(), "BLOCK") {
            return Err(Error::Syntax);
        }
        Some(args::int_in(
            argv.get(4).bytes(),
            "BLOCK timeout",
            0,
            i64::MAX,
            TIMEOUT_RANGE,
        )?)
    } else {
        None
    };
    Ok((prefix, lease, block))
}

fn command(ctx: &Ctx, argv: Argv, weighted: bool) -> Result<(), Error> {
    let (prefix, lease, block) = parse(ctx, argv)?;
    // Inside MULTI or a script a call never blocks: it is the plain call.
    let block = block.filter(|_| !ctx.in_transaction_or_script());
    let Some(timeout) = block else {
        if turn(ctx, prefix, lease, weighted, true)? != Outcome::Served {
            stats::CLAIMS_EMPTY.add(1);
            ctx.reply_empty_array();
        }
        return Ok(());
    };
    if serve_or_wait(ctx, prefix, lease, weighted)? {
        return Ok(());
    }
    // Nothing serviceable: wait on the ring, woken when a lane joins it.
    let ring_name = Queue::new(ctx, prefix.bytes()).key(keys::RING);
    stats::BLOCKED.add(1);
    ctx.block_on_key(&ring_name, timeout, super::blocked_claim_callbacks(weighted));
    Ok(())
}

/// Turns until one serves (true) or the ring is empty (false): a lane that
/// cannot be served leaves the ring, so a client waits only when no lane is
/// serviceable. A dropped lane is a write, so before the first drop every
/// lane up to the first serviceable one is checked: an error still means
/// nothing changed.
fn serve_or_wait(ctx: &Ctx, prefix: Arg, lease: i64, weighted: bool) -> Result<bool, Error> {
    match turn(ctx, prefix, lease, weighted, false)? {
        Outcome::Served => return Ok(true),
        Outcome::Empty => return Ok(false),
        Outcome::Dropped | Outcome::WouldDrop => check_run(ctx, prefix, weighted)?,
    }
    loop {
        match turn(ctx, prefix, lease, weighted, true)? {
            Outcome::Served => return Ok(true),
            Outcome::Dropped | Outcome::WouldDrop => continue,
            Outcome::Empty => return Ok(false),
        }
    }
}

/// Reads, without writing, what the turns of [`serve_or_wait`] will read:
/// the ring's lanes from its head up to the first one that can serve, and
/// the keys a serving turn writes. Keys are opened for writing only because
/// the key API opens a missing key for reading as nothing; none is written.
fn check_run(ctx: &Ctx, prefix: Arg, weighted: bool) -> Result<(), Error> {
    let q = Queue::new(ctx, prefix.bytes());
    state::expect_kind(ctx, &q.key(keys::LEASES), Kind::Zset)?;
    state::expect_kind(ctx, &q.key(keys::JLEASE), Kind::Hash)?;
    let ring_name = q.key(keys::RING);
    let Some(ring) = ctx.open_read(&ring_name) else {
        return Ok(());
    };
    ring.kind().expect(Kind::List)?;
    let active_name = q.key(keys::ACTIVE);
    for i in 0..ring.len() {
        let Some(lane) = ring.list_get(i as i64) else {
            break;
        };
        let pending_name = q.pending(lane.bytes());
        let pending = ctx.open_write(&pending_name);
        let active = ctx.open_write(&active_name);
        if let Decision::Serve { .. } =
            decide(&q, lane.as_arg(), &pending, (&active, &active_name), weighted)?
        {
            break;
        }
    }
    Ok(())
}

/// A blocked claim's ring became ready: claim once; `Ok(false)` keeps the
/// client waiting (another client took the lane).
pub fn on_ready(ctx: &Ctx, argv: Argv, weighted: bool) -> Result<bool, Error> {
    let (prefix, lease, _) = parse(ctx, argv)?;
    serve_or_wait(ctx, prefix, lease, weighted)
}

/// What a turn does with the lane at the ring's head.
enum Decision {
    Drop,
    /// Serve `k` heads; the lane's active count becomes `active`; whether
    /// the lane then leaves the ring.
    Serve {
        k: i64,
        active: i64,
        leaves: bool,
    },
}

/// Decides a turn from reads only, validating each: the lane's pending zset
/// and active count come open from the caller (for reading or writing).
fn decide(
    q: &Queue,
    lane: Arg,
    pending: &impl KeyRead,
    (active, active_name): (&impl KeyRead, &RStr),
    weighted: bool,
) -> Result<Decision, Error> {
    let ctx = q.ctx;
    pending.kind().expect(Kind::Zset)?;
    let depth = pending.len() as u64;
    if depth == 0 {
        return Ok(Decision::Drop);
    }
    let weight = if weighted {
        let stored = state::stored_int(ctx, &q.key(keys::WEIGHT), lane, "weight of lane")?;
        // emq.max-claim caps a turn: the one place native may serve fewer than Lua.
        schedule::effective_weight(stored).min(stats::max_claim())
    } else {
        1
    };
    let limit = state::stored_int(ctx, &q.key(keys::LIMIT), lane, "limit of lane")?;
    let active_count = state::int_field(active, active_name, lane, "active count of lane")?.unwrap_or(0);
    let before = Lane {
        depth,
        active: active_count,
        limit,
        paused: false,
    };
    match schedule::claim_turn(weight, &before) {
        Turn::Drop => Ok(Decision::Drop),
        Turn::Serve { k, leaves_ring } => {
            let active = add_active(active_count, k, lane, active_name)?;
            Ok(Decision::Serve {
                k,
                active,
                leaves: leaves_ring,
            })
        }
    }
}

/// The lane's active count after `k` more leases.
fn add_active(active: i64, k: i64, lane: Arg, key: &RStr) -> Result<i64, Error> {
    active.checked_add(k).ok_or_else(|| Error::Overflow {
        what: "active count of lane",
        field: lane.bytes().to_vec(),
        key: key.bytes().to_vec(),
    })
}

/// One turn; with `may_drop` false, an unserviceable head lane stays and
/// the turn is `WouldDrop`. Replies only when it serves.
fn turn(ctx: &Ctx, prefix: Arg, lease: i64, weighted: bool, may_drop: bool) -> Result<Outcome, Error> {
    // ---- read phase: each key opened once; the ones that may be written
    // are opened for writing (signalled modified only if written) ----
    let q = Queue::new(ctx, prefix.bytes());
    let ring_name = q.key(keys::RING);
    let ring = ctx.open_write(&ring_name);
    ring.kind().expect(Kind::List)?;
    let Some(lane_name) = ring.list_get(0) else {
        return Ok(Outcome::Empty);
    };
    let lane = lane_name.as_arg();
    let names = TurnNames::new(&q, lane);
    let keys = names.open(ctx, ring);
    let (k, new_active, leaves) =
        match decide(&q, lane, &keys.pending, (&keys.active, &names.active), weighted)? {
            Decision::Serve { k, active, leaves } => (k, active, leaves),
            Decision::Drop if !may_drop => return Ok(Outcome::WouldDrop),
            Decision::Drop => return Ok(drop_head(ctx, &keys.ring)),
        };
    keys.check()?;
    let deadline = ctx.now_ms() + lease;

    let served = serve(ctx, &keys, lane, k, new_active, deadline, leaves);
    if stats::replicate_command() {
        ctx.replicate_ssiii(c"EMQ.TURN", prefix, lane, [deadline, k, i64::from(leaves)]);
    } else {
        replicate_effects(ctx, &keys, lane, &served, deadline);
    }
    reply(ctx, lane, deadline, &served);
    Ok(Outcome::Served)
}

/// `EMQ.TURN P lane deadline k leaves`: a served turn exactly as a primary
/// made it and replicated it (`emq.replicate command`): rotate the ring, lease
/// the lane's `k` heads until `deadline`, and the lane leaves the ring when
/// `leaves` is 1. Internal: accepted only from the replication stream or an
/// AOF load, where the keyspace is the primary's at that point.
pub fn replay_turn(ctx: &Ctx, argv: Argv) -> Result<(), Error> {
    if argv.len() != 6 {
        return Err(Error::WrongArity);
    }
    if !ctx.from_primary_or_loading() {
        return Err(Error::InternalCommand("EMQ.TURN"));
    }
    let prefix = args::prefix(argv.get(1).bytes(), ctx.is_cluster())?;
    let lane = argv.get(2);
    args::lane(lane.bytes())?;
    let deadline = args::int_in(argv.get(3).bytes(), "deadline", i64::MIN, i64::MAX, INTEGER)?;
    let k = args::int_in(argv.get(4).bytes(), "k", 1, i64::MAX, COUNT_RANGE)?;
    let leaves = args::int_in(argv.get(5).bytes(), "leaves", 0, 1, BOOLEAN)? == 1;

    let q = Queue::new(ctx, prefix);
    let ring_name = q.key(keys::RING);
    let names = TurnNames::new(&q, lane);
    let keys = names.open(ctx, ctx.open_write(&ring_name));
    keys.ring.kind().expect(Kind::List)?;
    keys.pending.kind().expect(Kind::Zset)?;
    let head = keys.ring.list_get(0);
    if head.as_ref().map(|h| h.bytes()) != Some(lane.bytes()) || (keys.pending.len() as i64) < k {
        return Err(Error::TurnMismatch {
            lane: lane.bytes().to_vec(),
            key: ring_name.bytes().to_vec(),
        });
    }
    let active_count =
        state::int_field(&keys.active, &names.active, lane, "active count of lane")?.unwrap_or(0);
    keys.check()?;
    let new_active = add_active(active_count, k, lane, &names.active)?;

    let served = serve(ctx, &keys, lane, k, new_active, deadline, leaves);
    // This server's own AOF (and nothing else: a replica's replicas get the
    // primary's stream as it is).
    ctx.replicate_verbatim();
    reply(ctx, lane, deadline, &served);
    Ok(())
}

/// The names of the keys a served turn writes besides the ring.
struct TurnNames {
    pending: RStr,
    active: RStr,
    leases: RStr,
    jlease: RStr,
}

impl TurnNames {
    fn new(q: &Queue, lane: Arg) -> TurnNames {
        TurnNames {
            pending: q.pending(lane.bytes()),
            active: q.key(keys::ACTIVE),
            leases: q.key(keys::LEASES),
            jlease: q.key(keys::JLEASE),
        }
    }

    /// With the ring already open, each key opened once, for writing
    /// (signalled modified only if written).
    fn open<'a>(&'a self, ctx: &Ctx, ring: WriteKey<'a>) -> TurnKeys<'a> {
        TurnKeys {
            ring,
            pending: ctx.open_write(&self.pending),
            active: ctx.open_write(&self.active),
            leases: ctx.open_write(&self.leases),
            jlease: ctx.open_write(&self.jlease),
        }
    }
}

/// The keys a served turn writes, each open once.
struct TurnKeys<'a> {
    ring: WriteKey<'a>,
    pending: WriteKey<'a>,
    active: WriteKey<'a>,
    leases: WriteKey<'a>,
    jlease: WriteKey<'a>,
}

impl TurnKeys<'_> {
    /// The types of the keys only a serving turn writes.
    fn check(&self) -> Result<(), Error> {
        self.leases.kind().expect(Kind::Zset)?;
        self.jlease.kind().expect(Kind::Hash)
    }
}

/// What a served turn leased, for its reply and its replication.
struct Served {
    /// Whether the ring rotated (it has more than one lane).
    rotated: bool,
    /// Whether the lane left the ring (from its tail).
    leaves: bool,
    jobs: Vec<(RStr, f64)>,
    records: Vec<RStr>,
    new_active: RStr,
}

/// The writes of a served turn; nothing here can fail.
fn serve(
    ctx: &Ctx,
    keys: &TurnKeys,
    lane: Arg,
    k: i64,
    new_active: i64,
    deadline: i64,
    leaves: bool,
) -> Served {
    let ring = &keys.ring;
    let rotated = ring.len() > 1;
    if rotated {
        if let Some(head) = ring.list_pop_head() {
            ring.list_push_tail(head.as_arg());
        }
    } else {
        // A one-element ring is left as it is (popping it would delete the
        // key), but it was rotated, as LMOVE would: WATCH sees it.
        ring.touch();
    }
    // What LMOVE with source = destination fires.
    ctx.notify(ring, Class::List, c"lpop");
    ctx.notify(ring, Class::List, c"rpush");

    let jobs = keys.pending.zset_head(k as usize);
    for (job, _) in &jobs {
        keys.pending.zset_rem(job.as_arg());
    }
    ctx.notify(&keys.pending, Class::Zset, c"zpopmin");

    let mut records: Vec<RStr> = Vec::with_capacity(jobs.len());
    for (job, mint) in &jobs {
        keys.leases.zset_add(deadline as f64, job.as_arg(), false);
        let record = lease_record(ctx, *mint, lane.bytes());
        keys.jlease.hash_set(job.as_arg(), record.as_arg());
        records.push(record);
    }
    ctx.notify(&keys.leases, Class::Zset, c"zadd");
    ctx.notify(&keys.jlease, Class::Hash, c"hset");

    let new_active = ctx.string_from_i64(new_active);
    keys.active.hash_set(lane, new_active.as_arg());
    ctx.notify(&keys.active, Class::Hash, c"hincrby");
    if leaves {
        // The lane was just rotated to the tail: removing it is O(1).
        ring.list_pop_tail();
        ctx.notify(ring, Class::List, c"lrem");
    }
    stats::CLAIMS.add(1);
    stats::JOBS_CLAIMED.add(jobs.len() as u64);
    Served {
        rotated,
        leaves,
        jobs,
        records,
        new_active,
    }
}

/// Replication as core commands, with the deadline as a value: what a
/// replica or an AOF reader without the module can apply.
fn replicate_effects(ctx: &Ctx, keys: &TurnKeys, lane: Arg, served: &Served, deadline: i64) {
    let ring = keys.ring.name();
    if served.rotated {
        let (left, right) = (store::word(Word::Left), store::word(Word::Right));
        ctx.replicate(c"LMOVE", &[ring, ring, left, right]);
    }
    let deadline_str = ctx.string_from_i64(deadline);
    let mut zrem = vec![keys.pending.name()];
    let mut zadd = vec![keys.leases.name()];
    let mut hset = vec![keys.jlease.name()];
    for ((job, _), record) in served.jobs.iter().zip(&served.records) {
        zrem.push(job.as_arg());
        zadd.push(deadline_str.as_arg());
        zadd.push(job.as_arg());
        hset.push(job.as_arg());
        hset.push(record.as_arg());
    }
    ctx.replicate(c"ZREM", &zrem);
    ctx.replicate(c"ZADD", &zadd);
    ctx.replicate(c"HSET", &hset);
    ctx.replicate(c"HSET", &[keys.active.name(), lane, served.new_active.as_arg()]);
    if served.leaves {
        ctx.replicate(c"RPOP", &[ring]);
    }
}

/// `[lane, deadline, job…]`.
fn reply(ctx: &Ctx, lane: Arg, deadline: i64, served: &Served) {
    ctx.reply_array(2 + served.jobs.len());
    ctx.reply_str(lane);
    ctx.reply_i64(deadline);
    for (job, _) in &served.jobs {
        ctx.reply_str(job.as_arg());
    }
}

/// The head lane cannot be served: it leaves the ring, nothing is served.
/// (The seed rotates it to the tail and `LREM`s it: the same as a head pop.)
fn drop_head(ctx: &Ctx, ring: &WriteKey) -> Outcome {
    ring.list_pop_head();
    ctx.notify(ring, Class::List, c"lrem");
    ctx.replicate(c"LPOP", &[ring.name()]);
    Outcome::Dropped
}

/// `P jlease`'s value for a leased job: `"<mint> <lane>"`, the mint formatted
/// as the server formats a zset score.
fn lease_record(ctx: &Ctx, mint: f64, lane: &[u8]) -> RStr {
    match store::integer_score(mint) {
        Some(int) => {
            let mut digits = [0u8; 24];
            let mut rest = &mut digits[..];
            let _ = write!(rest, "{int}");
            let n = 24 - rest.len();
            ctx.string_of(&[&digits[..n], b" ", lane])
        }
        None => ctx.string_of(&[ctx.format_score(mint).bytes(), b" ", lane]),
    }
}
